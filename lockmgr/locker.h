// Locker: the locks of one operation or transaction.
//
// A Locker asks its LockManager for locks, waits for them with a deadline,
// counts its own statistics and (optionally) holds IX/X locks until the end
// of a write unit of work (two-phase locking).
//
// Rules a caller must follow (each broken rule returns a Status, never
// corrupts the lock table):
//   - Take the Global lock with lockGlobal() first, then Database, then
//     Collection locks (the RAII classes in raii_locks.h do this).
//   - lock() on a resource already held is recursive: a mode covered by the
//     held one just counts; a stronger one converts (IS->IX, IS->S, IX->X,
//     S->X, IS->X). IX and S do not convert into each other (there is no SIX
//     mode): InvalidArgument.
//   - Every lock() that returned OK needs one unlock().
//
// Errors: InvalidArgument (bad resource, mode or deadline; unlock of what is
// not held), LockTimeout (deadline passed: the locker is left exactly as it
// was before the call), Deadlock (waiting would close a cycle: refused at
// once, locker left as it was), Interrupted (interrupt() while waiting).
//
// Thread safety: a Locker is used by one thread at a time, except interrupt()
// and id(), which any thread may call. Destroying a Locker releases whatever
// it still holds.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lockmgr/lock_manager.h"
#include "lockmgr/lock_stats.h"
#include "util/deadline.h"
#include "util/status.h"

namespace mvkv::lockmgr {

/// What one locker holds and waits for.
struct LockerInfo {
    struct Held {
        ResourceId resource;
        std::string name;
        LockMode mode = LockMode::kNone;
        uint32_t recursiveCount = 0;
        uint32_t unlockPending = 0;
    };
    LockerId id = 0;
    std::vector<Held> held;
    std::optional<Held> waitingFor;  // mode = the mode asked for
    std::string toString() const;
};

class Locker {
  public:
    explicit Locker(LockManager& manager);
    ~Locker();
    Locker(const Locker&) = delete;
    Locker& operator=(const Locker&) = delete;

    LockerId id() const { return id_; }
    LockManager& manager() const { return manager_; }

    // ---- Global lock ----

    /// Takes a ticket (read for IS/S, write for IX, none for X), then the
    /// Global lock. The ticket is the one of the first Global mode taken; a
    /// later conversion or downgrade keeps it. Global S and X jump the wait queue (enqueueAtFront)
    /// and, while granted, admit compatible newcomers first (compatibleFirst).
    Status lockGlobal(LockMode mode, const Deadline& deadline = Deadline::never());
    /// Releases one level of the Global lock; the ticket goes back with the last.
    Status unlockGlobal();

    // ---- Other resources ----

    /// Acquires `id` in `mode`, waiting until `deadline`. `name` is shown in
    /// descriptions and deadlock reports.
    Status lock(ResourceId id, LockMode mode, const Deadline& deadline = Deadline::never(),
                std::string_view name = {});
    /// Releases one level (deferred to the end of the unit of work for IX/X
    /// inside one).
    Status unlock(ResourceId id);
    /// Lowers a held lock to a mode it covers (X -> IX/S/IS, S -> IS, IX -> IS).
    Status downgrade(ResourceId id, LockMode newMode);

    // ---- Two-step acquisition (one pending request at a time) ----

    /// Places the request without waiting for the lock. OK with kOk (granted)
    /// or kWaiting (call lockComplete()); Deadlock when waiting would close a
    /// cycle. On the Global resource it first takes the ticket, which may wait
    /// (use lockGlobalBegin to bound that wait).
    StatusWith<LockResult> lockBegin(ResourceId id, LockMode mode, std::string_view name = {});
    /// Same for the Global lock; the ticket wait (if any) honours `deadline`.
    StatusWith<LockResult> lockGlobalBegin(LockMode mode,
                                           const Deadline& deadline = Deadline::never());
    /// Waits for the pending request until `deadline`. An invalid deadline
    /// withdraws the request (InvalidArgument) unless it was already granted.
    Status lockComplete(const Deadline& deadline = Deadline::never());
    /// True when the pending request has been granted (or there is none).
    bool pendingGranted();

    // ---- Queries ----

    /// The held mode, kNone when not held (a pending conversion reports the old mode).
    LockMode getLockMode(ResourceId id) const;
    bool isLockHeldForMode(ResourceId id, LockMode mode) const;
    bool isLocked() const { return globalMode() != LockMode::kNone; }
    LockMode globalMode() const {
        return global_ != nullptr && global_->recursiveCount > 0 ? global_->ownerMode
                                                                 : LockMode::kNone;
    }
    /// Owner thread only. Other threads use LockManager::dumpLocker(id()).
    LockerInfo describe() const;
    /// A snapshot of this locker's own counters (any thread). They are also
    /// part of LockManager::stats() for as long as the locker lives, and after.
    LockStats stats() const { return stats_.snapshot(); }

    // ---- Two-phase locking ----

    /// Inside a unit of work, unlock() of IX/X locks is deferred until the
    /// outermost endWriteUnitOfWork(). Units nest.
    void beginWriteUnitOfWork() { ++wuowDepth_; }
    Status endWriteUnitOfWork();
    bool inWriteUnitOfWork() const { return wuowDepth_ > 0; }

    // ---- Timeouts and interruption ----

    /// Caps every wait (tickets and locks) at `timeout` from its start.
    Status setMaxLockTimeout(std::chrono::milliseconds timeout);
    void unsetMaxLockTimeout() { maxLockTimeout_.reset(); }
    /// Any thread: a waiting (or future) wait of this locker returns
    /// Interrupted, like MongoDB's killOp. Grants that need no wait succeed.
    void interrupt();
    /// Owner thread: accept waits again after an interrupt.
    void clearInterrupt() { interrupted_.store(false, std::memory_order_release); }
    bool isInterrupted() const { return interrupted_.load(std::memory_order_acquire); }

  private:
    struct Pending {
        LockRequest* request = nullptr;
        LockMode mode = LockMode::kNone;  // the mode asked for
        bool isConversion = false;
        bool reader = false;  // counted in currentQueue.readers, else writers
        std::chrono::steady_clock::time_point since;
    };

    LockRequest* find(ResourceId id) const;
    LockRequest* newRequest(ResourceId id);
    void freeRequest(LockRequest* r);
    Status validate(ResourceId id, LockMode mode) const;
    StatusWith<LockResult> begin(ResourceId id, LockMode mode, std::string_view name);
    // Ends the pending wait with `waitResult`; unless `withdrawn`, a request
    // that was not granted is withdrawn first (the grant may still win).
    Status finishWait(LockResult waitResult, bool withdrawn = false);
    Status releaseOne(LockRequest* r);
    void releaseTicketIfUnlocked();
    Deadline effectiveDeadline(const Deadline& deadline,
                               std::chrono::steady_clock::time_point since) const;
    bool isReader(LockMode requested) const;
    std::string holdersDescription(ResourceId id) const;

    LockManager& manager_;
    const LockerId id_;
    LockGrantNotification notification_;
    std::atomic<bool> interrupted_{false};

    std::vector<LockRequest*> requests_;  // held (and pending) requests
    std::vector<LockRequest*> freeList_;  // recycled to avoid allocation per lock
    LockRequest* global_ = nullptr;       // the Global lock's request, if any
    Pending pending_;

    int wuowDepth_ = 0;
    std::optional<std::chrono::milliseconds> maxLockTimeout_;
    TicketHolder* ticketHolder_ = nullptr;  // the holder our ticket came from
    LockerLockStats stats_;
};

}  // namespace mvkv::lockmgr
