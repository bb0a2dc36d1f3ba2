// EngineStats: one call returns every MVCC and storage figure of an engine.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/checkpointer.h"
#include "mvcc/mvcc_stats.h"
#include "oplog/oplog.h"
#include "mvcc/txn_manager.h"

namespace mvkv::engine {

struct CollectionStats {
    std::string ns;
    int64_t keys = 0;      // live keys at the newest commit
    int64_t bytes = 0;     // their key + value bytes
    bool capped = false;   // a capped collection, with its caps:
    int64_t cappedSizeBytes = 0;
    int64_t cappedMaxDocs = 0;  // 0: no count cap
    std::optional<int64_t> expireAfterSeconds;  // set: a TTL collection (docs/ttl.md)
    uint64_t chains = 0;   // keys in the tree (including deleted, not yet swept)
    uint64_t updates = 0;  // versions held in update chains
    uint64_t maxChainLength = 0;
    uint64_t chainBytes = 0;  // memory held by update chains
    uint64_t treeHeight = 0;
    uint64_t treeBytes = 0;
};

/// History store and sweep figures (docs/history.md).
struct HistoryStats {
    uint64_t entries = 0;  // versions held in the history store
    uint64_t bytes = 0;
    uint64_t inserts = 0;
    uint64_t removals = 0;
    // The horizon of the newest sweep: versions replaced by one visible to
    // all (txn id < oldestId, commit ts <= pinned) are obsolete.
    mvcc::Timestamp pinned = mvcc::kNoTimestamp;
    mvcc::TxnId oldestId = mvcc::kNoTxnId;
    // The running reader with the smallest read timestamp, which holds
    // `pinned` down (none when pinnedByReader is false).
    bool pinnedByReader = false;
    uint64_t readerSession = 0;
    mvcc::Timestamp readerReadTs = mvcc::kNoTimestamp;
    uint64_t readerAgeMicros = 0;
    uint64_t sweepPasses = 0;
    uint64_t keySweeps = 0;
    uint64_t versionsMoved = 0;
    uint64_t versionsFreed = 0;
    uint64_t keysRemoved = 0;
    uint64_t historyDiscarded = 0;
    uint64_t walksSkipped = 0;  // background passes with nothing to walk for
};

struct EngineStats {
    mvcc::MvccStats transactions;
    mvcc::Timestamps timestamps;
    HistoryStats history;
    uint64_t maxChainLength = 0;
    double meanChainLength = 0;  // updates per key, over every collection
    /// Keys by chain length: [0] length 1, [1] 2, [2] 3-4, [3] 5-8,
    /// [4] 9-16, [5] 17 and more.
    std::array<uint64_t, 6> chainLengthHistogram{};
    uint64_t chainBytes = 0;  // memory held by update chains, every collection
    std::vector<CollectionStats> collections;
    uint64_t sessions = 0;
    bool hasOplog = false;  // durable, or in memory with an oplog
    oplog::OplogStats oplog;
    bool durable = false;  // zeros in memory
    CheckpointStats checkpoint;
};

}  // namespace mvkv::engine
