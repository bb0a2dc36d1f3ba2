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
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "failpoint/failpoints.h"
#include "lockmgr/lock_manager.h"
#include "lockmgr/lock_stats.h"
#include "lockmgr/namespace_memo.h"
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
    /// The counters since the last resetOperationStats(): one operation's
    /// "locks" in currentOp and the slow-op log. The owner thread, or
    /// another while the owner cannot start its next operation (meanwhile a
    /// new one's counters could read as the old one's).
    LockStats operationStats() const { return stats_.operationSnapshot(); }
    /// Owner thread: the next operation starts its counters from zero.
    [[gnu::always_inline]] void resetOperationStats() { stats_.resetOperation(); }

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
    friend class HeldLock;           // lockAndGet / unlockHeld: no search on release
    friend class AutoGetCollection;  // tryLockChainFast / tryUnlockChainFast

    // The held (and pending) requests: an array inline in the Locker (no
    // allocation for the usual handful), moved to the heap past kInline.
    class RequestTable {
      public:
        static constexpr uint32_t kInline = 8;
        RequestTable() = default;
        RequestTable(const RequestTable&) = delete;
        RequestTable& operator=(const RequestTable&) = delete;

        LockRequest* const* begin() const { return data_; }
        LockRequest* const* end() const { return data_ + size_; }
        uint32_t size() const { return size_; }
        bool empty() const { return size_ == 0; }
        LockRequest*& operator[](size_t i) { return data_[i]; }
        LockRequest* back() const { return data_[size_ - 1]; }
        void push_back(LockRequest* r) {
            if (size_ == capacity_) [[unlikely]]
                grow();
            data_[size_++] = r;
        }
        void pop_back() { --size_; }
        void clear() { size_ = 0; }
        /// The table holds exactly a, b, c (it was empty; capacity >= 3).
        void assign3(LockRequest* a, LockRequest* b, LockRequest* c) {
            static_assert(kInline >= 3);
            LockRequest** d = data_;
            d[0] = a;
            d[1] = b;
            d[2] = c;
            size_ = 3;
        }
        /// Drops the entries past `n` (n <= size()).
        void resize(uint32_t n) { size_ = n; }

      private:
        void grow();

        LockRequest** data_ = inline_;
        uint32_t size_ = 0;
        uint32_t capacity_ = kInline;
        std::unique_ptr<LockRequest*[]> heap_;
        LockRequest* inline_[kInline] = {};
    };

    // How begin() left things: granted, queued (finish with lockComplete), or
    // refused with the Status it filled in.
    enum class Begun : uint8_t { kGranted, kWaiting, kFailed };

    struct Pending {
        LockRequest* request = nullptr;
        LockMode mode = LockMode::kNone;  // the mode asked for
        bool isConversion = false;
        bool reader = false;  // counted in currentQueue.readers, else writers
        std::chrono::steady_clock::time_point since;
    };

    static constexpr size_t kMaxFreeRequests = 16;  // recycled requests kept

    // ---- Fast paths (inline; anything unusual goes to the general path) ----
    //
    // The common case: a first-time IS or IX lock (plus its ticket, for
    // Global) granted on the partitioned path, released in LIFO order outside
    // a unit of work. They count the same statistics as the general path.

    /// Returns the granted request, or nullptr when the general path must run:
    /// then nothing changed, except that a Global request may hold its ticket
    /// already (ticketHolder_ set), which the general path then keeps using.
    [[gnu::always_inline]] LockRequest* tryLockFast(ResourceId id, LockMode mode,
                                                    const Deadline& deadline) {
        if (!isIntentMode(mode) || pending_.request != nullptr || !deadline.valid() ||
            freeHead_ == nullptr || failpoint::hangInLockAcquisition.armed()) [[unlikely]] {
            return nullptr;
        }
        const ResourceType type = id.type();
        const bool global = type == ResourceType::kGlobal;
        if (global) {
            if (global_ != nullptr || ticketHolder_ != nullptr) [[unlikely]]
                return nullptr;
        } else if (type == ResourceType::kInvalid || type == ResourceType::kMutex ||
                   find(id) != nullptr) [[unlikely]] {
            return nullptr;
        }
        LockHead* head = manager_.findHead(id);
        if (head == nullptr) [[unlikely]]
            return nullptr;
        LockRequest* r = freeHead_;
        r->resourceId = id;
        r->partitioned = true;
        r->enqueueAtFront = r->compatibleFirst = false;
        r->mode = mode;
        if (global) {
            TicketHolder* holder = manager_.tickets().forMode(mode);
            if (!holder->tryAcquireFast(partition())) [[unlikely]]
                return nullptr;
            ticketHolder_ = holder;
        }
        if (!LockManager::tryLockPartitioned(head, r)) [[unlikely]]
            return nullptr;
        freeHead_ = r->nextFree;
        r->nextFree = nullptr;
        --freeCount_;
        r->ownerMode = mode;
        r->recursiveCount = 1;
        r->unlockPending = 0;
        r->ownerIndex = uint32_t(requests_.size());
        requests_.push_back(r);
        if (global)
            global_ = r;
        stats_.add(type, mode, LockStatKind::kAcquireCount);
        return r;
    }

    /// Releases `r` (the lock on `id`) entirely when it is the newest request,
    /// held once, outside a unit of work and still in its partition slot.
    /// False: nothing changed, the general path must run.
    [[gnu::always_inline]] bool tryUnlockFast(LockRequest* r, ResourceId id) {
        if (requests_.empty() || requests_.back() != r || pending_.request != nullptr ||
            wuowDepth_ != 0 || r->recursiveCount != 1 || r->unlockPending != 0 || !r->partitioned ||
            !(r->resourceId == id) || freeCount_ >= kMaxFreeRequests) [[unlikely]] {
            return false;
        }
        if (!LockManager::tryUnlockPartitioned(r)) [[unlikely]]
            return false;
        r->recursiveCount = 0;
        requests_.pop_back();
        r->nextFree = freeHead_;
        freeHead_ = r;
        ++freeCount_;
        if (r == global_) {
            global_ = nullptr;
            releaseTicketIfUnlocked();
        }
        return true;
    }

    /// AutoGetCollection's fast path for a locker that holds nothing: the
    /// ticket, then Global, `dbId` and `collId` all in the intent mode `mode`,
    /// the three requests placed in their partition slots under one latch
    /// round (with the semaphore policy the ticket comes from the partition's
    /// stock inside that round). Fills `out` (Global, Database, Collection)
    /// and returns true; or returns false having changed nothing (the
    /// ticket, if taken, went back).
    [[gnu::always_inline]] bool tryLockChainFast(ResourceId dbId, ResourceId collId,
                                                 LockMode mode, const Deadline& deadline,
                                                 LockRequest* (&out)[3]) {
        if (!isIntentMode(mode) || !requests_.empty() || pending_.request != nullptr ||
            !deadline.valid() || freeCount_ < 3 || ticketHolder_ != nullptr ||
            dbId.type() != ResourceType::kDatabase ||
            collId.type() != ResourceType::kCollection ||
            failpoint::hangInLockAcquisition.armed()) [[unlikely]] {
            return false;
        }
        LockHead* hg = chainHeads_.global;
        LockHead* hd = chainHeads_.db;
        LockHead* hc = chainHeads_.coll;
        if (!(dbId == chainHeads_.dbId) || !(collId == chainHeads_.collId)) [[unlikely]] {
            if (!findChainHeads(dbId, collId))
                return false;
            hg = chainHeads_.global;
            hd = chainHeads_.db;
            hc = chainHeads_.coll;
        }
        LockRequest* g = freeHead_;
        LockRequest* d = g->nextFree;
        LockRequest* c = d->nextFree;
        prepareChainRequest(g, ResourceId::global(), mode);
        prepareChainRequest(d, dbId, mode);
        prepareChainRequest(c, collId, mode);
        TicketHolder* holder = manager_.tickets().forMode(mode);
        if (holder->policy() == TicketPolicy::kSemaphore) [[likely]] {
            // The ticket from our partition's stock, in the same latch round.
            LockManager::Chain3 placed = LockManager::tryLockPartitioned3(
                partition(), hg, g, hd, d, hc, c, static_cast<SemaphoreTicketHolder*>(holder));
            if (placed != LockManager::Chain3::kGranted) [[unlikely]] {
                if (placed == LockManager::Chain3::kClosed || !lockChainTicketFirst(hg, hd, hc))
                    return false;
            }
        } else if (!lockChainTicketFirst(hg, hd, hc)) {
            return false;
        }
        ticketHolder_ = holder;
        freeHead_ = c->nextFree;
        freeCount_ -= 3;
        grantChainRequest(g, mode, 0);
        grantChainRequest(d, mode, 1);
        grantChainRequest(c, mode, 2);
        requests_.assign3(g, d, c);  // empty before (checked above)
        global_ = g;
        stats_.addChain(mode);
        out[0] = g;
        out[1] = d;
        out[2] = c;
        return true;
    }
    // The owner's fields of a recycled request for the chain fast path.
    [[gnu::always_inline]] static void prepareChainRequest(LockRequest* r, ResourceId id,
                                                           LockMode mode) {
        r->resourceId = id;
        r->partitioned = true;
        r->enqueueAtFront = false;
        r->compatibleFirst = false;
        r->mode = mode;
    }
    [[gnu::always_inline]] static void grantChainRequest(LockRequest* r, LockMode mode,
                                                         uint32_t index) {
        r->nextFree = nullptr;
        r->ownerMode = mode;
        r->recursiveCount = 1;
        r->unlockPending = 0;
        r->ownerIndex = index;
    }

    /// Releases the three requests tryLockChainFast() returned (Global `g`,
    /// Database `d`, Collection `c` on `dbId`, `collId`) at once, when they
    /// are the newest three, each held once, outside a unit of work and still
    /// in their partition slots. False: nothing changed.
    [[gnu::always_inline]] bool tryUnlockChainFast(LockRequest* g, LockRequest* d, LockRequest* c,
                                                   ResourceId dbId, ResourceId collId) {
        const uint32_t n = requests_.size();
        if (n < 3 || requests_[n - 1] != c || requests_[n - 2] != d || requests_[n - 3] != g ||
            g != global_ || pending_.request != nullptr || wuowDepth_ != 0 ||
            freeCount_ + 3 > kMaxFreeRequests) [[unlikely]] {
            return false;
        }
        if (!heldOnceOnFastPath(g) || !heldOnceOnFastPath(d) || !heldOnceOnFastPath(c))
            [[unlikely]] {
            return false;
        }
        if (!(d->resourceId == dbId) || !(c->resourceId == collId)) [[unlikely]]
            return false;
        // The ticket goes back into our partition's stock in the same latch
        // round (semaphore policy); otherwise after it.
        TicketHolder* holder = ticketHolder_;
        SemaphoreTicketHolder* sem = holder != nullptr && holder->policy() == TicketPolicy::kSemaphore
                                         ? static_cast<SemaphoreTicketHolder*>(holder)
                                         : nullptr;
        bool wake = false;
        if (!LockManager::tryUnlockPartitioned3(manager_.partitionLatches_[partition()], g, d, c,
                                                sem, wake)) [[unlikely]] {
            return false;
        }
        c->recursiveCount = 0;
        d->recursiveCount = 0;
        g->recursiveCount = 0;
        g->nextFree = freeHead_;
        d->nextFree = g;
        c->nextFree = d;
        freeHead_ = c;
        freeCount_ += 3;
        requests_.resize(n - 3);
        global_ = nullptr;
        if (sem != nullptr) {
            ticketHolder_ = nullptr;
            if (wake) [[unlikely]]
                sem->wakeWaiters();
        } else {
            releaseTicketIfUnlocked();
        }
        return true;
    }
    [[gnu::always_inline]] static bool heldOnceOnFastPath(const LockRequest* r) {
        return r->recursiveCount == 1 && r->unlockPending == 0 && r->partitioned;
    }

    /// Looks up the LockHeads of Global, `dbId` and `collId` and remembers
    /// them in chainHeads_; false (chainHeads_ unchanged) when one has none
    /// yet (the general path creates it).
    [[gnu::noinline]] bool findChainHeads(ResourceId dbId, ResourceId collId);

    /// tryLockChainFast()'s route when the ticket cannot come from the
    /// partition's stock (FIFO policy, or stock and pool empty): the ticket
    /// first (reclaiming stranded ones), then the three requests. False:
    /// nothing changed.
    [[gnu::noinline]] bool lockChainTicketFirst(LockHead* hg, LockHead* hd, LockHead* hc);

    /// This locker's fast-path partition (and ticket shard).
    size_t partition() const { return id_ % kNumLockPartitions; }

    LockRequest* find(ResourceId id) const {
        for (LockRequest* r : requests_) {
            if (r->resourceId == id)
                return r;
        }
        return nullptr;
    }
    LockRequest* newRequest(ResourceId id);
    void freeRequest(LockRequest* r);
    Status validate(ResourceId id, LockMode mode) const;
    /// lock() that also hands back the request now held (for ResourceLock).
    Status lockAndGet(ResourceId id, LockMode mode, const Deadline& deadline, std::string_view name,
                      LockRequest*& held) {
        if (LockRequest* r = tryLockFast(id, mode, deadline)) [[likely]] {
            held = r;
            return Status::OK();
        }
        return lockAndGetSlow(id, mode, deadline, name, held);
    }
    [[gnu::noinline]] Status lockAndGetSlow(ResourceId id, LockMode mode, const Deadline& deadline,
                                            std::string_view name, LockRequest*& held);
    Status lockGlobalAndGet(LockMode mode, const Deadline& deadline, LockRequest*& held);
    /// unlock() of a request lockAndGet() returned for `id`; falls back to
    /// unlock(id) when the request no longer is that lock.
    void unlockHeld(LockRequest* r, ResourceId id) {
        if (!tryUnlockFast(r, id)) [[unlikely]]
            unlockHeldSlow(r, id);
    }
    [[gnu::noinline]] void unlockHeldSlow(LockRequest* r, ResourceId id);
    // Places the request (or counts a recursive one). On kFailed, `error` says why.
    Begun begin(ResourceId id, LockMode mode, std::string_view name, Status& error,
                LockRequest*& held);
    Begun beginHeld(LockRequest* r, LockMode mode, Status& error);
    Begun startWait(LockRequest* r, LockMode mode, bool conversion, Status& error);
    // Validation, the ticket and begin() for the Global lock.
    Begun beginGlobal(LockMode mode, const Deadline& deadline, Status& error, LockRequest*& held);
    static StatusWith<LockResult> toLockResult(Begun begun, Status& error);
    Status waitForTicket(TicketHolder* holder, LockMode mode, const Deadline& deadline);
    // Ends the pending wait with `waitResult`; unless `withdrawn`, a request
    // that was not granted is withdrawn first (the grant may still win).
    Status finishWait(LockResult waitResult, bool withdrawn = false);
    Status releaseOne(LockRequest* r);
    void releaseTicketIfUnlocked() {
        if (ticketHolder_ != nullptr && global_ == nullptr) {
            ticketHolder_->releaseFast(partition());
            ticketHolder_ = nullptr;
        }
    }
    Deadline effectiveDeadline(const Deadline& deadline,
                               std::chrono::steady_clock::time_point since) const;
    bool isReader(LockMode requested) const;
    std::string holdersDescription(ResourceId id) const;

    LockManager& manager_;
    const LockerId id_;
    LockGrantNotification notification_;
    std::atomic<bool> interrupted_{false};

    RequestTable requests_;            // held (and pending) requests
    LockRequest* freeHead_ = nullptr;  // recycled requests (linked by nextFree), so that
    uint32_t freeCount_ = 0;           // a lock allocates nothing; at most kMaxFreeRequests
    LockRequest* global_ = nullptr;    // the Global lock's request, if any
    Pending pending_;

    int wuowDepth_ = 0;
    std::optional<std::chrono::milliseconds> maxLockTimeout_;
    TicketHolder* ticketHolder_ = nullptr;  // the holder our ticket came from
    LockerLockStats stats_;
    NamespaceMemo nsMemo_;  // AutoGetCollection's last namespace string -> ids
    // The LockHeads tryLockChainFast() used last. LockHeads live as long as
    // the LockManager and one id always has the same one, so the pointers
    // stay right; only the ids are compared.
    struct ChainHeads {
        ResourceId dbId;    // invalid until the first lookup: matches no lock id
        ResourceId collId;
        LockHead* global = nullptr;
        LockHead* db = nullptr;
        LockHead* coll = nullptr;
    };
    ChainHeads chainHeads_;
};

}  // namespace mvkv::lockmgr
