#include "engine/collection_options.h"

#include <fmt/format.h>

#include <charconv>

namespace mvkv::engine {

namespace {

// "name=N" into its parts; false when it is not that.
bool parseNumberOption(std::string_view word, std::string_view* name, int64_t* value) {
    size_t eq = word.find('=');
    if (eq == word.npos)
        return false;
    *name = word.substr(0, eq);
    std::string_view num = word.substr(eq + 1);
    auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), *value);
    return ec == std::errc() && end == num.data() + num.size() && !num.empty();
}

// The next blank-separated word of *rest, taken off it.
std::string_view nextWord(std::string_view* rest) {
    size_t space = rest->find(' ');
    std::string_view word = rest->substr(0, space);
    *rest = space == rest->npos ? std::string_view() : rest->substr(space + 1);
    return word;
}

}  // namespace

Status validateExpireAfterSeconds(int64_t seconds) {
    if (seconds < 0 || seconds > kMaxExpireAfterSeconds)
        return Status::InvalidArgument(fmt::format(
            "expireAfterSeconds {} is out of range: use 0..{} (seconds, as MongoDB's TTL indexes)",
            seconds, kMaxExpireAfterSeconds));
    return Status::OK();
}

Status validateCollectionOptions(const CollectionOptions& o) {
    if (o.expireAfterSeconds) {
        if (o.capped)
            return Status::InvalidArgument(
                "a capped collection cannot be a TTL collection: give either capped or "
                "expireAfterSeconds");
        if (Status s = validateExpireAfterSeconds(*o.expireAfterSeconds); !s.ok())
            return s;
    }
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
    if (o.capped)
        return fmt::format("create capped size={} max={}", o.cappedSizeBytes, o.cappedMaxDocs);
    if (o.expireAfterSeconds)
        return fmt::format("create expire_after={}", *o.expireAfterSeconds);
    return "create";
}

StatusWith<bool> parseCreateCommand(std::string_view command, CollectionOptions* options) {
    *options = CollectionOptions{};
    if (command == "create")
        return true;
    if (!command.starts_with("create "))
        return false;
    auto bad = [&] {
        return Status::Corruption(fmt::format("malformed create command '{}'", command));
    };
    std::string_view rest = command.substr(std::string_view("create ").size());
    if (rest.starts_with("capped ")) {
        options->capped = true;
        nextWord(&rest);
    }
    bool sawSize = false;
    while (!rest.empty()) {
        std::string_view name;
        int64_t v = 0;
        if (!parseNumberOption(nextWord(&rest), &name, &v))
            return bad();
        if (name == "size" && options->capped) {
            options->cappedSizeBytes = v;
            sawSize = true;
        } else if (name == "max" && options->capped) {
            options->cappedMaxDocs = v;
        } else if (name == "expire_after" && !options->capped) {
            options->expireAfterSeconds = v;
        } else {
            return bad();
        }
    }
    if (options->capped != sawSize || (!options->capped && !options->expireAfterSeconds))
        return bad();
    if (!validateCollectionOptions(*options).ok())
        return bad();
    return true;
}

std::string collModCommand(int64_t expireAfterSeconds) {
    return fmt::format("collMod expire_after={}", expireAfterSeconds);
}

StatusWith<bool> parseCollModCommand(std::string_view command, int64_t* expireAfterSeconds) {
    constexpr std::string_view kPrefix = "collMod ";
    if (command != "collMod" && !command.starts_with(kPrefix))
        return false;
    std::string_view name;
    if (command.size() <= kPrefix.size() ||
        !parseNumberOption(command.substr(kPrefix.size()), &name, expireAfterSeconds) ||
        name != "expire_after" || !validateExpireAfterSeconds(*expireAfterSeconds).ok())
        return Status::Corruption(fmt::format("malformed collMod command '{}'", command));
    return true;
}

}  // namespace mvkv::engine
