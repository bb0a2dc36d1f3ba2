// FailPoint: one named failpoint, the engine's side of mvkv/failpoint.h
// (docs/failpoints.md).
//
// A failpoint is a static object named in failpoint/failpoints.h. Where it
// sits, code asks it whether it fires at this pass:
//
//     if (auto fired = failpoint::failOplogFsync.check())
//         return Status::IOError("...");
//
// Off, check() is one relaxed load of `armed_` and a predicted branch: the
// mode, its counters and the data live behind the mutex, taken only while
// the failpoint is armed.
//
// Thread safety: every method from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "mvkv/failpoint.h"

namespace mvkv::failpoint {

class FailPoint {
  public:
    /// Registers itself under `name` (failpoint/failpoints.cpp defines them all).
    FailPoint(std::string_view name, std::string_view description);
    FailPoint(const FailPoint&) = delete;
    FailPoint& operator=(const FailPoint&) = delete;

    /// Its data when it fires at this pass; nullopt (nearly always) otherwise.
    std::optional<FailPointData> check() {
        if (!armed_.load(std::memory_order_relaxed)) [[likely]]
            return std::nullopt;
        return checkSlow(nullptr, nullptr);
    }
    /// A per-key failpoint: fires only for its data's key (every key when
    /// that is empty); a pass for another key counts for nothing.
    std::optional<FailPointData> checkKey(std::string_view key) {
        if (!armed_.load(std::memory_order_relaxed)) [[likely]]
            return std::nullopt;
        return checkSlow(&key, nullptr);
    }
    /// A hang failpoint: when it fires, sleeps its delayMs, or with none
    /// blocks until the failpoint is configured off (or to another mode).
    void pauseIfFires() {
        if (!armed_.load(std::memory_order_relaxed)) [[likely]]
            return;
        pauseSlow();
    }

    /// Not off: for a fast path that leaves an armed failpoint to its slow path.
    bool armed() const { return armed_.load(std::memory_order_relaxed); }
    const std::string& name() const { return name_; }
    const std::string& description() const { return description_; }
    FailPointInfo info() const;
    /// Sets the mode and data; returns timesEntered at that moment.
    uint64_t configure(const FailPointMode& mode, const FailPointData& data);
    /// See waitForFailPoint (mvkv/failpoint.h).
    Status waitForTimesEntered(uint64_t timesEntered, std::chrono::milliseconds timeout);

  private:
    /// `generation`: set to the configuration the pass fired under (read
    /// with the decision, so a reconfiguration right after it is seen).
    std::optional<FailPointData> checkSlow(const std::string_view* key, uint64_t* generation);
    void pauseSlow();

    const std::string name_;
    const std::string description_;
    std::atomic<bool> armed_{false};  // mode_ is not off
    mutable std::mutex mutex_;
    std::condition_variable changed_;  // timesEntered_ grew or the mode changed
    FailPointMode mode_;               // GUARDED_BY(mutex_)
    FailPointData data_;               // GUARDED_BY(mutex_)
    uint64_t remaining_ = 0;           // GUARDED_BY(mutex_): times left / passes to skip
    uint64_t timesEntered_ = 0;        // GUARDED_BY(mutex_)
    uint64_t generation_ = 0;          // GUARDED_BY(mutex_): configure() calls
};

/// Applies the environment variable MVKV_FAILPOINTS (mvkv/failpoint.h's
/// text form) the first time it is called in a process; later calls return
/// the first call's status (Engine::open calls it and fails with it, so a
/// mistyped failpoint is never silently off).
Status applyEnvironmentOnce();

/// Crash points for tests (failpoint abortProcess, its key the point's
/// name): when abortProcess fires for `point`, the process dies at once by
/// SIGKILL, as `kill -9` would stop it there (no destructor, no flush).
void crashPoint(std::string_view point);

}  // namespace mvkv::failpoint
