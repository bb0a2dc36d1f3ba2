// LockManager: the lock table. Grants, queues and converts LockRequests on
// ResourceIds; knows nothing of storage.
//
// Structure (seed 002, section 4):
//   - 128 buckets, each a mutex and a map ResourceId -> LockHead (a chain
//     that is only ever prepended to, so it can be searched without the
//     mutex). A LockHead keeps the granted list and the FIFO conflict (wait)
//     queue, with per-mode counts and mode bitmasks so "does this conflict"
//     is O(1).
//   - 16 partitions for the intent-mode fast path: an IS/IX request on a
//     resource with no S/X granted or queued is recorded only in the LockHead
//     slot of the requesting locker's partition, under that partition's latch
//     (one per partition, shared by the partition's slots of every resource,
//     so a locker's Global, Database and Collection requests go in and out
//     under one latch round), so lockers in different partitions share no
//     mutex and no cache line. The first S or X request on the resource
//     migrates the slots' requests into the LockHead.
//
// Grant rules:
//   - A new request is granted when it conflicts with no granted mode and
//     (unless a compatibleFirst request is granted) with no pending
//     conversion and no queued mode; otherwise it queues at the back. An
//     enqueueAtFront request ignores the queued modes (it would be first in
//     line) and, when it must wait, queues after earlier front requests and
//     ahead of all others.
//   - A conversion (upgrade) waits only for the other granted modes: it is
//     granted before anything in the queue.
//   - When modes are released, pending conversions are granted first, then
//     the queue front to back; a queued request is never overtaken by a later
//     conflicting one, except while a compatibleFirst request is granted, when
//     every request compatible with the granted modes is granted.
//
// Deadlock detection: lockers register what they wait for;
// refuseIfDeadlocked() walks the waits-for graph (bounded depth) from a new waiter and reports the
// cycle it would close. Records of recent deadlocks are kept in a ring.
//
// Thread safety: every public method may be called from any thread; a given
// LockRequest must only be passed by its owning Locker's thread. Lock order
// inside: detector mutex -> bucket mutex -> partition latch -> notification
// mutex; the waits table and the deadlock ring are leaves.
#pragma once

#include <array>
#include <atomic>
#include <cassert>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lockmgr/lock_head.h"
#include "lockmgr/lock_request.h"
#include "lockmgr/lock_stats.h"
#include "lockmgr/ticket_holder.h"

namespace mvkv::lockmgr {

struct LockManagerOptions {
    int readTickets = TicketHolder::kDefaultTickets;
    int writeTickets = TicketHolder::kDefaultTickets;
    TicketPolicy ticketPolicy = TicketPolicy::kSemaphore;
    /// Longest waits-for chain the deadlock detector follows.
    int deadlockMaxDepth = 32;
    /// How many deadlock records recentDeadlocks() keeps.
    size_t deadlockRingSize = 16;
};

/// One edge of a deadlock cycle: `locker` waits for `resource` in `mode`.
struct DeadlockEdge {
    LockerId locker = 0;
    ResourceId resource;
    std::string resourceName;
    LockMode mode = LockMode::kNone;
};

struct DeadlockRecord {
    std::chrono::system_clock::time_point when;
    LockerId victim = 0;              // the requester whose wait would have closed the cycle
    std::vector<DeadlockEdge> cycle;  // starts with the victim's wait
    std::string toString() const;
};

/// A snapshot of one resource's lock state, for `locks` and currentOp.
struct LockHeadInfo {
    struct Entry {
        LockerId locker = 0;
        LockMode mode = LockMode::kNone;
        LockMode convertMode = LockMode::kNone;  // != kNone: waiting to convert
        bool partitioned = false;                // granted on the fast path
    };
    ResourceId resource;
    std::string name;
    std::vector<Entry> granted;  // includes partitioned (fast-path) grants
    std::vector<Entry> waiting;  // queue order
};

class LockManager {
  public:
    static constexpr size_t kNumBuckets = 128;
    static constexpr size_t kNumPartitions = kNumLockPartitions;

    explicit LockManager(LockManagerOptions options = {});
    ~LockManager();
    LockManager(const LockManager&) = delete;
    LockManager& operator=(const LockManager&) = delete;

    // ---- Request-level API (used by Locker; tests may use it directly) ----

    /// Places a new request (status kNew). Returns kOk (granted) or kWaiting
    /// (queued; request->notify receives the grant). `name` is remembered for
    /// descriptions when the resource is first seen.
    /// Inline: the intent fast path (an open partition slot) takes no bucket mutex.
    LockResult lock(ResourceId id, LockRequest* request, LockMode mode,
                    std::string_view name = {}) {
        assert(request->status == LockRequest::Status::kNew && isValidMode(mode));
        request->mode = mode;
        LockHead* head = findHead(id);
        if (request->partitioned && head != nullptr && tryLockPartitioned(head, request))
            [[likely]] {
            return LockResult::kOk;
        }
        return lockSlow(id, request, head, name);
    }
    /// Converts a granted request to a stronger mode `newMode`. Returns kOk or
    /// kWaiting (status kConverting until granted).
    LockResult convert(LockRequest* request, LockMode newMode);
    /// Releases a granted request entirely, or withdraws a waiting one.
    /// Inline: a request still in its partition slot leaves under the partition latch only.
    void unlock(LockRequest* request) {
        if (request->partitioned && tryUnlockPartitioned(request)) [[likely]]
            return;
        // Not partitioned, or migrated into the LockHead since: release it there.
        unlockSlow(request);
    }
    /// Lowers a granted request to `newMode` (covered by its mode) and grants
    /// waiters that now fit.
    void downgrade(LockRequest* request, LockMode newMode);
    /// Withdraws a waiting request or a pending conversion (which reverts to
    /// its old mode). Returns kOk if the grant arrived first (the caller then
    /// owns the lock), otherwise kWaiting to mean "withdrawn".
    LockResult cancelWait(LockRequest* request);

    // ---- Waits-for graph and deadlock detection ----

    /// Records that `locker` waits for `id` in `mode` (one wait per locker).
    void registerWait(LockerId locker, ResourceId id, LockMode mode);
    void unregisterWait(LockerId locker);
    /// If `request` (of `requester`, waiting on `id`) closes a cycle in the
    /// waits-for graph, withdraws it (as cancelWait does), records the cycle in
    /// the ring and returns it. Detection and withdrawal happen under one
    /// detector mutex, so of lockers closing a cycle at the same moment only
    /// one is refused: the next one to look finds the cycle already broken.
    /// A found cycle is re-verified edge by edge before anyone is refused.
    std::optional<DeadlockRecord> refuseIfDeadlocked(LockerId requester, ResourceId id,
                                                     LockRequest* request);
    std::vector<DeadlockRecord> recentDeadlocks() const;
    uint64_t deadlocksDetected() const { return deadlocksDetected_.load(); }

    // ---- Introspection ----

    /// Every resource with granted or waiting requests. A waiter is shown
    /// with the locks it took before it queued: the read is retried (up to 8
    /// times, then the last is returned) while a request starts or stops
    /// waiting during it.
    std::vector<LockHeadInfo> dump() const;
    /// The resources `locker` holds or waits for (thread-safe; for currentOp).
    std::vector<LockHeadInfo> dumpLocker(LockerId locker) const;
    /// The name given when the resource was first locked, or its id string.
    std::string resourceName(ResourceId id) const;
    /// How many resources have a LockHead (they are kept for the manager's life).
    size_t lockHeadCount() const;
    /// Empty when every LockHead's invariants hold, else a description.
    std::string checkInvariants() const;

    // ---- Shared services ----

    LockerId newLockerId() { return nextLockerId_.fetch_add(1, std::memory_order_relaxed); }
    TicketHolders& tickets() { return tickets_; }
    InstanceLockStats& stats() { return stats_; }
    const InstanceLockStats& stats() const { return stats_; }
    const LockManagerOptions& options() const { return options_; }

    /// globalLock.currentQueue: lockers waiting for a lock or a ticket.
    void addQueued(bool reader, int delta) {
        (reader ? queuedReaders_ : queuedWriters_).fetch_add(delta, std::memory_order_relaxed);
    }
    int64_t queuedReaders() const { return queuedReaders_.load(std::memory_order_relaxed); }
    int64_t queuedWriters() const { return queuedWriters_.load(std::memory_order_relaxed); }

    /// {"globalLock":{"currentQueue":...},"locks":{...},"tickets":{...},
    ///  "deadlocks":{...}} as JSON text.
    std::string serverStatusJson() const;

  private:
    friend class Locker;  // its inline fast paths use findHead and the slot helpers

    struct alignas(64) Bucket {
        mutable std::mutex mutex;  // serialises inserts and every LockHead state change
        // Newest first; heads are only ever prepended and never removed, so a
        // reader may walk the chain without the mutex.
        std::atomic<LockHead*> chain{nullptr};
    };
    struct Blocker {
        LockerId locker;
        LockMode mode;
    };

    [[gnu::always_inline]] Bucket& bucketFor(ResourceId id) const {
        static_assert((kNumBuckets & (kNumBuckets - 1)) == 0, "a power of two: no division");
        return buckets_[ResourceIdHasher{}(id) & (kNumBuckets - 1)];
    }
    // Lock-free search of the bucket chain; nullptr when never locked.
    [[gnu::always_inline]] LockHead* findHead(ResourceId id) const {
        for (LockHead* h = bucketFor(id).chain.load(std::memory_order_acquire); h != nullptr;
             h = h->nextInBucket) {
            if (h->resourceId == id) [[likely]]
                return h;
        }
        return nullptr;
    }
    static LockPartitionSlot& slotFor(LockHead* head, LockerId locker) {
        return head->slots[locker % kNumPartitions];
    }
    // The fast path: grants `r` (mode already set) in its partition slot of
    // `head` when that slot is open, which proves no S/X was granted or queued
    // since it opened (that would have closed it). False: nothing changed.
    [[gnu::always_inline]] static bool tryLockPartitioned(LockHead* head, LockRequest* r) {
        LockPartitionSlot& slot = slotFor(head, r->lockerId);
        slot.latch->lock();
        bool open = slot.open;
        if (open) [[likely]]
            linkInSlot(slot, head, r);
        slot.latch->unlock();
        return open;
    }
    // tryLockPartitioned() of three requests of one locker (hence one
    // partition and one latch) at once: all three granted, or none (false).
    [[gnu::always_inline]] static bool tryLockPartitioned3(LockHead* h0, LockRequest* r0,
                                                           LockHead* h1, LockRequest* r1,
                                                           LockHead* h2, LockRequest* r2) {
        assert(r0->lockerId == r1->lockerId && r1->lockerId == r2->lockerId);
        LockPartitionSlot& s0 = slotFor(h0, r0->lockerId);
        LockPartitionSlot& s1 = slotFor(h1, r1->lockerId);
        LockPartitionSlot& s2 = slotFor(h2, r2->lockerId);
        assert(s0.latch == s1.latch && s1.latch == s2.latch);
        s0.latch->lock();
        bool open = s0.open && s1.open && s2.open;
        if (open) [[likely]] {
            linkInSlot(s0, h0, r0);
            linkInSlot(s1, h1, r1);
            linkInSlot(s2, h2, r2);
        }
        s0.latch->unlock();
        return open;
    }
    enum class Chain3 : uint8_t { kGranted, kClosed, kNoTicket };
    // tryLockPartitioned3() that also takes the ticket, from `tickets`' stock
    // in the same partition line, inside the same latch round: kGranted (the
    // three granted and a ticket taken), kClosed (a slot is closed: nothing
    // changed) or kNoTicket (the stock and the pool are empty: nothing
    // changed; stranded tickets may be left in other partitions' stocks).
    // `partition` is the requests' locker's partition.
    [[gnu::always_inline]] static Chain3 tryLockPartitioned3(size_t partition, LockHead* h0,
                                                             LockRequest* r0, LockHead* h1,
                                                             LockRequest* r1, LockHead* h2,
                                                             LockRequest* r2,
                                                             SemaphoreTicketHolder* tickets) {
        assert(partition == r0->lockerId % kNumPartitions && r0->lockerId == r1->lockerId &&
               r1->lockerId == r2->lockerId);
        LockPartitionSlot& s0 = h0->slots[partition];
        LockPartitionSlot& s1 = h1->slots[partition];
        LockPartitionSlot& s2 = h2->slots[partition];
        LockPartitionLatch& line = tickets->lineFor(partition);
        assert(&line.latch == s0.latch && s0.latch == s1.latch && s1.latch == s2.latch);
        line.latch.lock();
        Chain3 result = Chain3::kClosed;
        if (s0.open & s1.open & s2.open) [[likely]] {
            result = Chain3::kNoTicket;
            if (tickets->takeLocked(line)) [[likely]] {
                linkInSlot(s0, h0, r0);
                linkInSlot(s1, h1, r1);
                linkInSlot(s2, h2, r2);
                result = Chain3::kGranted;
            }
        }
        line.latch.unlock();
        return result;
    }
    [[gnu::always_inline]] static void linkInSlot(LockPartitionSlot& slot, LockHead* head,
                                                  LockRequest* r) {
        slot.granted.pushBack(r);
        r->partitionSlot = &slot;
        r->lock = head;
        r->status = LockRequest::Status::kGranted;
    }
    [[gnu::always_inline]] static void unlinkFromSlot(LockRequest* r) {
        r->partitionSlot->granted.remove(r);
        r->partitionSlot = nullptr;
        r->status = LockRequest::Status::kNew;
        r->mode = LockMode::kNone;
        r->lock = nullptr;
    }
    // unlock()'s fast path: false when the request left its slot (migrated).
    [[gnu::always_inline]] static bool tryUnlockPartitioned(LockRequest* r) {
        SpinLatch* latch = slotFor(r->lock, r->lockerId).latch;
        latch->lock();
        bool inSlot = r->partitionSlot != nullptr;
        if (inSlot) [[likely]]
            unlinkFromSlot(r);
        latch->unlock();
        return inSlot;
    }
    // tryUnlockPartitioned() of three requests of one locker under one latch
    // round (`latch`, their partition's): all three released, or none
    // (false: one of them was migrated). With `tickets`, the locker's ticket
    // goes back into its partition's stock in the same round; `wake` then
    // says whether ticket waiters must be woken (tickets->wakeWaiters(),
    // after this returns).
    [[gnu::always_inline]] static bool tryUnlockPartitioned3(LockPartitionLatch& line,
                                                             LockRequest* r0, LockRequest* r1,
                                                             LockRequest* r2,
                                                             SemaphoreTicketHolder* tickets,
                                                             bool& wake) {
        assert(r0->lockerId == r1->lockerId && r1->lockerId == r2->lockerId);
        assert(&line.latch == slotFor(r0->lock, r0->lockerId).latch);
        line.latch.lock();
        bool inSlots = (r0->partitionSlot != nullptr) & (r1->partitionSlot != nullptr) &
                       (r2->partitionSlot != nullptr);
        if (inSlots) [[likely]] {
            unlinkFromSlot(r2);
            unlinkFromSlot(r1);
            unlinkFromSlot(r0);
            if (tickets != nullptr)
                wake = tickets->releaseLocked(line);
        }
        line.latch.unlock();
        return inSlots;
    }
    // lock() past the fast path: under the bucket mutex. `head` is what
    // findHead() returned (nullptr: not found then).
    LockResult lockSlow(ResourceId id, LockRequest* r, LockHead* head, std::string_view name);
    void unlockSlow(LockRequest* r);
    // Moves every request in the head's open slots into its granted list and
    // closes the slots. Requires the bucket mutex.
    void migratePartitioned(LockHead* head);
    // Grants pending conversions, then queued requests, as the rules allow.
    void grantWaiters(LockHead* head);
    LockResult newRequest(LockHead* head, LockRequest* request);
    // Lockers `locker`'s wait on `id` is blocked by (takes the bucket mutex).
    std::vector<Blocker> blockersOf(LockerId locker, ResourceId id) const;
    std::optional<std::pair<ResourceId, LockMode>> waitOf(LockerId locker) const;
    std::optional<DeadlockRecord> findCycle(LockerId requester, ResourceId id) const;
    bool searchCycle(LockerId requester, LockerId current, int depth, std::vector<LockerId>& path,
                     std::vector<LockerId>& visited) const;
    static void fillInfo(LockHead& head, LockHeadInfo& info);

    const LockManagerOptions options_;
    std::unique_ptr<Bucket[]> buckets_;
    // The fast-path latches, one per partition, shared by every LockHead's
    // slot of that partition (LockPartitionSlot::latch points here).
    LockPartitionLatches partitionLatches_;

    mutable std::mutex waitsMutex_;
    std::unordered_map<LockerId, std::pair<ResourceId, LockMode>>
        waits_;  // GUARDED_BY(waitsMutex_)

    std::mutex detectorMutex_;  // serialises detect-and-refuse; taken before bucket mutexes
    mutable std::mutex deadlockMutex_;
    std::deque<DeadlockRecord> deadlocks_;  // GUARDED_BY(deadlockMutex_)
    std::atomic<uint64_t> deadlocksDetected_{0};
    // Counts requests starting or stopping a wait (or a conversion), under
    // their bucket mutex: dump() retries while it moves.
    std::atomic<uint64_t> waitChanges_{0};
    void noteWaitChange() { waitChanges_.fetch_add(1, std::memory_order_acq_rel); }
    std::vector<LockHeadInfo> dumpOnce() const;

    std::atomic<LockerId> nextLockerId_{1};
    std::atomic<int64_t> queuedReaders_{0};
    std::atomic<int64_t> queuedWriters_{0};
    TicketHolders tickets_;
    InstanceLockStats stats_;
};

}  // namespace mvkv::lockmgr
