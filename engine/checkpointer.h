// Checkpointer: writes checkpoints of a durable engine — every collection as
// of one timestamp (TransactionManager::chooseCheckpointTimestamp: stable,
// never past all_durable) — on demand and from a background thread, keeps
// the newest few, and caps the oplog behind the oldest one kept. It also
// loads the newest valid checkpoint at open. File format and crash safety:
// checkpoint/checkpoint_file.h; the recovery argument: docs/oplog.md.
//
// The timestamp C is pinned from the moment it is chosen until the read at
// C ends (mvcc::TimestampPin): a caller may move oldest (and stable) past C
// meanwhile, and sweep history, without failing the checkpoint or
// discarding a version it reads.
//
// Thread safety: checkpoint() from any thread (one runs at a time); the
// background thread is stopped by stop() or the destructor, which the
// engine calls before anything the checkpoint reads goes away. stats() from
// any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "checkpoint/loaded_checkpoint.h"
#include "mvcc/timestamp.h"
#include "oplog/log_writer.h"
#include "util/status.h"

namespace mvkv::engine {

class Engine;

struct CheckpointStats {
    uint64_t started = 0;  // attempts since open (count + failures, plus one running)
    uint64_t count = 0;    // written since open
    uint64_t failures = 0;
    std::map<std::string, uint64_t> failuresByReason;  // StatusCode name -> failures
    mvcc::Timestamp lastTs = mvcc::kNoTimestamp;       // newest on disk (also one loaded at open)
    uint64_t lastNumber = 0;
    uint64_t lastEntries = 0;
    uint64_t lastBytes = 0;
    uint64_t lastMicros = 0;  // how long the newest one written took
    /// The timestamp C the newest attempt chose (0: none could be taken).
    mvcc::Timestamp lastAttemptTs = mvcc::kNoTimestamp;
    std::string lastError;    // the newest attempt's error; cleared when one succeeds
    std::string lastFailure;  // the newest failure ("Code: message"), kept after successes
    mvcc::Timestamp lastFailureTs = mvcc::kNoTimestamp;  // the C that failure chose
};

/// What open() loaded (checkpoint/loaded_checkpoint.h: recovery/ below
/// the engine reads it too).
using checkpoint::LoadedCheckpoint;

class Checkpointer {
  public:
    explicit Checkpointer(Engine& engine) : engine_(engine) {}
    ~Checkpointer() { stop(); }
    Checkpointer(const Checkpointer&) = delete;
    Checkpointer& operator=(const Checkpointer&) = delete;

    /// Loads the newest checkpoint whose every checksum holds into the
    /// (empty) engine, falling back to older ones; none is fine. Corruption
    /// when checkpoints exist, none is valid and the oplog no longer holds
    /// everything from the start.
    Status load(LoadedCheckpoint* out);
    /// Writes one checkpoint now, then prunes old ones and caps the oplog.
    Status checkpoint();
    /// Starts the periodic thread (0: none).
    void start(std::chrono::milliseconds interval);
    void stop();
    CheckpointStats stats() const;
    /// For tests: `hook` runs inside every later checkpoint(), on its
    /// thread, after the timestamp C (its argument) was chosen and pinned
    /// and the file created, just before the read at C begins. It holds no
    /// engine lock but the checkpoint's own: it may commit, move oldest and
    /// stable, and sweep history, but not call checkpoint(). Waits for a
    /// running checkpoint; an empty function removes the hook.
    void setTestHook(std::function<void(mvcc::Timestamp)> hook);
    /// For tests: `hook` runs inside every later checkpoint() between taking
    /// the log position P and choosing the timestamp C, under the mutex that
    /// orders catalog changes with checkpoints: it may run data commits on
    /// other threads and wait for them, but no catalog change and no
    /// checkpoint(). An empty function removes it.
    void setPositionTestHook(std::function<void()> hook);

  private:
    void run(std::chrono::milliseconds interval);
    /// Removes leftover temp files and every checkpoint numbered below `number`.
    Status removeCheckpointsBefore(uint64_t number);

    Engine& engine_;
    std::mutex runMutex_;  // one checkpoint at a time; guards kept_ and the test hooks
    struct Kept {
        uint64_t number;
        mvcc::Timestamp ts;
        oplog::LogPosition logEnd;
    };
    std::deque<Kept> kept_;  // checkpoints on disk this process knows valid, oldest first
    std::function<void(mvcc::Timestamp)> testHook_;
    std::function<void()> positionTestHook_;  // GUARDED_BY(runMutex_)
    mutable std::mutex statsMutex_;
    CheckpointStats stats_;
    std::mutex threadMutex_;
    std::condition_variable wake_;
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace mvkv::engine
