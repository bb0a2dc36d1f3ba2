// lockSpinningFirst: takes a mutex that many threads take in turn for a few
// hundred nanoseconds each (the oplog's append), spinning for up to tens of
// microseconds before it blocks.
//
// Why: glibc's mutexes and rwlocks sleep in the kernel on the first failed
// try. When two committers meet at the oplog or the transaction manager, the
// loser's futex sleep and the winner's wake-up syscall cost microseconds,
// though the winner leaves the critical section a few hundred nanoseconds
// later. perf's sched_switch profile of a 2-thread overwrite put 80% of all
// context switches on the oplog's two locks; with the spin, that workload
// ran 20-30% faster at 2 threads. A bounded spin, then the ordinary blocking
// lock, lets the loser wait out the winner on its own CPU, including a
// winner interrupted for a moment; when the holder stays off its CPU
// longer, the loser blocks as before. Spinners may overtake a sleeping
// waiter; the holds are short, so none waits long.
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
    // 64 tries, 1 to 8 pauses between them (~500 in all): a few
    // microseconds to ~30 us depending on the CPU's pause latency (AMD Zen:
    // short; Intel since Skylake: ~140 cycles each). Longer than any hold on
    // the commit path (Oplog::truncate's walk holds longer; rare): it waits
    // out a holder interrupted in its section, since a committer that
    // sleeps holds its commit timestamp and stalls the others behind it
    // (docs/oplog.md, "Where concurrent commits meet", has the figures).
    constexpr int kTries = 64;
    for (int i = 0; i < kTries; ++i) {
        if (lock.try_lock())
            return;
        const int pauses = 1 << (i < 3 ? i : 3);
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
