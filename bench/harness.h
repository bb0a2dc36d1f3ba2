// Timing harness shared by every mvkv-bench workload.
//
// runParallel(threads, limits, factory) starts `threads` threads. Each one
// calls factory(threadIndex) to build its worker (per-thread state such as a
// Locker is created here, on the thread that uses it), runs a few warm-up ops,
// then waits at a start barrier. Once every thread has arrived the main
// thread releases them together; the timed region of a thread starts when it
// leaves the barrier and ends after its last op, so thread creation, setup
// and warm-up are never timed. Threads stop when the main thread raises the
// stop flag after `limits.seconds` (checked every kStopCheckInterval ops), or
// after exactly `limits.opsPerThread` ops.
//
// A worker is any callable `void()` doing one operation. It reports a failure
// by throwing (std::exception): the thread stops and Measurement::error says
// why. Throwing only on failure keeps the happy path free of checks.
//
// Besides wall time each thread reads its own CPU clock: cpuPercent (CPU time
// / wall time over all threads) is ~100% for a thread that never blocks, so a
// lower figure on an uncontended case means other processes took the CPU.
//
// With RunLimits::recordLatency each op's latency goes into the thread's
// LatencyHistogram (merged into Measurement::latency): the clock is read once
// per op, the end of one op being the start of the next, so the loop's own
// cost (choosing a key) is counted in it, as it is in ops/s.
//
// The worker is a template parameter, so its operation is inlined into the
// timing loop: no std::function call is measured.
#pragma once

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "latency_histogram.h"
#include "workload.h"
#include "mvkv/status.h"

namespace mvkv::bench {

struct RunLimits {
    double seconds = 1.0;
    uint64_t opsPerThread = 0;  // > 0: fixed count, `seconds` ignored
    uint64_t warmupOps = 1000;  // per thread, before the barrier
    bool recordLatency = false;  // per-op latencies into Measurement::latency
};

struct Measurement {
    int threads = 0;
    uint64_t totalOps = 0;
    double wallSeconds = 0;       // earliest thread start to latest thread end
    double nsPerOpPerThread = 0;  // mean over threads of (own elapsed / own ops)
    double cpuPercent = 0;        // sum of thread CPU time / sum of thread wall time
    std::string error;            // first failure of any thread
    LatencyHistogram latency;     // per op, all threads (with RunLimits::recordLatency)

    double opsPerSec() const { return wallSeconds > 0 ? double(totalOps) / wallSeconds : 0; }
};

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

inline constexpr uint64_t kStopCheckInterval = 16;

/// CPU time consumed by the calling thread, in ns.
inline int64_t threadCpuNanos() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

template <class Factory>
Measurement runParallel(int threads, const RunLimits& limits, Factory&& factory) {
    using Clock = std::chrono::steady_clock;
    struct alignas(64) PerThread {
        uint64_t ops = 0;
        Clock::time_point begin{};
        Clock::time_point end{};
        int64_t cpuNanos = 0;
        std::string error;
        LatencyHistogram latency;
    };
    std::vector<PerThread> per(static_cast<size_t>(threads));
    std::atomic<int> arrived{0};
    std::atomic<bool> go{false};
    std::atomic<bool> stop{false};

    auto body = [&](int index) {
        PerThread& me = per[static_cast<size_t>(index)];
        bool atBarrier = false;
        try {
            auto op = factory(index);
            for (uint64_t i = 0; i < limits.warmupOps; ++i)
                op();
            atBarrier = true;
            arrived.fetch_add(1, std::memory_order_release);
            while (!go.load(std::memory_order_acquire))
                cpuRelax();

            int64_t cpuBegin = threadCpuNanos();
            me.begin = Clock::now();
            uint64_t ops = 0;
            // The timed loop, for `step` = op() alone or op() and its latency.
            auto loop = [&](auto&& step) {
                if (limits.opsPerThread > 0) {
                    for (; ops < limits.opsPerThread; ++ops)
                        step();
                    return;
                }
                do {
                    for (uint64_t i = 0; i < kStopCheckInterval; ++i)
                        step();
                    ops += kStopCheckInterval;
                } while (!stop.load(std::memory_order_relaxed));
            };
            if (limits.recordLatency) {
                Clock::time_point prev = me.begin;
                loop([&] {
                    op();
                    Clock::time_point now = Clock::now();
                    me.latency.record(static_cast<uint64_t>(
                        std::chrono::duration_cast<std::chrono::nanoseconds>(now - prev).count()));
                    prev = now;
                });
            } else {
                loop(op);
            }
            me.end = Clock::now();
            me.cpuNanos = threadCpuNanos() - cpuBegin;
            me.ops = ops;
        } catch (const std::exception& e) {
            me.error = e.what();
        } catch (...) {
            me.error = "unknown exception";
        }
        if (!atBarrier)
            arrived.fetch_add(1, std::memory_order_release);
    };

    std::vector<std::thread> pool;
    pool.reserve(static_cast<size_t>(threads));
    for (int i = 0; i < threads; ++i)
        pool.emplace_back(body, i);
    while (arrived.load(std::memory_order_acquire) < threads)
        std::this_thread::yield();
    go.store(true, std::memory_order_release);
    if (limits.opsPerThread == 0) {
        std::this_thread::sleep_for(std::chrono::duration<double>(limits.seconds));
        stop.store(true, std::memory_order_relaxed);
    }
    for (std::thread& t : pool)
        t.join();

    Measurement m;
    m.threads = threads;
    Clock::time_point first = Clock::time_point::max();
    Clock::time_point last = Clock::time_point::min();
    double nsSum = 0;
    double wallNanosSum = 0;
    double cpuNanosSum = 0;
    for (const PerThread& p : per) {
        if (!p.error.empty()) {
            if (m.error.empty())
                m.error = p.error;
            continue;
        }
        first = std::min(first, p.begin);
        last = std::max(last, p.end);
        m.totalOps += p.ops;
        m.latency.merge(p.latency);
        double ns = std::chrono::duration<double, std::nano>(p.end - p.begin).count();
        nsSum += p.ops > 0 ? ns / double(p.ops) : 0;
        wallNanosSum += ns;
        cpuNanosSum += double(p.cpuNanos);
    }
    if (!m.error.empty())
        return m;
    m.wallSeconds = std::chrono::duration<double>(last - first).count();
    m.nsPerOpPerThread = nsSum / double(threads);
    // The two clocks tick differently: clamp the few-% overshoot to 100.
    m.cpuPercent = wallNanosSum > 0 ? std::min(100.0, 100.0 * cpuNanosSum / wallNanosSum) : 0;
    return m;
}

/// Calls `runOnce()` `repeat` times and returns the median run by
/// `opsPerSec(run)`; the first failing run (non-empty `error`) is returned as
/// is. Works for a Measurement and for a ResultRow.
template <class RunOnce, class OpsPerSec>
auto medianRun(int repeat, RunOnce&& runOnce, OpsPerSec&& opsPerSec) {
    using Run = decltype(runOnce());
    std::vector<Run> runs;
    for (int i = 0; i < std::max(repeat, 1); ++i) {
        Run r = runOnce();
        if (!r.error.empty())
            return r;
        runs.push_back(std::move(r));
    }
    std::sort(runs.begin(), runs.end(),
              [&](const Run& a, const Run& b) { return opsPerSec(a) < opsPerSec(b); });
    return runs[runs.size() / 2];
}

/// medianRun() of Measurements.
template <class RunOnce>
Measurement repeatRuns(int repeat, RunOnce&& runOnce) {
    return medianRun(repeat, runOnce, [](const Measurement& m) { return m.opsPerSec(); });
}

/// A worker's (or a set-up's) failure: throws, as runParallel expects,
/// with `what` and the status.
inline void must(const Status& s, std::string_view what) {
    if (!s.ok())
        throw std::runtime_error(std::string(what) + ": " + s.toString());
}

/// must() for a StatusWith: its value once it holds one.
template <class T>
T mustValue(StatusWith<T>&& result, std::string_view what) {
    must(result.status(), what);
    return std::move(result).value();
}

// ---- Glue between the harness and the workload API ----

/// The limits --duration and --ops ask for. With --ops N the warm-up is at
/// most N ops too: a short fixed run (the test suite's) should not spend its
/// time on 1,000 warm-up fsyncs per thread.
inline RunLimits limitsFor(const BenchConfig& config) {
    RunLimits limits;
    limits.seconds = config.durationSeconds;
    limits.opsPerThread = config.opsPerThread;
    if (limits.opsPerThread > 0)
        limits.warmupOps = std::min(limits.warmupOps, limits.opsPerThread);
    return limits;
}

/// The result row of one case at one thread count (no metrics yet).
inline ResultRow toRow(std::string_view workload, std::string_view caseName, int threads,
                       const Measurement& m) {
    ResultRow row;
    row.workload = std::string(workload);
    row.caseName = std::string(caseName);
    row.threads = threads;
    row.ops = m.totalOps;
    row.seconds = m.wallSeconds;
    row.opsPerSec = m.opsPerSec();
    row.nsPerOp = m.nsPerOpPerThread;
    row.cpuPercent = m.cpuPercent;
    row.error = m.error;
    return row;
}

}  // namespace mvkv::bench
