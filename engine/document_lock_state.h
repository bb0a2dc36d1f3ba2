// DocumentLockState: what an Engine keeps for document locks
// (engine/document_locks.h) besides the lock collections themselves: the
// waiters' stripes, the fencing token sequences and the counters of
// serverStatus's documentLocks section.
//
// Thread safety: every member may be used from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "engine/fencing_tokens.h"
#include "engine/lock_waiters.h"

namespace mvkv::engine {

struct DocumentLockCounters {
    std::atomic<uint64_t> acquired{0};   // acquisitions that succeeded (take-overs included)
    std::atomic<uint64_t> denied{0};     // acquisitions that ended DocumentLocked
    std::atomic<uint64_t> waits{0};      // acquisitions that slept at least once
    std::atomic<uint64_t> takeovers{0};  // acquisitions of an expired lock still present
    std::atomic<uint64_t> released{0};   // by release and releaseAll
    std::atomic<uint64_t> refreshed{0};
    std::atomic<uint64_t> lockLost{0};  // fenced writes and refreshes that found the lock gone

    void add(std::atomic<uint64_t>& c) { c.fetch_add(1, std::memory_order_relaxed); }
};

struct DocumentLockState {
    LockWaiters waiters;
    FencingTokens tokens;
    DocumentLockCounters counters;

    /// serverStatus's documentLocks section, as JSON text.
    std::string statusJson() const;
};

}  // namespace mvkv::engine
