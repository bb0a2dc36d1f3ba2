// Tickets: admission control in front of the Global lock.
//
// An operation takes a read ticket (Global IS or S) or a write ticket (Global
// IX) before its Global lock, and gives it back when it releases the Global
// lock; Global X takes none (seed 002, 4.3). Holders start with 128 tickets
// each and can be resized while in use. Two policies:
//   - kSemaphore: any waiter may take a freed ticket (cheapest; free tickets
//     are kept in per-partition stocks, so uncontended callers of different
//     partitions share no cache line);
//   - kFifo: freed tickets go to waiters in arrival order (no overtaking).
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>

#include "lockmgr/lock_mode.h"
#include "lockmgr/lock_partition.h"
#include "util/deadline.h"
#include "util/status.h"

namespace mvkv::lockmgr {

enum class TicketPolicy : uint8_t { kSemaphore, kFifo };

struct TicketStats {
    int64_t out = 0;        // tickets held now
    int64_t available = 0;  // total - out (negative right after shrinking)
    int64_t total = 0;
    int64_t queued = 0;     // threads waiting for a ticket
    uint64_t timeouts = 0;  // waits that ended at their deadline
};

class TicketHolder {
  public:
    static constexpr int kDefaultTickets = 128;
    /// A holder of its own (tests, tools). The LockManager's holders share
    /// its partition lines instead (the TicketHolders constructor).
    static std::unique_ptr<TicketHolder> make(TicketPolicy policy, int tickets);
    virtual ~TicketHolder() = default;

    // Every call names a shard: the caller's fast-path partition (the Locker
    // passes its locker id's partition; any value works, taken modulo
    // kNumLockPartitions). The semaphore policy keeps a stock of free tickets
    // per shard so that callers of different shards write no common cache
    // line; the FIFO policy ignores the shard. The overloads without one use
    // shard 0.

    /// tryAcquire() and release() without a virtual call for the semaphore
    /// policy (the Locker's fast path).
    inline bool tryAcquireFast(size_t shard);
    inline void releaseFast(size_t shard);

    /// Takes a ticket without waiting; false when none is free (or, for FIFO,
    /// when others are already queued).
    virtual bool tryAcquire(size_t shard) = 0;
    bool tryAcquire() { return tryAcquire(0); }
    /// Waits for a ticket until `deadline`. Returns OK, LockTimeout, or
    /// Interrupted when `interrupted` becomes true (after interruptWaiters()).
    /// An invalid deadline returns InvalidArgument.
    virtual Status acquire(const Deadline& deadline, const std::atomic<bool>& interrupted,
                           size_t shard) = 0;
    Status acquire(const Deadline& deadline, const std::atomic<bool>& interrupted) {
        return acquire(deadline, interrupted, 0);
    }
    /// Gives one ticket back. Must match a successful acquire (of any shard).
    virtual void release(size_t shard) = 0;
    void release() { release(0); }
    /// Changes the total; shrinking below the number out takes effect as
    /// tickets come back. Negative totals are refused.
    virtual Status resize(int tickets) = 0;
    /// Wakes every waiter so it re-checks its interrupt flag.
    virtual void interruptWaiters() = 0;
    /// An exact count (a consistent cut, not a sum of racing reads).
    virtual TicketStats stats() const = 0;
    TicketPolicy policy() const { return policy_; }

  protected:
    explicit TicketHolder(TicketPolicy policy) : policy_(policy) {}

  private:
    const TicketPolicy policy_;
};

/// The semaphore policy, sharded. Any waiter may take a freed ticket.
///
/// The free tickets are split between a shared pool (one atomic) and a stock
/// per shard, kept in the shard's partition line (LockPartitionLatch, under
/// its latch). An acquire takes from its shard's stock, refilled from the
/// pool kBatch tickets at a time; a release puts the ticket back in its
/// shard's stock (beyond kMaxStock the excess goes back to the pool). So the
/// uncontended path writes only the caller's own partition line, which the
/// lock manager's fast path writes anyway: in the Locker's AutoGetCollection
/// path the ticket comes out of (and goes back into) the stock inside the
/// same latch round as the three intent locks.
///
/// Exactness: out + pool + sum of stocks == total at every instant (each
/// move happens under a latch, the pool is changed only by atomic RMWs).
/// When a shard's stock and the pool are both empty, the acquirer takes every
/// shard's latch (in index order), moves all stocks into the pool and takes
/// one from there: tryAcquire() fails only when, at that instant, no ticket
/// at all was free, as with a single counter. A waiter registers in queued_
/// before it looks, and a release that sees queued_ > 0 (or a pool in debt
/// after a shrink) gives its ticket to the pool and wakes the waiters; the
/// partition latch orders the two, so no wake-up is lost. resize() and
/// stats() also work on all latches at once.
///
/// Declared here so that its uncontended paths inline.
class SemaphoreTicketHolder final : public TicketHolder {
  public:
    /// Tickets moved from the pool into a stock at once.
    static constexpr int32_t kBatch = 4;
    /// A release that would leave more than this in a stock gives the excess
    /// (down to kBatch) back to the pool.
    static constexpr int32_t kMaxStock = 8;

    /// `shards` (with `stockIndex` < kTicketStocksPerPartition) are the
    /// lines of a LockManager's partitions; nullptr: lines of its own.
    SemaphoreTicketHolder(int tickets, LockPartitionLatches* shards = nullptr,
                          size_t stockIndex = 0);

    using TicketHolder::acquire;
    using TicketHolder::release;
    using TicketHolder::tryAcquire;

    bool tryAcquire(size_t shard) override {
        LockPartitionLatch& line = lineFor(shard);
        line.latch.lock();
        bool got = takeLocked(line);
        line.latch.unlock();
        return got || tryAcquireReclaiming();
    }
    Status acquire(const Deadline& deadline, const std::atomic<bool>& interrupted,
                   size_t shard) override;
    void release(size_t shard) override {
        LockPartitionLatch& line = lineFor(shard);
        line.latch.lock();
        bool wake = releaseLocked(line);
        line.latch.unlock();
        if (wake) [[unlikely]]
            wakeWaiters();
    }
    Status resize(int tickets) override;
    void interruptWaiters() override;
    TicketStats stats() const override;

    // ---- For callers that already hold the shard's latch ----
    // (Locker's one-latch-round AutoGetCollection path.)

    /// The partition line of `shard` (its latch guards the stock).
    LockPartitionLatch& lineFor(size_t shard) const { return (*shards_)[shard % kNumLockPartitions]; }
    /// Takes a ticket from `line`'s stock, refilling it from the pool; false
    /// when both are empty (then tryAcquire() may still find stranded ones).
    /// Requires line.latch.
    [[gnu::always_inline]] bool takeLocked(LockPartitionLatch& line) {
        int32_t& stock = line.ticketStock[stockIndex_];
        if (stock > 0) [[likely]] {
            --stock;
            return true;
        }
        return refillLocked(stock);
    }
    /// Returns a ticket into `line`'s stock. True when waiters must be woken
    /// (call wakeWaiters() after releasing the latch). Requires line.latch.
    [[gnu::always_inline]] bool releaseLocked(LockPartitionLatch& line) {
        int32_t& stock = line.ticketStock[stockIndex_];
        // Both on one line that only borrowing, waiting and resizing write.
        if (queued_.load(std::memory_order_relaxed) == 0 &&
            pool_.load(std::memory_order_relaxed) >= 0 && stock < kMaxStock) [[likely]] {
            ++stock;
            return false;
        }
        return releaseToPoolLocked(stock);
    }
    void wakeWaiters();

  private:
    bool refillLocked(int32_t& stock);
    bool releaseToPoolLocked(int32_t& stock);
    // Takes every latch, moves every stock into the pool and takes one
    // ticket from the pool if it is positive.
    bool tryAcquireReclaiming();
    void lockAll() const;
    void unlockAll() const;
    int64_t stockedLocked() const;  // sum of the stocks; requires all latches

    std::unique_ptr<LockPartitionLatches> ownShards_;  // when not the LockManager's
    LockPartitionLatches* const shards_;
    const size_t stockIndex_;

    // Written only when a stock is refilled or overflows, by waiters and by
    // resize: read (not written) by every uncontended release.
    alignas(64) std::atomic<int64_t> pool_;      // free tickets in no stock (< 0 after a shrink)
    std::atomic<int64_t> queued_{0};            // threads waiting for a ticket
    alignas(64) std::atomic<int64_t> total_;
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    uint64_t timeouts_ = 0;  // guarded by mutex_
};

bool TicketHolder::tryAcquireFast(size_t shard) {
    if (policy_ == TicketPolicy::kSemaphore) [[likely]]
        return static_cast<SemaphoreTicketHolder*>(this)->SemaphoreTicketHolder::tryAcquire(shard);
    return tryAcquire(shard);
}

void TicketHolder::releaseFast(size_t shard) {
    if (policy_ == TicketPolicy::kSemaphore) [[likely]] {
        static_cast<SemaphoreTicketHolder*>(this)->SemaphoreTicketHolder::release(shard);
        return;
    }
    release(shard);
}

/// The read and write holders, chosen by Global lock mode.
class TicketHolders {
  public:
    /// `shards`: the LockManager's partition lines, where the semaphore
    /// holders keep their per-partition stocks (read: stock 0, write: 1).
    TicketHolders(TicketPolicy policy, int readTickets, int writeTickets,
                  LockPartitionLatches* shards = nullptr);
    /// Read holder for IS/S, write holder for IX, nullptr for X (no ticket).
    TicketHolder* forMode(LockMode mode) const {
        if (mode == LockMode::kIS || mode == LockMode::kS)
            return read_.get();
        return mode == LockMode::kIX ? write_.get() : nullptr;
    }
    TicketHolder& read() const { return *read_; }
    TicketHolder& write() const { return *write_; }

  private:
    std::unique_ptr<TicketHolder> read_;
    std::unique_ptr<TicketHolder> write_;
};

std::string_view ticketPolicyName(TicketPolicy p);

}  // namespace mvkv::lockmgr
