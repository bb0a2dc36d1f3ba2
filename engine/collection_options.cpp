#include "engine/collection_options.h"

#include <fmt/format.h>

#include <charconv>

namespace mvkv::engine {

Status validateCollectionOptions(const CollectionOptions& o) {
    if (!o.capped) {
        if (o.cappedSizeBytes != 0 || o.cappedMaxDocs != 0)
            return Status::InvalidArgument(
                "size and max apply only to a capped collection: set capped as well");
        return Status::OK();
    }
    if (o.cappedSizeBytes <= 0 || o.cappedSizeBytes > kMaxCappedSizeBytes)
        return Status::InvalidArgument(fmt::format(
            "capped size {} is out of range: give the cap on key+value bytes, 1..{} (1 PiB)",
            o.cappedSizeBytes, kMaxCappedSizeBytes));
    if (o.cappedMaxDocs < 0 || o.cappedMaxDocs > kMaxCappedDocs)
        return Status::InvalidArgument(
            fmt::format("capped max {} is out of range: use 0 (no count cap) or 1..{}",
                        o.cappedMaxDocs, kMaxCappedDocs));
    return Status::OK();
}

std::string createCommand(const CollectionOptions& o) {
    if (!o.capped)
        return "create";
    return fmt::format("create capped size={} max={}", o.cappedSizeBytes, o.cappedMaxDocs);
}

StatusWith<bool> parseCreateCommand(std::string_view command, CollectionOptions* options) {
    *options = CollectionOptions{};
    if (command == "create")
        return true;
    constexpr std::string_view kCapped = "create capped ";
    if (!command.starts_with("create "))
        return false;
    auto bad = [&] {
        return Status::Corruption(fmt::format("malformed create command '{}'", command));
    };
    if (!command.starts_with(kCapped))
        return bad();
    options->capped = true;
    std::string_view rest = command.substr(kCapped.size());
    bool sawSize = false;
    while (!rest.empty()) {
        size_t space = rest.find(' ');
        std::string_view word = rest.substr(0, space);
        rest = space == rest.npos ? std::string_view() : rest.substr(space + 1);
        size_t eq = word.find('=');
        if (eq == word.npos)
            return bad();
        std::string_view name = word.substr(0, eq), num = word.substr(eq + 1);
        int64_t v = 0;
        auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
        if (ec != std::errc() || end != num.data() + num.size())
            return bad();
        if (name == "size") {
            options->cappedSizeBytes = v;
            sawSize = true;
        } else if (name == "max") {
            options->cappedMaxDocs = v;
        } else {
            return bad();
        }
    }
    if (!sawSize || !validateCollectionOptions(*options).ok())
        return bad();
    return true;
}

}  // namespace mvkv::engine
