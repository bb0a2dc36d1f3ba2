// Snapshot: which transactions' writes a reader may see, as WiredTiger
// defines it. Taken when a transaction begins:
//   snapMax     the next id to be handed out; ids >= snapMax began later
//   concurrent  the ids that were running (sorted); their writes are hidden
//   snapMin     the smallest running id (or snapMax); every id below it had
//               finished, so the check is a single compare for most updates.
//   readPoint   on an engine whose commits are ordered (it has an oplog): the
//               no-holes point then, every transaction holding a commit
//               timestamp at or below it had finished (prepared ones aside:
//               readers conflict on their writes). An untimestamped reader
//               sees no commit above it, so its snapshot is a prefix of the
//               commits in timestamp order (docs/mvcc.md, "Untimestamped
//               snapshots"). kMaxTimestamp elsewhere: no bound.
//
// Thread safety: a plain value owned by one transaction.
#pragma once

#include <algorithm>
#include <vector>

#include "mvcc/timestamp.h"

namespace mvkv::mvcc {

struct Snapshot {
    TxnId snapMin = kNoTxnId;
    TxnId snapMax = kNoTxnId;
    std::vector<TxnId> concurrent;  // sorted ascending
    Timestamp readPoint = kMaxTimestamp;

    /// True when transaction `id` had finished before this snapshot was taken.
    bool finishedBefore(TxnId id) const {
        if (id < snapMin)
            return true;
        if (id >= snapMax)
            return false;
        return !std::binary_search(concurrent.begin(), concurrent.end(), id);
    }
};

}  // namespace mvkv::mvcc
