#include "util/spin_then_block.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace mvkv {

namespace {

void pause(int times) {
    for (int p = 0; p < times; ++p) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

// The kernel waits on the word itself.
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
              std::atomic<uint32_t>::is_always_lock_free);

// futex(2) on the lock word; errno as the caller left it (std::mutex never
// changes it, and EAGAIN here is routine).
void futex(std::atomic<uint32_t>& word, int op, uint32_t value) {
    const int saved = errno;
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), op, value, nullptr, nullptr, 0);
    errno = saved;
}

}  // namespace

void SpinThenBlockMutex::lockContended() {
    // 64 tries, 1 to 8 pauses between them (~500 in all): a few
    // microseconds to ~30 us depending on the CPU's pause latency. Longer
    // than any hold on the commit path: it waits out a holder interrupted
    // in its section, since a committer that sleeps holds its commit
    // timestamp and stalls the others behind it (docs/oplog.md). Each try
    // reads first: a failed compare-and-swap would take the line from the
    // holder, who needs it back to unlock.
    for (int i = 0; i < 64; ++i) {
        pause(1 << (i < 3 ? i : 3));
        uint32_t seen = state_.load(std::memory_order_relaxed);
        if ((seen & kLockedBit) == 0 &&
            state_.compare_exchange_strong(seen, seen | kLockedBit, std::memory_order_acquire))
            return;
    }
    // Counted as a sleeper before looking again, so an unlock from here on
    // sees the count and wakes someone; the sleep itself only happens while
    // the word is as last seen (locked, this thread counted), so no unlock
    // can fall between the look and the sleep.
    uint32_t seen = state_.fetch_add(kSleeper, std::memory_order_relaxed) + kSleeper;
    while (true) {
        if ((seen & kLockedBit) == 0) {
            // Take the lock and leave the count in one step.
            if (state_.compare_exchange_weak(seen, (seen | kLockedBit) - kSleeper,
                                             std::memory_order_acquire,
                                             std::memory_order_relaxed))
                return;
            continue;  // `seen` was reloaded
        }
        futex(state_, FUTEX_WAIT_PRIVATE, seen);
        seen = state_.load(std::memory_order_relaxed);
    }
}

void SpinThenBlockMutex::wakeOne() {
    futex(state_, FUTEX_WAKE_PRIVATE, 1);
}

}  // namespace mvkv
