// OpClock: the monotonic microseconds operations are timed with.
//
// Timing every operation must cost next to nothing, so by default it reads
// the kernel's coarse monotonic clock (a few nanoseconds, ticks of a few
// milliseconds: plenty to tell a 100 ms operation). When somebody needs
// finer durations (a profiler on, a slow-op threshold under 50 ms) the
// engine switches it to the precise clock (about 25 ns a read). Tests inject
// their own clock (EngineOptions::clock) so that no test waits for time.
//
// Thread safety: now() from any thread; setPrecise() from any thread.
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>
#include <functional>

namespace mvkv::engine {

class OpClock {
  public:
    explicit OpClock(std::function<int64_t()> injected) : injected_(std::move(injected)) {}

    [[gnu::always_inline]] int64_t now() const {
        if (injected_) [[unlikely]]
            return injected_();
        return read(precise_.load(std::memory_order_relaxed) ? CLOCK_MONOTONIC
                                                              : CLOCK_MONOTONIC_COARSE);
    }
    void setPrecise(bool precise) { precise_.store(precise, std::memory_order_relaxed); }

  private:
    static int64_t read(clockid_t id) {
        timespec ts;
        clock_gettime(id, &ts);
        return int64_t(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000;
    }

    const std::function<int64_t()> injected_;
    std::atomic<bool> precise_{false};
};

}  // namespace mvkv::engine
