// SpinThenBlockMutex: a mutex for sections that many threads take in turn
// for a few hundred nanoseconds each (the commit path: the transaction
// manager, the log writer, the oplog's index). It spins for up to tens of
// microseconds before it sleeps.
//
// Why spin: glibc's mutexes and rwlocks sleep in the kernel on the first
// failed try. When two committers meet, the loser's futex sleep and the
// winner's wake-up call cost microseconds, though the winner leaves the
// section a few hundred nanoseconds later. perf's sched_switch profile of a
// 2-thread overwrite put 80% of all context switches on the oplog's two
// locks; with a spin, that workload ran 20-30% faster at 2 threads. The
// bounded spin lets the loser wait out the winner on its own CPU, including
// a winner interrupted for a moment; when the holder stays off its CPU
// longer, the loser sleeps. Spinners may overtake a sleeping waiter; the
// holds are short, so none waits long.
//
// Why not glibc's mutex with a spin in front (as before): glibc marks a
// mutex contended when a waiter sleeps, and the next unlock makes the
// wake-up call even when nobody waits any more. This one counts its
// sleepers in the lock word and calls only while there is one; on a virtual
// machine a 2-thread commit stream made 5x fewer futex calls with it
// (docs/oplog.md, "Where concurrent commits meet").
//
// Thread safety: that is its purpose. Not recursive. Meets Lockable, so
// std::lock_guard and std::unique_lock take it, and
// std::condition_variable_any waits on it. Linux only (futex). Lock and
// unlock never change errno.
#pragma once

#include <atomic>
#include <cstdint>

namespace mvkv {

class SpinThenBlockMutex {
  public:
    void lock() {
        uint32_t expected = 0;
        if (state_.compare_exchange_strong(expected, kLockedBit, std::memory_order_acquire))
            [[likely]]
            return;
        lockContended();
    }
    bool try_lock() {
        uint32_t expected = state_.load(std::memory_order_relaxed);
        return (expected & kLockedBit) == 0 &&
               state_.compare_exchange_strong(expected, expected | kLockedBit,
                                              std::memory_order_acquire);
    }
    void unlock() {
        // Nothing of *this is read after the release: a thread that takes
        // the mutex next may destroy it. The wake-up call on its address
        // is harmless then (futex waiters all tolerate a spurious one).
        if (state_.fetch_sub(kLockedBit, std::memory_order_release) != kLockedBit)
            wakeOne();  // a thread sleeps, or is about to
    }
    /// Threads past the spin, sleeping or about to (for tests).
    uint32_t sleepers() const { return state_.load(std::memory_order_relaxed) / kSleeper; }

  private:
    // One word: bit 0 is the lock, the rest counts the threads in
    // lockContended's sleeping loop (so unlock knows to wake one).
    static constexpr uint32_t kLockedBit = 1;
    static constexpr uint32_t kSleeper = 2;

    void lockContended();
    void wakeOne();

    std::atomic<uint32_t> state_{0};
};

}  // namespace mvkv
