// LockRequest: one locker's request for one resource, and the notification
// through which a waiting request learns it was granted.
//
// A LockRequest is owned by its Locker and lives at a stable address while it
// is linked into a LockHead's granted or conflict list (or a partition's
// list). Which mutex guards which field:
//   - list links, status, mode, convertMode, lock: the LockHead's bucket mutex
//     (while the request sits in a fast-path slot: its partition's latch, the only
//     way to reach it then);
//   - partitionSlot (and mode, while in a slot): its partition's latch;
//   - ownerMode, recursiveCount, unlockPending, partitioned, enqueueAtFront,
//     compatibleFirst: the owning locker's thread only (set before the request
//     is handed to the LockManager).
#pragma once

#include <atomic>
#include <cassert>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "lockmgr/lock_mode.h"
#include "lockmgr/resource_id.h"
#include "util/deadline.h"

namespace mvkv::lockmgr {

using LockerId = uint64_t;

struct LockHead;
struct LockPartitionSlot;
class LockGrantNotification;

struct LockRequest {
    enum class Status : uint8_t { kNew, kGranted, kWaiting, kConverting };

    LockRequest(LockerId locker, ResourceId resource, LockGrantNotification* notification)
        : lockerId(locker), resourceId(resource), notify(notification) {}

    // Set when the request is created (or recycled) by its owner, before it is
    // handed to the LockManager; read-only while it is placed.
    LockerId lockerId;
    ResourceId resourceId;
    LockGrantNotification* notify;

    // Guarded by the bucket mutex of resourceId.
    LockRequest* prev = nullptr;
    LockRequest* next = nullptr;
    LockHead* lock = nullptr;
    Status status = Status::kNew;
    LockMode mode = LockMode::kNone;
    LockMode convertMode = LockMode::kNone;

    // Guarded by the partition latch of lockerId (LockPartitionSlot::latch).
    LockPartitionSlot* partitionSlot = nullptr;

    // Owner thread only.
    LockMode ownerMode = LockMode::kNone;  // the owner's view of the granted mode
    uint32_t ownerIndex = 0;               // position in the owner's request table
    uint32_t recursiveCount = 0;
    uint32_t unlockPending = 0;       // unlocks deferred to the end of the unit of work
    LockRequest* nextFree = nullptr;  // next in the owner's free list (while unused)
    bool partitioned = false;         // asked for the intent-mode fast path
    bool enqueueAtFront = false;      // when it must wait, queue ahead of everyone
    bool compatibleFirst = false;     // while granted, grant every compatible newcomer
};

/// Intrusive doubly-linked list of requests (the LockHead's queues).
class LockRequestList {
  public:
    bool empty() const { return front_ == nullptr; }
    LockRequest* front() const { return front_; }
    // pushBack and remove are inline: the intent fast path calls them.
    void pushBack(LockRequest* r) {
        assert(r->prev == nullptr && r->next == nullptr);
        r->prev = back_;
        if (back_)
            back_->next = r;
        else
            front_ = r;
        back_ = r;
    }
    void pushFront(LockRequest* r);
    void insertAfter(LockRequest* at, LockRequest* r);
    void remove(LockRequest* r) {
        if (r->prev)
            r->prev->next = r->next;
        else
            front_ = r->next;
        if (r->next)
            r->next->prev = r->prev;
        else
            back_ = r->prev;
        r->prev = r->next = nullptr;
    }

  private:
    LockRequest* front_ = nullptr;
    LockRequest* back_ = nullptr;
};

/// Where a waiting locker sleeps until the LockManager grants its request,
/// its deadline passes, or another thread interrupts it. One per Locker.
/// Thread safety: notify() and wake() may be called from any thread.
class LockGrantNotification {
  public:
    /// Forget a previous result. The owner calls it once a wait is over, so
    /// the notification is clear whenever no request is pending.
    void clear();
    /// The LockManager's verdict on the pending request (kOk when granted).
    void notify(LockResult result);
    /// Wake the waiter so it re-checks its interrupt flag.
    void wake();
    /// Returns the notified result, kTimeout when `deadline` passes first, or
    /// kInterrupted when `*interrupted` becomes true first.
    LockResult wait(const Deadline& deadline, const std::atomic<bool>& interrupted);
    /// True when a result has arrived (no waiting).
    bool hasResult();

  private:
    // Spins this many rounds on `ready_` before sleeping: a lock handed over
    // between running threads then costs no futex wake-up.
    static constexpr int kSpinRounds = 1000;  // tens of microseconds at most

    std::mutex mutex_;
    std::condition_variable cv_;
    std::atomic<bool> ready_{false};            // mirrors hasResult_, for the spin
    bool hasResult_ = false;                    // GUARDED_BY(mutex_)
    LockResult result_ = LockResult::kWaiting;  // GUARDED_BY(mutex_)
};

}  // namespace mvkv::lockmgr
