#include "engine/document_lock_entry.h"

#include <fmt/format.h>

#include <cstdint>

#include <nlohmann/json.hpp>

#include "engine/json_text.h"
#include "util/printable.h"
#include "util/utf8.h"

namespace mvkv::engine {

std::string lockCollectionName(std::string_view ns) {
    return std::string(ns) + ".lock";
}

std::string ownerIndexName(std::string_view ns) {
    return std::string(ns) + ".lock.owners";
}

bool isLockCollectionName(std::string_view coll) {
    return coll.ends_with(".lock") || coll.ends_with(".lock.owners");
}

std::string ownerKeyPrefix(std::string_view owner) {
    std::string k(owner);
    k += '\0';
    return k;
}

std::string ownerKey(std::string_view owner, std::string_view key) {
    std::string k = ownerKeyPrefix(owner);
    k += key;
    return k;
}

Status checkOwner(std::string_view owner) {
    if (owner.empty())
        return Status::InvalidArgument(
            "the lock owner is empty; give a non-empty owner, or none to have one generated");
    if (owner.size() > kMaxOwnerBytes)
        return Status::InvalidArgument(fmt::format("the lock owner is {} bytes; the limit is {}",
                                                   owner.size(), kMaxOwnerBytes));
    if (owner.find('\0') != std::string_view::npos)
        return Status::InvalidArgument(
            "the lock owner contains a NUL byte, which separates owner and key in the owner "
            "index; use another owner");
    if (!isValidUtf8(owner))
        return Status::InvalidArgument(
            fmt::format("the lock owner '{}' is not UTF-8 text", printable(owner)));
    return Status::OK();
}

std::string encodeLockEntry(const LockEntry& e) {
    std::string out;
    JsonText j(&out);
    j.begin();
    j.field("owner", std::string_view(e.owner));
    j.field("token", e.token);
    j.field("acquiredAt", e.acquiredAtMs);
    j.field("expiresAt", e.expiresAtMs);
    j.end();
    return out;
}

StatusWith<LockEntry> decodeLockEntry(std::string_view value, std::string_view where) {
    auto bad = [&](std::string_view why) {
        return Status::Corruption(fmt::format("{} is not a document lock entry ({}): {}", where,
                                              why, printable(value, 200)));
    };
    auto j = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object())
        return bad("not a JSON object");
    LockEntry e;
    auto owner = j.find("owner");
    if (owner == j.end() || !owner->is_string())
        return bad("no owner string");
    e.owner = owner->get_ref<const std::string&>();
    auto token = j.find("token");
    if (token == j.end() || !token->is_number_unsigned())
        return bad("no token");
    e.token = token->get<uint64_t>();
    auto integer = [&](const char* name, int64_t* out) {
        auto it = j.find(name);
        if (it == j.end() || !it->is_number_integer())
            return false;
        *out = it->get<int64_t>();
        return true;
    };
    if (!integer("acquiredAt", &e.acquiredAtMs) || !integer("expiresAt", &e.expiresAtMs))
        return bad("no acquiredAt/expiresAt");
    return e;
}

CollectionOptions lockCollectionOptions() {
    // TTL collections (docs/ttl.md) whose entries each carry their lock's
    // expiry, so that the TTL monitor removes locks their holders forgot.
    CollectionOptions o;
    o.expireAfterSeconds = 0;  // every entry carries its own expiry
    return o;
}

WriteOptions lockEntryWriteOptions(const LockEntry& e) {
    WriteOptions o;
    o.expireAtMs = e.expiresAtMs;  // the TTL monitor removes a forgotten lock then
    return o;
}

WriteOptions fencingMarkWriteOptions() {
    WriteOptions o;
    o.expireAtMs = INT64_MAX;  // an expiry that never comes
    return o;
}

}  // namespace mvkv::engine
