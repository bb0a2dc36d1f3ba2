// EngineOptions: how an engine is opened. Every field has a usable default.
#pragma once

#include <chrono>
#include <functional>
#include <string_view>
#include <cstddef>
#include <optional>
#include <string>

#include "lockmgr/lock_manager.h"
#include "oplog/log_writer.h"

namespace mvkv::engine {

struct EngineOptions {
    /// Data directory. With a path (and inMemory false) every commit and
    /// catalog change is appended to the oplog there and replayed by the
    /// next open (recovery/durable_log.h); empty, or inMemory, means no files.
    std::string path;
    bool inMemory = false;
    /// Opens it as a replica's secondary (Engine::setSecondary) from the
    /// start: a TTL pass or a client write between the open and the
    /// applier's start would put a write of its own into its data and oplog.
    bool secondary = false;
    /// How durable an acknowledged commit is on a data directory: fsync
    /// (survives the machine; the default), write (survives the process)
    /// or none (left to the OS and the log's buffer).
    oplog::SyncMode syncMode = oplog::SyncMode::kFsync;
    /// Opening a data directory whose oplog is damaged (not a torn tail,
    /// which is always cut) fails with Corruption and changes nothing.
    /// With repair the log is cut at the damage instead, after every
    /// segment cut is copied to DIR/salvage/<time>/ and the commits lost
    /// are listed in DIR/repair.json, which every later open reports until
    /// Engine::clearRepairRecord (recovery/log_repair.h; the shell's --repair
    /// and `repair clear`).
    bool repair = false;

    /// The oplog on a data directory (docs/oplog.md): its cap (whole
    /// segments beyond it are dropped once the oldest checkpoint kept no
    /// longer needs them) and its segment size.
    uint64_t oplogCapBytes = 1ull << 30;
    uint64_t oplogSegmentBytes = 64ull << 20;
    /// The oplog of an in-memory engine (docs/oplog.md, "In memory"): kept
    /// in memory, capped by payload bytes (the oldest records go first);
    /// 0 keeps none (no oplog, tail, replica of it or change stream).
    /// With an oplog, commits are in timestamp order as on a durable engine
    /// (docs/oplog.md, "Commit order"); 0 gives WiredTiger's freer rules.
    uint64_t inMemoryOplogCapBytes = 64ull << 20;
    /// Checkpoints on a data directory: how often the background thread
    /// writes one (0: only Engine::checkpoint()), and how many stay on disk
    /// (the newest falls back to the older ones if it is found corrupt).
    std::chrono::milliseconds checkpointInterval{60000};
    size_t checkpointsKept = 2;

    /// Limits on what one write may carry; larger is InvalidArgument.
    size_t maxKeyBytes = 4 * 1024;
    size_t maxValueBytes = 16 * 1024 * 1024;

    /// How long an implicit single-operation write keeps retrying after
    /// write conflicts before it returns WriteConflict (MongoDB: forever;
    /// here a deadline, so a harness never hangs). Sessions may override.
    std::chrono::milliseconds writeConflictRetryTimeout{5000};
    /// Longest wait for a lock (and ticket) per operation; nullopt waits as
    /// long as it takes, as MongoDB does by default. Sessions may override.
    std::optional<std::chrono::milliseconds> lockTimeout;

    /// The history sweep (docs/history.md): how often the background pass
    /// runs (0: never; sweeps then happen on demand and through the
    /// long-chain trigger only), and the chain depth past which a write
    /// sweeps its key's chain at once, and again every chainSweepBound
    /// versions (0: never; at most 254). A write's sweep frees what no
    /// reader can reach; it moves versions to the history store only once
    /// the chain is HistorySweeper::kKeyMoveDepth (128) deep.
    std::chrono::milliseconds historySweepInterval{1000};
    unsigned chainSweepBound = 8;

    lockmgr::LockManagerOptions locks;

    // ---- Operations (docs/operations.md) ----

    /// The slow-op log: an operation that runs longer than this is written
    /// as one structured line (settable at run time: Engine::setSlowOp).
    std::chrono::milliseconds slowOpThreshold{100};
    /// The fraction of slow operations logged (0..1).
    double slowOpSampleRate = 1.0;
    /// Lines kept in memory for getLog (the shell's `show log`).
    size_t slowOpRingLines = 1024;
    /// Every slow-op line also goes here (a harness's sink), on the thread
    /// of the operation; it must not call back into the engine.
    std::function<void(std::string_view line)> logSink;
    /// `<path>/mvkv.log` rotation: bytes per file and rotated files kept.
    size_t logFileBytes = 64ull << 20;
    size_t logFilesKept = 4;
    /// Yielding (seed 000): a scan, count or multi-key write outside a
    /// transaction releases its locks and snapshot every this many keys or
    /// this long, whichever comes first (0: that trigger is off).
    uint64_t yieldIterations = 1000;
    std::chrono::milliseconds yieldPeriod{10};
    /// The operation clock in microseconds (monotonic). Empty: the system's.
    /// Tests inject one so that "slow" never needs real time to pass.
    std::function<int64_t()> clock;
    /// The TTL monitor (docs/ttl.md): how often its background thread runs a
    /// pass that deletes expired entries of TTL collections (MongoDB's
    /// ttlMonitorSleepSecs, 60 s there; 0: no thread, passes run only
    /// through Engine::runTtlPass).
    std::chrono::milliseconds ttlMonitorSleep{1000};
    /// The wall clock in milliseconds since the Unix epoch, for what expires
    /// (TTL collections, document locks). Empty: the system's. Tests inject
    /// one and move it forward instead of waiting.
    std::function<int64_t()> wallClock;
};

}  // namespace mvkv::engine
