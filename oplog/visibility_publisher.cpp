#include "oplog/visibility_publisher.h"

namespace mvkv::oplog {

VisibilityPublisher::VisibilityPublisher(std::function<mvcc::Timestamp()> noHolesPoint)
    : noHolesPoint_(std::move(noHolesPoint)) {
    visible_.store(noHolesPoint_(), std::memory_order_release);
}

VisibilityPublisher::~VisibilityPublisher() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    visibleCv_.notify_all();
}

void VisibilityPublisher::publish(mvcc::Timestamp noHolesPoint) {
    mvcc::Timestamp seen = visible_.load(std::memory_order_relaxed);
    do {
        if (noHolesPoint <= seen)
            return;  // a later committer published as far already
    } while (!visible_.compare_exchange_weak(seen, noHolesPoint, std::memory_order_seq_cst,
                                             std::memory_order_relaxed));
    publications_.fetch_add(1, std::memory_order_relaxed);
    // The store above and this load, and a waiter's increment and its read
    // of visible_, are all sequentially consistent: either we see the
    // waiter, or it sees the new timestamp before it sleeps. Taking the
    // mutex before notifying means a waiter that counted itself is either
    // asleep already or still holds the mutex and will see the timestamp.
    if (waiters_.load(std::memory_order_seq_cst) != 0) {
        { std::lock_guard lock(mutex_); }
        visibleCv_.notify_all();
    }
}

mvcc::Timestamp VisibilityPublisher::refreshNow() {
    notify();
    return visible();
}

mvcc::Timestamp VisibilityPublisher::waitAfter(mvcc::Timestamp after,
                                               std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    waiters_.fetch_add(1, std::memory_order_seq_cst);
    visibleCv_.wait_until(lock, deadline, [&] {
        return stop_ || visible_.load(std::memory_order_seq_cst) > after;
    });
    waiters_.fetch_sub(1, std::memory_order_relaxed);
    return visible();
}

}  // namespace mvkv::oplog
