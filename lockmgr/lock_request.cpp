#include "lockmgr/lock_request.h"

#include <cassert>

namespace mvkv::lockmgr {

void LockRequestList::pushFront(LockRequest* r) {
    assert(r->prev == nullptr && r->next == nullptr);
    r->next = front_;
    if (front_)
        front_->prev = r;
    else
        back_ = r;
    front_ = r;
}

void LockRequestList::insertAfter(LockRequest* at, LockRequest* r) {
    assert(r->prev == nullptr && r->next == nullptr);
    r->prev = at;
    r->next = at->next;
    if (at->next)
        at->next->prev = r;
    else
        back_ = r;
    at->next = r;
}

void LockGrantNotification::clear() {
    std::lock_guard<std::mutex> lk(mutex_);
    hasResult_ = false;
    ready_.store(false, std::memory_order_relaxed);
    result_ = LockResult::kWaiting;
}

void LockGrantNotification::notify(LockResult result) {
    std::lock_guard<std::mutex> lk(mutex_);
    hasResult_ = true;
    result_ = result;
    ready_.store(true, std::memory_order_release);
    cv_.notify_all();
}

void LockGrantNotification::wake() {
    std::lock_guard<std::mutex> lk(mutex_);
    cv_.notify_all();
}

bool LockGrantNotification::hasResult() {
    std::lock_guard<std::mutex> lk(mutex_);
    return hasResult_;
}

LockResult LockGrantNotification::wait(const Deadline& deadline,
                                       const std::atomic<bool>& interrupted) {
    // Short spin first: the holder is often about to release on another CPU.
    for (int i = 0; i < kSpinRounds; ++i) {
        if (ready_.load(std::memory_order_acquire) || interrupted.load(std::memory_order_relaxed)) {
            break;
        }
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
    std::unique_lock<std::mutex> lk(mutex_);
    auto ready = [&] { return hasResult_ || interrupted.load(std::memory_order_acquire); };
    if (deadline.isNever()) {
        cv_.wait(lk, ready);
    } else if (!cv_.wait_until(lk, deadline.when(), ready)) {
        return LockResult::kTimeout;
    }
    if (hasResult_)
        return result_;
    return LockResult::kInterrupted;
}

}  // namespace mvkv::lockmgr
