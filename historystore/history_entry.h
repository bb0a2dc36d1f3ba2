// HistoryEntry: one superseded version in the history store, with the
// interval of timestamps in which it was the key's newest: [startTs, stopTs).
// Immutable once inserted; freed through the engine's EpochManager when the
// store drops it, so a reader that found it may use it while pinned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "mvcc/timestamp.h"

namespace mvkv::historystore {

struct HistoryEntry {
    mvcc::TxnId txnId;        // who wrote the version
    mvcc::Timestamp startTs;  // its commit timestamp
    mvcc::TxnId stopTxnId;    // who wrote the version that replaced it
    mvcc::Timestamp stopTs;   // that version's commit timestamp
    uint32_t size;
    bool tombstone;

    std::string_view value() const { return {reinterpret_cast<const char*>(this + 1), size}; }
    size_t footprint() const { return sizeof(HistoryEntry) + size; }

    static HistoryEntry* make(const HistoryEntry& header, std::string_view value);
    static void destroy(void* entry);  // fits EpochManager::retire
};

}  // namespace mvkv::historystore
