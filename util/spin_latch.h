// SpinLatch: a test-and-test-and-set spin lock for critical sections of a
// few instructions that are almost never contended (the lock manager's
// per-partition fast path). Uncontended, a lock/unlock pair is one atomic
// exchange and one plain store, against two read-modify-writes and two calls
// for std::mutex. Under contention it spins briefly, then yields the CPU.
//
// Thread safety: that is its purpose. Not recursive. Meets BasicLockable, so
// std::lock_guard<SpinLatch> works.
#pragma once

#include <atomic>
#include <thread>

namespace mvkv {

class SpinLatch {
  public:
    [[gnu::always_inline]] void lock() {
        if (!locked_.exchange(true, std::memory_order_acquire)) [[likely]]
            return;
        lockContended();
    }
    [[gnu::always_inline]] void unlock() { locked_.store(false, std::memory_order_release); }

  private:
    [[gnu::noinline]] void lockContended() {
        do {
            int spins = 0;
            while (locked_.load(std::memory_order_relaxed)) {
                if (++spins > 64) {
                    std::this_thread::yield();
                    spins = 0;
                }
            }
        } while (locked_.exchange(true, std::memory_order_acquire));
    }

    std::atomic<bool> locked_{false};
};

}  // namespace mvkv
