// Tickets: admission control in front of the Global lock.
//
// An operation takes a read ticket (Global IS or S) or a write ticket (Global
// IX) before its Global lock, and gives it back when it releases the Global
// lock; Global X takes none (seed 002, 4.3). Holders start with 128 tickets
// each and can be resized while in use. Two policies:
//   - kSemaphore: any waiter may take a freed ticket (cheapest);
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
    static std::unique_ptr<TicketHolder> make(TicketPolicy policy, int tickets);
    virtual ~TicketHolder() = default;

    /// tryAcquire() and release() without a virtual call for the semaphore
    /// policy (the Locker's fast path).
    inline bool tryAcquireFast();
    inline void releaseFast();

    /// Takes a ticket without waiting; false when none is free (or, for FIFO,
    /// when others are already queued).
    virtual bool tryAcquire() = 0;
    /// Waits for a ticket until `deadline`. Returns OK, LockTimeout, or
    /// Interrupted when `interrupted` becomes true (after interruptWaiters()).
    /// An invalid deadline returns InvalidArgument.
    virtual Status acquire(const Deadline& deadline, const std::atomic<bool>& interrupted) = 0;
    /// Gives one ticket back. Must match a successful acquire.
    virtual void release() = 0;
    /// Changes the total; shrinking below the number out takes effect as
    /// tickets come back. Negative totals are refused.
    virtual Status resize(int tickets) = 0;
    /// Wakes every waiter so it re-checks its interrupt flag.
    virtual void interruptWaiters() = 0;
    virtual TicketStats stats() const = 0;
    TicketPolicy policy() const { return policy_; }

  protected:
    explicit TicketHolder(TicketPolicy policy) : policy_(policy) {}

  private:
    const TicketPolicy policy_;
};

/// The semaphore policy: an atomic count for the uncontended path, a
/// condition variable for waiters. Any waiter may take a freed ticket.
/// Declared here so that its uncontended paths inline.
class SemaphoreTicketHolder final : public TicketHolder {
  public:
    explicit SemaphoreTicketHolder(int tickets)
        : TicketHolder(TicketPolicy::kSemaphore), available_(tickets), total_(tickets) {}

    bool tryAcquire() override {
        int64_t a = available_.load();  // seq_cst: see release()
        while (a > 0) {
            if (available_.compare_exchange_weak(a, a - 1))
                return true;
        }
        return false;
    }
    Status acquire(const Deadline& deadline, const std::atomic<bool>& interrupted) override;
    void release() override {
        available_.fetch_add(1);
        // seq_cst pairs with acquire(): either it sees our ticket or we see it
        // queued. Only then the mutex: the uncontended path touches none.
        if (queued_.load() > 0) [[unlikely]]
            wakeWaiters();
    }
    Status resize(int tickets) override;
    void interruptWaiters() override;
    TicketStats stats() const override;

  private:
    void wakeWaiters();

    // On its own cache line: every operation touches it, nothing else should
    // bounce with it.
    alignas(64) std::atomic<int64_t> available_;
    alignas(64) std::atomic<int64_t> total_;
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::atomic<int64_t> queued_{0};
    uint64_t timeouts_ = 0;  // guarded by mutex_
};

bool TicketHolder::tryAcquireFast() {
    if (policy_ == TicketPolicy::kSemaphore) [[likely]]
        return static_cast<SemaphoreTicketHolder*>(this)->SemaphoreTicketHolder::tryAcquire();
    return tryAcquire();
}

void TicketHolder::releaseFast() {
    if (policy_ == TicketPolicy::kSemaphore) [[likely]] {
        static_cast<SemaphoreTicketHolder*>(this)->SemaphoreTicketHolder::release();
        return;
    }
    release();
}

/// The read and write holders, chosen by Global lock mode.
class TicketHolders {
  public:
    TicketHolders(TicketPolicy policy, int readTickets, int writeTickets);
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
