// CollectionOptions: what a collection is created with (ordinary or capped),
// their validation, and their text form in the oplog's create command.
//
// Capped collections (docs/architecture.md, "Capped collections"): the cap
// is on the key+value bytes of the live entries (cappedSizeBytes) and,
// optionally, on their number (cappedMaxDocs, 0 = none). The size is taken
// as given: unlike MongoDB, which raises a size up to 4096 or to a multiple
// of 256 because its cap covers storage records, mvkv counts exactly the
// bytes the caller wrote, so there is nothing to round to.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "util/status.h"

namespace mvkv::engine {

struct CollectionOptions {
    bool capped = false;
    int64_t cappedSizeBytes = 0;  // capped only: 1..kMaxCappedSizeBytes
    int64_t cappedMaxDocs = 0;    // capped only: 0 (no count cap) or 1..kMaxCappedDocs

    bool operator==(const CollectionOptions&) const = default;
};

/// MongoDB's bounds: a capped size under 1 PiB, a count under 2^31.
inline constexpr int64_t kMaxCappedSizeBytes = int64_t{1} << 50;
inline constexpr int64_t kMaxCappedDocs = (int64_t{1} << 31) - 1;

/// InvalidArgument naming the bad field: a size of 0, negative or over
/// kMaxCappedSizeBytes, a negative or too large max, or a size/max given to
/// a collection that is not capped.
Status validateCollectionOptions(const CollectionOptions& options);

/// The oplog command of a create: "create" for an ordinary collection (what
/// every older log holds), "create capped size=N max=M" for a capped one.
std::string createCommand(const CollectionOptions& options);
/// True when `command` is a create command; sets *options from it (the
/// defaults for a bare "create"). Corruption when it starts with "create "
/// but its options do not parse or validate.
StatusWith<bool> parseCreateCommand(std::string_view command, CollectionOptions* options);

}  // namespace mvkv::engine
