// CollectionOptions: what a collection is created with (ordinary, capped or
// TTL), their validation, and their text form in the oplog's create and
// collMod commands.
//
// Capped collections (docs/architecture.md, "Capped collections"): the cap
// is on the key+value bytes of the live entries (cappedSizeBytes) and,
// optionally, on their number (cappedMaxDocs, 0 = none). The size is taken
// as given: unlike MongoDB, which raises a size up to 4096 or to a multiple
// of 256 because its cap covers storage records, mvkv counts exactly the
// bytes the caller wrote, so there is nothing to round to.
//
// TTL collections (docs/ttl.md): expireAfterSeconds set. Every entry records
// the wall-clock time of the write that made it (or an explicit expiry given
// with the write) and the TTL monitor deletes it once that time plus
// expireAfterSeconds (or the explicit expiry) has passed.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/status.h"

namespace mvkv::engine {

struct CollectionOptions {
    bool capped = false;
    int64_t cappedSizeBytes = 0;  // capped only: 1..kMaxCappedSizeBytes
    int64_t cappedMaxDocs = 0;    // capped only: 0 (no count cap) or 1..kMaxCappedDocs
    /// Set: a TTL collection whose entries expire this many seconds after
    /// their write (0..kMaxExpireAfterSeconds; 0 with explicit expiries per
    /// write, as a lock collection does). Not with capped.
    std::optional<int64_t> expireAfterSeconds;

    bool operator==(const CollectionOptions&) const = default;
};

/// MongoDB's bounds: a capped size under 1 PiB, a count under 2^31.
inline constexpr int64_t kMaxCappedSizeBytes = int64_t{1} << 50;
inline constexpr int64_t kMaxCappedDocs = (int64_t{1} << 31) - 1;
/// MongoDB's bound on expireAfterSeconds (a 32-bit int; about 68 years).
inline constexpr int64_t kMaxExpireAfterSeconds = (int64_t{1} << 31) - 1;

/// InvalidArgument naming the bad field: a size of 0, negative or over
/// kMaxCappedSizeBytes, a negative or too large max, a size/max given to
/// a collection that is not capped, an expireAfterSeconds out of range, or
/// a capped collection with expireAfterSeconds.
Status validateCollectionOptions(const CollectionOptions& options);
/// InvalidArgument unless 0 <= seconds <= kMaxExpireAfterSeconds.
Status validateExpireAfterSeconds(int64_t seconds);

/// The oplog command of a create: "create" for an ordinary collection (what
/// every older log holds), "create capped size=N max=M" for a capped one,
/// "create expire_after=S" for a TTL one.
std::string createCommand(const CollectionOptions& options);
/// True when `command` is a create command; sets *options from it (the
/// defaults for a bare "create"). Corruption when it starts with "create "
/// but its options do not parse or validate.
StatusWith<bool> parseCreateCommand(std::string_view command, CollectionOptions* options);

/// The oplog command of a run-time change of a TTL collection's
/// expireAfterSeconds (MongoDB's collMod): "collMod expire_after=S".
std::string collModCommand(int64_t expireAfterSeconds);
/// True when `command` is a collMod command; sets *expireAfterSeconds.
/// Corruption when it starts with "collMod" but does not parse or validate.
StatusWith<bool> parseCollModCommand(std::string_view command, int64_t* expireAfterSeconds);

}  // namespace mvkv::engine
