#include "lockmgr/ticket_holder.h"

#include <fmt/format.h>

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

// Semaphore: an atomic count for the uncontended path (inline in the header),
// a condition variable for waiters. Any waiter may take a freed ticket.
Status SemaphoreTicketHolder::acquire(const Deadline& deadline,
                                      const std::atomic<bool>& interrupted) {
    if (!deadline.valid())
        return Status::InvalidArgument(deadline.invalidReason());
    if (tryAcquire())
        return Status::OK();
    std::unique_lock<std::mutex> lk(mutex_);
    // seq_cst pairs with release(): either we see its ticket or it sees us.
    queued_.fetch_add(1);
    Status result;
    while (!tryAcquire()) {
        if (interrupted.load(std::memory_order_acquire)) {
            result = interruptedStatus();
            break;
        }
        if (deadline.isNever()) {
            cv_.wait(lk);
        } else if (cv_.wait_until(lk, deadline.when()) == std::cv_status::timeout) {
            if (tryAcquire())
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
    int64_t delta = tickets - total_.load();
    total_.store(tickets);
    available_.fetch_add(delta);
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
    s.total = total_.load();
    s.available = available_.load();
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

    bool tryAcquire() override {
        std::lock_guard<std::mutex> lk(mutex_);
        if (available_ > 0 && waiters_.empty()) {
            --available_;
            return true;
        }
        return false;
    }

    Status acquire(const Deadline& deadline, const std::atomic<bool>& interrupted) override {
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

    void release() override {
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

TicketHolders::TicketHolders(TicketPolicy policy, int readTickets, int writeTickets)
    : read_(TicketHolder::make(policy, readTickets)),
      write_(TicketHolder::make(policy, writeTickets)) {}

std::string_view ticketPolicyName(TicketPolicy p) {
    return p == TicketPolicy::kFifo ? "fifo" : "semaphore";
}

}  // namespace mvkv::lockmgr
