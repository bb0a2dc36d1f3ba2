// OpRegistry: the engine's list of sessions, through which currentOp,
// killOp and serverStatus find every running operation, and the counter
// opids come from.
//
// Sessions register when opened and leave when destroyed (not a hot path).
// An operation itself registers nothing: it lives in its session's CurOp
// (engine/curop.h), found through this list. Per-session tallies
// (opcounters and friends) are summed over the live sessions plus those
// already closed, so no operation writes a cache line another core writes.
//
// Thread safety: every method, from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "engine/curop.h"

namespace mvkv::engine {

class Session;

/// What one session counted (MongoDB's opcounters and friends). Written by
/// the session's thread only (relaxed load + store), read by any.
struct OpTally {
    enum Counter : uint8_t {
        kInsert,
        kQuery,
        kUpdate,
        kDelete,
        kGetMore,
        kCommand,
        kScanned,          // keys examined (metrics.queryExecutor.scanned)
        kScannedObjects,   // documents examined
        kYields,
        kKilled,           // operations that ended Interrupted by killOp
        kTxnStarted,       // explicit transactions
        kTxnCommitted,
        kTxnAborted,
        kSlowOps,
        kCount
    };
    /// The opcounter an operation of type `op` counts in.
    static constexpr Counter counterFor(CurOpType op) {
        switch (op) {
            case CurOpType::kInsert:
                return kInsert;
            case CurOpType::kUpdate:
                return kUpdate;
            case CurOpType::kRemove:
                return kDelete;
            case CurOpType::kGetMore:
                return kGetMore;
            case CurOpType::kQuery:
                return kQuery;
            default:
                return kCommand;
        }
    }
    std::atomic<uint64_t> counters[kCount] = {};
    [[gnu::always_inline]] void add(Counter c, uint64_t n = 1) {
        auto& a = counters[c];
        a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    uint64_t get(Counter c) const { return counters[c].load(std::memory_order_relaxed); }
};

/// A plain sum of tallies.
struct OpTotals {
    uint64_t counters[OpTally::kCount] = {};
    uint64_t get(OpTally::Counter c) const { return counters[c]; }
};

class OpRegistry {
  public:
    void add(Session* session);
    /// Folds the session's tally into the closed sessions' totals.
    void remove(Session* session, const OpTally& tally);
    std::atomic<uint64_t>& opidCounter() { return nextOpid_; }
    /// Runs `f(Session&)` for every live session, under the registry mutex
    /// (a session cannot be destroyed meanwhile; `f` must not open or close
    /// sessions).
    template <typename F>
    void forEach(F&& f) const {
        std::lock_guard<std::mutex> g(mutex_);
        for (Session* s : sessions_)
            f(*s);
    }
    /// Live sessions' tallies plus closed ones' (`tallyOf` reads a session's).
    template <typename F>
    OpTotals totals(F&& tallyOf) const {
        std::lock_guard<std::mutex> g(mutex_);
        OpTotals out = closed_;
        for (Session* s : sessions_) {
            const OpTally& t = tallyOf(*s);
            for (int i = 0; i < OpTally::kCount; ++i)
                out.counters[i] += t.get(OpTally::Counter(i));
        }
        return out;
    }
    std::mutex& mutex() const { return mutex_; }

  private:
    mutable std::mutex mutex_;
    std::vector<Session*> sessions_;  // GUARDED_BY(mutex_)
    OpTotals closed_;                 // GUARDED_BY(mutex_)
    std::atomic<uint64_t> nextOpid_{0};
};

}  // namespace mvkv::engine
