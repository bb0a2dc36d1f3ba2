// The stored form of document locks (docs/document-locks.md, "The
// collections"): the names of a collection's two lock collections, the
// value of a lock entry, the owner index's keys, the owner rules, and the
// seams through which lock collections are created and their entries
// written (lockCollectionOptions, lockEntryWriteOptions,
// fencingMarkWriteOptions): every creation and every write of a lock
// collection goes through them.
//
//   <ns>.lock          key: the locked document's key
//                      value: {"owner":"...","token":N,"acquiredAt":ms,"expiresAt":ms}
//   <ns>.lock.owners   key: owner + '\0' + document key; value: the same document
//                      key "\0fencing": the fencing tokens' high-water mark (decimal)
//
// No owner key can be "\0fencing": owners are non-empty and contain no NUL.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/collection_options.h"
#include "engine/write_options.h"
#include "util/status.h"

namespace mvkv::engine {

/// One lock: who holds it, its fencing token and its times (milliseconds
/// since the Unix epoch on Engine::wallClockMs()).
struct LockEntry {
    std::string owner;
    uint64_t token = 0;
    int64_t acquiredAtMs = 0;
    int64_t expiresAtMs = 0;

    bool operator==(const LockEntry&) const = default;
};

/// The longest owner accepted, in bytes.
inline constexpr size_t kMaxOwnerBytes = 256;
/// The owner index's key of the fencing tokens' high-water mark.
inline constexpr std::string_view kFencingMarkKey{"\0fencing", 8};

/// "<ns>.lock" and "<ns>.lock.owners".
std::string lockCollectionName(std::string_view ns);
std::string ownerIndexName(std::string_view ns);
/// True for a collection name (without its database) that names a lock
/// collection ("x.lock") or an owner index ("x.lock.owners"): documents of
/// those are not locked themselves.
bool isLockCollectionName(std::string_view coll);
/// A lock collection whose committed changes wake waiting acquisitions.
inline bool wakesLockWaiters(std::string_view coll) {
    return coll.ends_with(".lock");
}
/// The owner index key of `owner`'s lock on `key`, and the prefix of all of
/// `owner`'s keys.
std::string ownerKey(std::string_view owner, std::string_view key);
std::string ownerKeyPrefix(std::string_view owner);

/// InvalidArgument unless `owner` is 1..kMaxOwnerBytes bytes of UTF-8
/// without NUL (it is written as a JSON string and ends at the index's NUL).
Status checkOwner(std::string_view owner);

std::string encodeLockEntry(const LockEntry& e);
/// Corruption naming `where` when `value` is not a lock entry.
StatusWith<LockEntry> decodeLockEntry(std::string_view value, std::string_view where);

// ---- seams: how lock collections are created and written ----

/// The options both lock collections of a namespace are created with.
CollectionOptions lockCollectionOptions();
/// The options of a write of a lock entry (in `<ns>.lock` and in the owner
/// index): e.g. an explicit expiry at e.expiresAtMs.
WriteOptions lockEntryWriteOptions(const LockEntry& e);
/// The options of a write of the fencing high-water mark: it must outlive
/// every lock (never expire).
WriteOptions fencingMarkWriteOptions();

}  // namespace mvkv::engine
