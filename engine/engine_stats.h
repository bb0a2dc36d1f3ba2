// EngineStats: one call returns every MVCC and storage figure of an engine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mvcc/mvcc_stats.h"
#include "mvcc/txn_manager.h"

namespace mvkv::engine {

struct CollectionStats {
    std::string ns;
    int64_t keys = 0;      // live keys at the newest commit
    int64_t bytes = 0;     // their key + value bytes
    uint64_t chains = 0;   // keys in the tree (including deleted, not yet swept)
    uint64_t updates = 0;  // versions held in update chains
    uint64_t maxChainLength = 0;
    uint64_t chainBytes = 0;  // memory held by update chains
    uint64_t treeHeight = 0;
    uint64_t treeBytes = 0;
};

struct EngineStats {
    mvcc::MvccStats transactions;
    mvcc::Timestamps timestamps;
    uint64_t maxChainLength = 0;
    double meanChainLength = 0;  // updates per key, over every collection
    std::vector<CollectionStats> collections;
    uint64_t sessions = 0;
};

}  // namespace mvkv::engine
