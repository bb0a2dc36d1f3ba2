#include "engine/lock_waiters.h"

#include <xxhash.h>

namespace mvkv::engine {

void LockWaiters::Stripe::wakeAll() {
    // Taking the mutex orders the wake after a sleeper's check of its
    // condition: it is either before the check (the sleeper sees the flag)
    // or after the sleeper went to sleep (the notify reaches it).
    { std::lock_guard lock(mutex_); }
    cv_.notify_all();
}

LockWaiters::Stripe& LockWaiters::stripeFor(std::string_view lockNs, std::string_view key) {
    uint64_t h =
        XXH3_64bits_withSeed(key.data(), key.size(), XXH3_64bits(lockNs.data(), lockNs.size()));
    return stripes_[h % kStripes];
}

void LockWaiters::notify(std::string_view lockNs, std::string_view key) {
    Stripe& s = stripeFor(lockNs, key);
    {
        std::lock_guard lock(s.mutex_);
        s.generation_.store(s.generation_.load(std::memory_order_relaxed) + 1,
                            std::memory_order_release);
    }
    s.cv_.notify_all();
}

LockWaiters::WaitResult LockWaiters::wait(Stripe& stripe, uint64_t seen,
                                          std::chrono::steady_clock::time_point until,
                                          const std::atomic<bool>& interrupted) {
    std::unique_lock lock(stripe.mutex_);
    while (true) {
        if (interrupted.load())
            return WaitResult::kInterrupted;
        if (stripe.generation_.load(std::memory_order_relaxed) != seen)
            return WaitResult::kChanged;
        if (stripe.cv_.wait_until(lock, until) == std::cv_status::timeout) {
            if (interrupted.load())
                return WaitResult::kInterrupted;
            return stripe.generation_.load(std::memory_order_relaxed) != seen
                       ? WaitResult::kChanged
                       : WaitResult::kTimedOut;
        }
    }
}

}  // namespace mvkv::engine
