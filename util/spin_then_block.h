// lockSpinningFirst: takes a mutex that many threads take in turn for a few
// hundred nanoseconds each (the oplog's append), spinning briefly before it
// blocks.
//
// Why: glibc's mutexes and rwlocks sleep in the kernel on the first failed
// try. When two committers meet at the oplog, the loser's futex sleep and its
// wake-up cost microseconds and a context switch, though the winner leaves
// the critical section a few hundred nanoseconds later. perf's sched_switch
// profile of a 2-thread overwrite put 80% of all context switches there,
// which is why writes did not scale with threads. A bounded spin (a few
// microseconds at most, then the ordinary blocking lock) lets the loser wait
// out the winner on its own CPU; when the holder is descheduled, the loser
// blocks as before.
//
// Thread safety: as the lock's own. lockSpinningFirst works with anything
// that has try_lock() and lock(): std::unique_lock of std::mutex (so a
// std::condition_variable can still wait on it) or of std::shared_mutex.
// SpinThenBlockMutex is a std::mutex that always locks this way, for
// std::lock_guard (not for std::condition_variable, which wants std::mutex).
#pragma once

#include <mutex>

namespace mvkv {

template <typename Lock>
void lockSpinningFirst(Lock& lock) {
    constexpr int kTries = 24;  // ~2-4 us of pauses in all, doubling to 16 per try
    for (int i = 0; i < kTries; ++i) {
        if (lock.try_lock())
            return;
        const int pauses = 1 << (i < 4 ? i : 4);
        for (int p = 0; p < pauses; ++p) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        }
    }
    lock.lock();
}

class SpinThenBlockMutex {
  public:
    void lock() { lockSpinningFirst(mutex_); }
    bool try_lock() { return mutex_.try_lock(); }
    void unlock() { mutex_.unlock(); }

  private:
    std::mutex mutex_;
};

}  // namespace mvkv
