// mvkv/stats.h: the figures a harness checks.
// Part of the public API (include/mvkv/); no stable ABI is promised yet.
//
// Engine::stats() fills this in one call; everything else the engine
// counts is in Engine::serverStatus() (MongoDB's serverStatus as JSON;
// docs/operations.md names every section).
#pragma once

#include <cstdint>

#include "mvkv/timestamp.h"

namespace mvkv {

struct EngineStats {
    Timestamps timestamps;
    // Transactions since open.
    uint64_t transactionsBegun = 0;
    uint64_t transactionsCommitted = 0;
    uint64_t transactionsAborted = 0;
    uint64_t transactionsActive = 0;
    uint64_t writeConflicts = 0;  // returned to the caller or retried
    uint64_t writeConflictRetries = 0;
    // Commits that waited, before they were acknowledged, for an
    // earlier-timestamped commit still in flight, and reads at a timestamp
    // above the read point that waited for one (docs/mvcc.md).
    uint64_t holeWaits = 0;
    // The history store (superseded versions old readers still need).
    uint64_t historyEntries = 0;
    uint64_t historySweepPasses = 0;
    uint64_t historyVersionsMoved = 0;  // superseded versions moved to the history store
    uint64_t historyVersionsFreed = 0;  // versions no reader needed, freed
    Timestamp historyPinned = kNoTimestamp;  // the newest sweep's horizon (Timestamps::pinned then)
    // Checkpoints since open (0 in memory).
    uint64_t checkpoints = 0;
    uint64_t checkpointFailures = 0;
    Timestamp lastCheckpointTs = kNoTimestamp;
    uint64_t lastCheckpointNumber = 0;
    uint64_t lastCheckpointEntries = 0;  // keys
    uint64_t lastCheckpointBytes = 0;
    // Prepared transactions not yet committed or aborted.
    uint64_t preparedTransactions = 0;
    // Version chains (walks every key: O(keys), not for hot paths).
    uint64_t maxChainLength = 0;
    double meanChainLength = 0;  // versions per key, over every collection
};

}  // namespace mvkv
