// VisibilityPublisher: the oplog's visible timestamp, as MongoDB's oplog
// visibility thread publishes it. Oplog readers see entries up to the
// no-holes point (all_durable): never an entry whose transaction has not
// finished committing, never one past a hole left by an earlier-timestamped
// transaction still in flight.
//
// Committers call notify() after they finish (and abort()s of timestamped
// transactions do too: a hole can close by abort). A background thread
// wakes once per burst of notifications (batched), asks for the no-holes
// point, and publishes it only when it moved forward (monotonic), waking
// every waiter.
//
// Thread safety: every method from any thread. The source function is
// called from the background thread and from refreshNow(), possibly at the
// same time, so it must be thread safe (TransactionManager::allDurable is).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "mvcc/timestamp.h"

namespace mvkv::oplog {

class VisibilityPublisher {
  public:
    /// Starts the thread. `noHolesPoint` returns the current all_durable.
    explicit VisibilityPublisher(std::function<mvcc::Timestamp()> noHolesPoint);
    ~VisibilityPublisher();  // stops and joins the thread; wakes every waiter
    VisibilityPublisher(const VisibilityPublisher&) = delete;
    VisibilityPublisher& operator=(const VisibilityPublisher&) = delete;

    /// The no-holes point may have moved. Cheap when a wake-up is already due.
    void notify();
    /// The published visible timestamp (0 until something is visible).
    mvcc::Timestamp visible() const { return visible_.load(std::memory_order_acquire); }
    /// Recomputes and publishes now, in the caller's thread; returns visible().
    mvcc::Timestamp refreshNow();
    /// Blocks until visible() > `after` or `deadline` passes (or the
    /// publisher stops); returns visible().
    mvcc::Timestamp waitAfter(mvcc::Timestamp after,
                              std::chrono::steady_clock::time_point deadline);
    /// How many times the published timestamp moved.
    uint64_t publications() const { return publications_.load(std::memory_order_relaxed); }

  private:
    void run();
    void publish(mvcc::Timestamp ts);  // requires mutex_

    std::function<mvcc::Timestamp()> noHolesPoint_;
    std::atomic<mvcc::Timestamp> visible_{0};
    std::atomic<bool> due_{false};
    std::atomic<uint64_t> publications_{0};
    std::mutex mutex_;
    std::condition_variable wake_;     // the thread
    std::condition_variable visibleCv_;  // waiters
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace mvkv::oplog
