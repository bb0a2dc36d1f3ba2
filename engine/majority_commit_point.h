// The majority commit point: the newest timestamp that a majority of a
// replica set's members (the primary included) have made durable
// (docs/replication.md). Read concern "majority" reads at it, write concern
// {w: "majority"} waits for it, and change streams never show an entry
// above it, so nothing they show can be lost with a primary.
//
// A standalone engine is a majority of one: the point is its own durable
// oplog point (Engine::majorityCommitTs computes it; this object is not
// consulted). A replica set takes the point over with attach() and then
// advances it as its members report; detach() hands it back.
//
// Thread safety: every method from any thread. advance() is monotonic: a
// smaller timestamp than the current one is ignored.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "mvcc/timestamp.h"

namespace mvkv::engine {

class MajorityCommitPoint {
  public:
    /// A replica set owns the point from now on, starting at `ts`.
    void attach(mvcc::Timestamp ts) {
        std::lock_guard lk(mutex_);
        ts_.store(ts, std::memory_order_release);
        attached_.store(true, std::memory_order_release);
        cv_.notify_all();
    }
    /// The engine is standalone again.
    void detach() {
        std::lock_guard lk(mutex_);
        attached_.store(false, std::memory_order_release);
        cv_.notify_all();
    }
    bool attached() const { return attached_.load(std::memory_order_acquire); }

    /// Raises the point to `ts` (never lowers it) and wakes its waiters.
    void advance(mvcc::Timestamp ts) {
        std::lock_guard lk(mutex_);
        if (ts <= ts_.load(std::memory_order_relaxed))
            return;
        ts_.store(ts, std::memory_order_release);
        cv_.notify_all();
    }
    /// The point a replica set last advanced to (meaningful when attached()).
    mvcc::Timestamp get() const { return ts_.load(std::memory_order_acquire); }

    /// Waits until the point passes `after`, the set detaches, or
    /// `deadline`; returns the point then.
    mvcc::Timestamp waitAfter(mvcc::Timestamp after,
                              std::chrono::steady_clock::time_point deadline) {
        std::unique_lock lk(mutex_);
        cv_.wait_until(lk, deadline, [&] {
            return ts_.load(std::memory_order_relaxed) > after ||
                   !attached_.load(std::memory_order_relaxed);
        });
        return ts_.load(std::memory_order_relaxed);
    }

  private:
    std::mutex mutex_;
    std::condition_variable cv_;
    std::atomic<mvcc::Timestamp> ts_{mvcc::kNoTimestamp};
    std::atomic<bool> attached_{false};
};

}  // namespace mvkv::engine
