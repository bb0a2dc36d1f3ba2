// TtlMonitor: deletes the expired entries of TTL collections (docs/ttl.md),
// as MongoDB's TTLMonitor does, from a background thread that wakes every
// EngineOptions::ttlMonitorSleep, and on demand (Engine::runTtlPass).
//
// A pass, for each TTL collection in turn:
// - takes now = Engine::wallClockMs() once, then scans the collection (a
//   yielding range walk, IS locks, its own snapshot) for entries whose expiry
//   (engine/ttl_value.h: explicit, or write time + expireAfterSeconds as it is
//   now) is at or before now. A scan, not an expiry index: the data is the
//   only truth that replay, checkpoint loads and replicas keep, so nothing
//   can drift out of step with it; a pass costs O(entries) of the TTL
//   collections (the lock collections it serves are small).
// - deletes each found entry in an ordinary transaction of its own that
//   reads the entry again and deletes it only if it is still expired at
//   `now`: a refresh committed since the scan is seen and kept, and one
//   running concurrently makes the delete a write conflict, which skips the
//   entry until the next pass (never retried in the pass: the writer is
//   likely refreshing it). Deletes are ordinary writes: in the oplog,
//   replicated, in the key's history.
//
// A collection whose lock the pass does not get within kLockTimeout (1 s, or
// EngineOptions::lockTimeout when shorter) is skipped until the next pass:
// one held in X (a drop queued behind a long transaction) does not hold up
// the others, the engine's close, or a shell whose foreground holds the lock.
//
// Passes never run on a replica's secondary (setSecondary: it receives its
// primary's deletes through the oplog) nor once stop() began.
//
// Thread safety: every method may be called from any thread; passes run one
// at a time. The engine calls stop() before anything a pass uses goes away.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string_view>
#include <thread>

#include "util/status.h"

namespace mvkv::engine {

class Engine;
class Session;

/// What one pass did.
struct TtlPassResult {
    uint64_t collections = 0;          // TTL collections scanned
    uint64_t expired = 0;              // entries the scan found expired
    uint64_t deleted = 0;              // of those, deleted
    uint64_t skippedConflicts = 0;     // left for the next pass: a write conflict
    uint64_t skippedLockTimeouts = 0;  // collections left for the next pass: a lock wait timed out
    int64_t nowMs = 0;  // the wall-clock time the pass judged by (its last collection's)
};

/// The monitor's figures since the engine opened (serverStatus metrics.ttl).
struct TtlStats {
    uint64_t passes = 0;  // passes run (background and on demand)
    uint64_t deletedDocuments = 0;
    uint64_t skippedConflicts = 0;
    uint64_t skippedLockTimeouts = 0;
    uint64_t failedPasses = 0;  // passes that stopped on an error
    bool secondary = false;     // passes are refused (a replica's secondary)
};

class TtlMonitor {
  public:
    static constexpr std::chrono::milliseconds kLockTimeout{1000};

    explicit TtlMonitor(Engine& engine) : engine_(engine) {}
    ~TtlMonitor() { stop(); }
    TtlMonitor(const TtlMonitor&) = delete;
    TtlMonitor& operator=(const TtlMonitor&) = delete;

    /// Starts the background thread (sleep 0: none).
    void start(std::chrono::milliseconds sleep);
    /// From here no pass begins; waits for a running one (interrupting its
    /// lock waits) and joins the thread. Idempotent.
    void stop();

    /// One pass now. IllegalOperation on a secondary or once stop() began;
    /// otherwise the first error that stopped the pass (an I/O error of the
    /// oplog, an interrupt): the entries deleted before it stay deleted.
    StatusWith<TtlPassResult> runPass();

    /// On: no pass runs from here on (waits for a running one to end).
    void setSecondary(bool on);
    bool secondary() const { return secondary_.load(std::memory_order_acquire); }
    TtlStats stats() const;
    /// A test seam: `hook` runs in every later pass between its scan and the
    /// delete transaction of each expired entry it found (on the pass's
    /// thread; it must not run a pass).
    void setTestHook(std::function<void(std::string_view ns, std::string_view key)> hook);

  private:
    void run(std::chrono::milliseconds sleep);
    /// Deletes `key` of `ns` if it is still expired at `nowMs`, in a
    /// transaction of its own: *deleted, or *conflict when a concurrent
    /// write made the delete a write conflict.
    Status deleteIfExpired(Session& session, const std::string& ns, const std::string& key,
                           int64_t nowMs, bool* deleted, bool* conflict);

    Engine& engine_;
    std::mutex passMutex_;  // held for a whole pass: one at a time
    std::atomic<bool> stopping_{false};
    std::atomic<bool> secondary_{false};
    std::mutex sessionMutex_;
    Session* running_ = nullptr;  // GUARDED_BY(sessionMutex_): the pass's session, for stop()
    std::atomic<uint64_t> passes_{0}, deleted_{0}, conflicts_{0}, lockTimeouts_{0}, failed_{0};
    std::function<void(std::string_view, std::string_view)> testHook_;  // GUARDED_BY(passMutex_)

    std::mutex wakeMutex_;
    std::condition_variable wake_;
    bool stop_ = false;  // GUARDED_BY(wakeMutex_)
    std::thread thread_;
};

}  // namespace mvkv::engine
