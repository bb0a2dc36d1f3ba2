// VisibilityPublisher: the oplog's visible timestamp, the no-holes point
// (all_durable) as MongoDB's oplog visibility thread publishes it. Oplog
// readers see entries up to it: never an entry whose transaction has not
// finished committing, never one past a hole left by an earlier-timestamped
// transaction still in flight.
//
// No thread of its own: the committer that finishes publishes, in its own
// thread, the no-holes point it read as it left the active list
// (publish(); TransactionManager::completeCommit returns it), and the rarer
// ends (rollbacks of timestamped transactions, catalog commands, prepared
// commits) ask for it again (notify()). Publication is monotonic (a
// compare-and-swap to the maximum), so committers that finish out of order
// never move it back; only when a reader waits does a publication take the
// mutex and wake it. A background thread woken per burst of commits cost a
// context switch of a committer per wake-up on a machine with few cores
// (docs/oplog.md, "Visibility").
//
// Thread safety: every method from any thread. The source function is
// called from any of them at once, so it must be thread safe
// (TransactionManager::allDurable is).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

#include "mvcc/timestamp.h"

namespace mvkv::oplog {

class VisibilityPublisher {
  public:
    /// `noHolesPoint` returns the current all_durable.
    explicit VisibilityPublisher(std::function<mvcc::Timestamp()> noHolesPoint);
    ~VisibilityPublisher();  // wakes every waiter
    VisibilityPublisher(const VisibilityPublisher&) = delete;
    VisibilityPublisher& operator=(const VisibilityPublisher&) = delete;

    /// Publishes `noHolesPoint`, a value all_durable had at some moment since
    /// this call's caller finished (a stale, smaller one changes nothing).
    void publish(mvcc::Timestamp noHolesPoint);
    /// The no-holes point may have moved: reads it and publishes it.
    void notify() { publish(noHolesPoint_()); }
    /// The published visible timestamp (0 until something is visible).
    mvcc::Timestamp visible() const { return visible_.load(std::memory_order_acquire); }
    /// notify(), then returns visible().
    mvcc::Timestamp refreshNow();
    /// Blocks until visible() > `after` or `deadline` passes (or the
    /// publisher is destroyed); returns visible().
    mvcc::Timestamp waitAfter(mvcc::Timestamp after,
                              std::chrono::steady_clock::time_point deadline);
    /// How many times the published timestamp moved.
    uint64_t publications() const { return publications_.load(std::memory_order_relaxed); }

  private:
    std::function<mvcc::Timestamp()> noHolesPoint_;
    std::atomic<mvcc::Timestamp> visible_{0};
    std::atomic<uint64_t> publications_{0};
    // Readers in waitAfter(): a publication that sees none skips the mutex.
    std::atomic<uint32_t> waiters_{0};
    std::mutex mutex_;
    std::condition_variable visibleCv_;
    bool stop_ = false;  // guarded by mutex_
};

}  // namespace mvkv::oplog
