#include "oplog/visibility_publisher.h"

namespace mvkv::oplog {

VisibilityPublisher::VisibilityPublisher(std::function<mvcc::Timestamp()> noHolesPoint)
    : noHolesPoint_(std::move(noHolesPoint)) {
    visible_.store(noHolesPoint_(), std::memory_order_release);
    thread_ = std::thread([this] { run(); });
}

VisibilityPublisher::~VisibilityPublisher() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    visibleCv_.notify_all();
    thread_.join();
}

void VisibilityPublisher::notify() {
    // One wake-up per burst: only the notification that raises the flag
    // pays for the mutex and the futex.
    if (due_.exchange(true, std::memory_order_acq_rel))
        return;
    std::lock_guard lock(mutex_);
    wake_.notify_one();
}

void VisibilityPublisher::publish(mvcc::Timestamp ts) {
    if (ts > visible_.load(std::memory_order_relaxed)) {
        visible_.store(ts, std::memory_order_release);
        publications_.fetch_add(1, std::memory_order_relaxed);
        visibleCv_.notify_all();
    }
}

mvcc::Timestamp VisibilityPublisher::refreshNow() {
    mvcc::Timestamp ts = noHolesPoint_();
    std::lock_guard lock(mutex_);
    publish(ts);
    return visible();
}

void VisibilityPublisher::run() {
    std::unique_lock lock(mutex_);
    while (!stop_) {
        wake_.wait(lock, [&] { return stop_ || due_.load(std::memory_order_acquire); });
        if (stop_)
            break;
        // Cleared before reading the point: a commit that finishes after
        // this read raises the flag again and gets its own pass.
        due_.store(false, std::memory_order_release);
        lock.unlock();
        mvcc::Timestamp ts = noHolesPoint_();
        lock.lock();
        publish(ts);
    }
}

mvcc::Timestamp VisibilityPublisher::waitAfter(mvcc::Timestamp after,
                                               std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    visibleCv_.wait_until(lock, deadline, [&] { return stop_ || visible() > after; });
    return visible();
}

}  // namespace mvkv::oplog
