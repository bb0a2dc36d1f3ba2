// OpClock: the monotonic clock operations are timed with.
//
// Timing every operation must cost next to nothing, so by default it reads
// the kernel's coarse monotonic clock (a few nanoseconds, ticks of a few
// milliseconds: plenty to tell a 100 ms operation). When somebody needs
// finer durations (a profiler on, a slow-op threshold under 50 ms) the
// engine switches it to the precise clock (about 25 ns a read). Tests inject
// their own clock (EngineOptions::clock) so that no test waits for time.
//
// Thread safety: now()/nowNanos() and setPrecise() from any thread.
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>
#include <functional>

namespace mvkv::engine {

class OpClock {
  public:
    explicit OpClock(std::function<int64_t()> injected)
        : injected_(std::move(injected)), clockId_(injected_ ? kInjected : CLOCK_MONOTONIC_COARSE) {}

    /// Microseconds.
    int64_t now() const { return nowNanos() / 1000; }
    /// Nanoseconds (an injected clock's microseconds times 1000): what
    /// operations are timed with, as it needs no division.
    [[gnu::always_inline]] int64_t nowNanos() const {
        // One load decides it all: which kernel clock, or the injected one.
        const clockid_t id = clockId_.load(std::memory_order_relaxed);
        if (id == kInjected) [[unlikely]]
            return injected_() * 1000;
        timespec ts;
        clock_gettime(id, &ts);
        return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
    }
    void setPrecise(bool precise) {
        if (!injected_)
            clockId_.store(precise ? CLOCK_MONOTONIC : CLOCK_MONOTONIC_COARSE,
                           std::memory_order_relaxed);
    }

  private:
    static constexpr clockid_t kInjected = -1;  // no kernel clock has a negative id

    const std::function<int64_t()> injected_;
    std::atomic<clockid_t> clockId_;
};

}  // namespace mvkv::engine
