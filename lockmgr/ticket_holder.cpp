#include "lockmgr/ticket_holder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>

namespace mvkv::lockmgr {
namespace {

Status timeoutStatus(int64_t total) {
    return Status::LockTimeout(fmt::format(
        "no ticket became free before the deadline ({} tickets, all in use); raise the ticket "
        "count or the timeout",
        total));
}

Status interruptedStatus() {
    return Status::Interrupted("interrupted while waiting for a ticket");
}

}  // namespace

// Semaphore, sharded: see the class comment in the header. The uncontended
// paths (a shard's stock) are inline there.
SemaphoreTicketHolder::SemaphoreTicketHolder(int tickets, LockPartitionLatches* shards,
                                             size_t stockIndex)
    : TicketHolder(TicketPolicy::kSemaphore),
      ownShards_(shards == nullptr ? std::make_unique<LockPartitionLatches>() : nullptr),
      shards_(shards != nullptr ? shards : ownShards_.get()),
      stockIndex_(stockIndex),
      pool_(tickets),
      total_(tickets) {
    assert(stockIndex < kTicketStocksPerPartition);
}

bool SemaphoreTicketHolder::refillLocked(int32_t& stock) {
    int64_t a = pool_.load(std::memory_order_relaxed);
    while (a > 0) {
        int64_t n = std::min<int64_t>(a, kBatch);
        if (pool_.compare_exchange_weak(a, a - n)) {
            stock += int32_t(n - 1);  // one of them is ours
            return true;
        }
    }
    return false;
}

bool SemaphoreTicketHolder::releaseToPoolLocked(int32_t& stock) {
    // Waiters, a pool in debt after a shrink, or a full stock: the ticket
    // (and, when someone waits or the pool is in debt, the whole stock;
    // otherwise what exceeds kBatch) goes to the pool.
    bool waiters = queued_.load() > 0;
    int32_t keep = waiters || pool_.load() < 0 ? 0 : std::min(stock, kBatch);
    int64_t give = 1 + (stock - keep);
    stock = keep;
    pool_.fetch_add(give);
    // Read again after the pool grew: a waiter that registered meanwhile has
    // either seen the pool or is seen here (both seq_cst).
    return waiters || queued_.load() > 0;
}

void SemaphoreTicketHolder::lockAll() const {
    for (LockPartitionLatch& line : *shards_)
        line.latch.lock();
}

void SemaphoreTicketHolder::unlockAll() const {
    for (LockPartitionLatch& line : *shards_)
        line.latch.unlock();
}

int64_t SemaphoreTicketHolder::stockedLocked() const {
    int64_t sum = 0;
    for (const LockPartitionLatch& line : *shards_)
        sum += line.ticketStock[stockIndex_];
    return sum;
}

bool SemaphoreTicketHolder::tryAcquireReclaiming() {
    // With every latch held no stock moves and the pool changes only here
    // (every other writer of the pool holds a latch): an exact cut.
    lockAll();
    int64_t stocked = 0;
    for (LockPartitionLatch& line : *shards_) {
        stocked += line.ticketStock[stockIndex_];
        line.ticketStock[stockIndex_] = 0;
    }
    int64_t free = pool_.load() + stocked;
    bool got = free > 0;
    pool_.store(got ? free - 1 : free);
    unlockAll();
    return got;
}

Status SemaphoreTicketHolder::acquire(const Deadline& deadline,
                                      const std::atomic<bool>& interrupted, size_t shard) {
    if (!deadline.valid())
        return Status::InvalidArgument(deadline.invalidReason());
    if (tryAcquire(shard))
        return Status::OK();
    std::unique_lock<std::mutex> lk(mutex_);
    // Registered before we look (tryAcquire takes the latches): a release
    // that we miss sees us and wakes us (it takes mutex_, held until we wait).
    queued_.fetch_add(1);
    Status result;
    while (!tryAcquire(shard)) {
        if (interrupted.load(std::memory_order_acquire)) {
            result = interruptedStatus();
            break;
        }
        if (deadline.isNever()) {
            cv_.wait(lk);
        } else if (cv_.wait_until(lk, deadline.when()) == std::cv_status::timeout) {
            if (tryAcquire(shard))
                break;
            ++timeouts_;
            result = timeoutStatus(total_.load());
            break;
        }
    }
    queued_.fetch_sub(1);
    return result;
}

void SemaphoreTicketHolder::wakeWaiters() {
    // Waiters check and sleep under mutex_, so taking it before notifying
    // loses no wake-up.
    std::lock_guard<std::mutex> lk(mutex_);
    cv_.notify_all();
}

Status SemaphoreTicketHolder::resize(int tickets) {
    if (tickets < 0) {
        return Status::InvalidArgument(fmt::format("ticket count must be >= 0, got {}", tickets));
    }
    std::lock_guard<std::mutex> lk(mutex_);
    // Every stock back into the pool first: after a shrink the stocks must
    // not hand out tickets the pool no longer has.
    lockAll();
    int64_t stocked = 0;
    for (LockPartitionLatch& line : *shards_) {
        stocked += line.ticketStock[stockIndex_];
        line.ticketStock[stockIndex_] = 0;
    }
    int64_t delta = tickets - total_.load();
    total_.store(tickets);
    pool_.fetch_add(stocked + delta);
    unlockAll();
    cv_.notify_all();
    return Status::OK();
}

void SemaphoreTicketHolder::interruptWaiters() {
    std::lock_guard<std::mutex> lk(mutex_);
    cv_.notify_all();
}

TicketStats SemaphoreTicketHolder::stats() const {
    std::lock_guard<std::mutex> lk(mutex_);
    TicketStats s;
    lockAll();
    s.total = total_.load();
    s.available = pool_.load() + stockedLocked();
    unlockAll();
    s.out = s.total - s.available;
    s.queued = queued_.load();
    s.timeouts = timeouts_;
    return s;
}

namespace {

// FIFO: all state under one mutex; a released ticket is handed straight to
// the oldest waiter, so a newcomer can never overtake a queued thread.
class FifoTicketHolder final : public TicketHolder {
  public:
    explicit FifoTicketHolder(int tickets)
        : TicketHolder(TicketPolicy::kFifo), available_(tickets), total_(tickets) {}

    using TicketHolder::acquire;
    using TicketHolder::release;
    using TicketHolder::tryAcquire;

    bool tryAcquire(size_t /*shard*/) override {
        std::lock_guard<std::mutex> lk(mutex_);
        if (available_ > 0 && waiters_.empty()) {
            --available_;
            return true;
        }
        return false;
    }

    Status acquire(const Deadline& deadline, const std::atomic<bool>& interrupted,
                   size_t /*shard*/) override {
        if (!deadline.valid())
            return Status::InvalidArgument(deadline.invalidReason());
        std::unique_lock<std::mutex> lk(mutex_);
        if (available_ > 0 && waiters_.empty()) {
            --available_;
            return Status::OK();
        }
        Waiter me;
        waiters_.push_back(&me);
        auto done = [&] { return me.granted || interrupted.load(std::memory_order_acquire); };
        bool woke = true;
        if (deadline.isNever()) {
            me.cv.wait(lk, done);
        } else {
            woke = me.cv.wait_until(lk, deadline.when(), done);
        }
        if (me.granted)
            return Status::OK();
        // Not granted: leave the queue (we are still in it).
        std::erase(waiters_, &me);
        if (!woke) {
            ++timeouts_;
            return timeoutStatus(total_);
        }
        return interruptedStatus();
    }

    void release(size_t /*shard*/) override {
        std::lock_guard<std::mutex> lk(mutex_);
        ++available_;
        handOut();
    }

    Status resize(int tickets) override {
        if (tickets < 0) {
            return Status::InvalidArgument(
                fmt::format("ticket count must be >= 0, got {}", tickets));
        }
        std::lock_guard<std::mutex> lk(mutex_);
        available_ += tickets - total_;
        total_ = tickets;
        handOut();
        return Status::OK();
    }

    void interruptWaiters() override {
        std::lock_guard<std::mutex> lk(mutex_);
        for (Waiter* w : waiters_)
            w->cv.notify_one();
    }

    TicketStats stats() const override {
        std::lock_guard<std::mutex> lk(mutex_);
        TicketStats s;
        s.total = total_;
        s.available = available_;
        s.out = total_ - available_;
        s.queued = int64_t(waiters_.size());
        s.timeouts = timeouts_;
        return s;
    }

  private:
    struct Waiter {
        std::condition_variable cv;
        bool granted = false;
    };

    // Gives free tickets to the oldest waiters. Requires mutex_.
    void handOut() {
        while (available_ > 0 && !waiters_.empty()) {
            Waiter* w = waiters_.front();
            waiters_.pop_front();
            --available_;
            w->granted = true;
            w->cv.notify_one();
        }
    }

    mutable std::mutex mutex_;
    int64_t available_;
    int64_t total_;
    uint64_t timeouts_ = 0;
    std::deque<Waiter*> waiters_;
};

}  // namespace

std::unique_ptr<TicketHolder> TicketHolder::make(TicketPolicy policy, int tickets) {
    if (tickets < 0)
        tickets = 0;
    if (policy == TicketPolicy::kFifo)
        return std::make_unique<FifoTicketHolder>(tickets);
    return std::make_unique<SemaphoreTicketHolder>(tickets);
}

namespace {

std::unique_ptr<TicketHolder> makeShared(TicketPolicy policy, int tickets,
                                         LockPartitionLatches* shards, size_t stockIndex) {
    if (policy == TicketPolicy::kSemaphore && shards != nullptr)
        return std::make_unique<SemaphoreTicketHolder>(std::max(tickets, 0), shards, stockIndex);
    return TicketHolder::make(policy, tickets);
}

}  // namespace

TicketHolders::TicketHolders(TicketPolicy policy, int readTickets, int writeTickets,
                             LockPartitionLatches* shards)
    : read_(makeShared(policy, readTickets, shards, 0)),
      write_(makeShared(policy, writeTickets, shards, 1)) {}

std::string_view ticketPolicyName(TicketPolicy p) {
    return p == TicketPolicy::kFifo ? "fifo" : "semaphore";
}

}  // namespace mvkv::lockmgr
