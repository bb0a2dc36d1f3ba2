// Engine: an open mvkv database — the catalog of collections, the
// transaction manager, the lock manager — and the factory of sessions.
//
// Usage:
//   auto engine = Engine::open({});            // in memory
//   auto session = engine.value()->openSession();
//   session->createCollection("app.users");
//   session->put("app.users", "alice", "1");
//
// Thread safety: every Engine method may be called from any thread. Sessions
// are one per thread at a time. Every Session (and Cursor) must be destroyed
// before its Engine.
#pragma once

#include <atomic>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>

#include "engine/catalog.h"
#include "engine/checkpointer.h"
#include "engine/document_lock_state.h"
#include "engine/engine_options.h"
#include "engine/engine_stats.h"
#include "engine/history_sweeper.h"
#include "engine/majority_commit_point.h"
#include "engine/op_clock.h"
#include "engine/op_registry.h"
#include "engine/prepared_transactions.h"
#include "engine/profiler.h"
#include "engine/slow_op_log.h"
#include "engine/ttl_monitor.h"
#include "engine/write_concern.h"
#include "historystore/history_store.h"
#include "oplog/oplog_cursor.h"
#include "oplog/oplog_entry.h"
#include "lockmgr/lock_manager.h"
#include "mvcc/txn_manager.h"
#include "recovery/durable_log.h"
#include "util/epoch.h"
#include "util/status.h"

namespace mvkv::engine {

class Session;

/// What opening a data directory found (zeros for an in-memory engine).
struct RecoveryStats {
    bool durable = false;
    bool checkpointLoaded = false;
    uint64_t checkpointNumber = 0;
    mvcc::Timestamp checkpointTs = mvcc::kNoTimestamp;
    uint64_t checkpointEntries = 0;
    uint64_t checkpointsSkipped = 0;  // newer ones found corrupt
    std::string checkpointSkipReason;
    uint64_t recordsInLog = 0;     // good records found in the oplog
    uint64_t recordsReplayed = 0;  // of those, applied (the rest the checkpoint held)
    uint64_t entriesReplayed = 0;
    bool tailCut = false;  // the log was cut: a torn tail, or a repair
    uint64_t cutSegment = 0;
    uint64_t cutOffset = 0;
    uint64_t cutBytes = 0;
    std::string cutReason;
    /// What the log's damage was judged ("none", "torn tail", "corruption":
    /// only with repair), its file, and the good records found past it.
    std::string damage = "none";
    std::string damageFile;
    uint64_t recordsAfterDamage = 0;
    /// The previous close was clean (the clean-shutdown note was there).
    bool cleanShutdown = false;
    /// This open repaired the log (EngineOptions::repair), and what it lost.
    bool repaired = false;
    uint64_t repairLostCommits = 0;
    std::string salvageDir;
    /// The repair record (recovery/log_repair.h) as a JSON array, "[]" when
    /// none; reported by every open until Engine::clearRepairRecord.
    std::string repairsJson = "[]";
    uint64_t repairs = 0;
    uint64_t micros = 0;  // time to open and replay
};

class Engine {
  public:
    /// Opens an engine. InvalidArgument for impossible options (a zero key
    /// limit, ...).
    static StatusWith<std::unique_ptr<Engine>> open(EngineOptions options = {});
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    std::unique_ptr<Session> openSession();
    /// Creates a collection from inside the engine (the profiler's
    /// `<db>.system.profile`, capped): as Session::createCollection, logged
    /// and replicated the same way, on a session of its own.
    Status createCollection(std::string_view ns, const CollectionOptions& options = {});

    /// Writes a checkpoint now (docs/oplog.md): every collection as of the
    /// stable timestamp (all_durable when none is set; never past it), then
    /// drops old checkpoints and caps the oplog. IllegalOperation in
    /// memory; Busy when no checkpoint timestamp can be taken now.
    Status checkpoint();
    /// A test seam (Checkpointer::setTestHook): `hook` runs inside every
    /// later checkpoint() after its timestamp C was chosen and pinned, just
    /// before the read at C. A no-op in memory.
    void setCheckpointTestHook(std::function<void(mvcc::Timestamp)> hook);
    /// A test seam (Checkpointer::setPositionTestHook): `hook` runs between
    /// the checkpoint's log position and its timestamp. A no-op in memory.
    void setCheckpointPositionTestHook(std::function<void()> hook);
    /// The engine's oplog: its stats and visibility. On a data directory the
    /// durable one; in memory the in-memory one (null when
    /// EngineOptions::inMemoryOplogCapBytes is 0).
    oplog::Oplog* oplog();
    /// Reads the oplog from a timestamp (oplog/oplog_cursor.h).
    /// IllegalOperation for an engine without an oplog.
    StatusWith<std::unique_ptr<oplog::OplogCursor>> openOplogCursor(
        oplog::OplogCursorOptions options);

    /// The majority commit point (engine/majority_commit_point.h): while a
    /// replica set is attached, the newest timestamp a majority of its
    /// members made durable; standalone, the engine's own durable point
    /// (the oplog's visible timestamp, the in-memory oplog's in memory;
    /// all_durable for an in-memory engine without an oplog).
    mvcc::Timestamp majorityCommitTs() const;
    /// Waits until majorityCommitTs() > `after` or `deadline`; returns it.
    mvcc::Timestamp waitMajorityCommitAfter(mvcc::Timestamp after,
                                            std::chrono::steady_clock::time_point deadline);
    /// For a replica set (docs/replication.md): attach, advance, detach.
    MajorityCommitPoint& majorityCommitPoint() { return majority_; }
    /// The replica set this engine is the primary of (replication/replica_set.h
    /// installs it; null: standalone). Held while a commit waits on it.
    void setReplicationCoordinator(std::shared_ptr<ReplicationCoordinator> coordinator);
    std::shared_ptr<ReplicationCoordinator> replicationCoordinator() const;
    /// Before a commit with `wc` (engine/write_concern.h): InvalidArgument
    /// for w < 1, for more members than the set has, and for w > 1 on a
    /// standalone engine.
    Status checkWriteConcern(const WriteConcern& wc) const;
    /// After a commit at `ts`: waits until `wc` is met (standalone:
    /// majority is the engine's own durable point). WriteConcernTimeout
    /// after wtimeout, the write committed all the same.
    Status awaitWriteConcern(mvcc::Timestamp ts, const WriteConcern& wc);

    // --- prepared transactions (docs/mvcc.md, "Prepared transactions") ---

    /// Every prepared transaction not yet committed or aborted: those a
    /// session prepared (sessionId), and those the engine owns (sessionId
    /// 0): rebuilt from the oplog after a restart, or kept when the session
    /// that prepared them closed; only the calls below end those.
    std::vector<PreparedTxnInfo> preparedTransactions() const { return prepared_.list(); }
    /// Commits engine-owned prepared transaction `txnId` as Session::commit(
    /// commitTs, durableTs) does (logged; a refused timestamp leaves it
    /// prepared). NotFound when no such transaction has that id;
    /// IllegalOperation when an open session holds it (commit it there).
    Status commitPrepared(mvcc::TxnId txnId, mvcc::Timestamp commitTs, mvcc::Timestamp durableTs);
    /// Aborts engine-owned prepared transaction `txnId` (logged). Errors as
    /// commitPrepared.
    Status abortPrepared(mvcc::TxnId txnId);

    /// WiredTiger's set_timestamp / query_timestamp.
    Status setOldestTimestamp(mvcc::Timestamp ts) { return txns_.setOldest(ts); }
    Status setStableTimestamp(mvcc::Timestamp ts) { return txns_.setStable(ts); }
    mvcc::Timestamps timestamps() const { return txns_.timestamps(); }

    std::vector<std::string> listDatabases() const { return catalog_.databases(); }
    std::vector<std::string> listCollections(std::string_view db) const {
        return catalog_.collections(db);
    }

    /// Runs one whole history sweep now (as the background thread does):
    /// superseded versions move to the history store or, when no reader can
    /// need them, are freed; obsolete history is discarded. Must not be
    /// called while this thread holds an open transaction's cursor pin (it
    /// never is through the public API).
    void sweepHistory() { sweeper_.sweepAll(); }
    /// A test seam: one pass as the background thread runs it (it may skip
    /// the walk of the tree; HistorySweeper::backgroundPass).
    void backgroundHistoryPass() { sweeper_.backgroundPass(); }
    /// A test seam (HistorySweeper::setPassTestHook).
    void setHistoryPassTestHook(std::function<void()> hook) {
        sweeper_.setPassTestHook(std::move(hook));
    }

    /// Every figure at once. Walks every update chain for the chain figures:
    /// O(keys), meant for shells, tests and benchmarks, not hot paths.
    EngineStats stats() const;
    /// stats() plus the lock manager's serverStatus sections, as JSON.
    std::string statsJson() const;

    // --- operations (docs/operations.md) ---

    /// MongoDB's currentOp: {"inprog":[...]} with every running operation
    /// and, with `all`, every open explicit transaction even when idle.
    std::string currentOp(bool all = false);
    /// MongoDB's killOp: the operation stops with Interrupted at its next
    /// interrupt point (a lock or ticket wait, a write-conflict retry, a
    /// yield, every 128 keys of a scan); inside an explicit transaction the
    /// transaction is aborted. NotFound when no running operation has that
    /// opid (it finished, or never was).
    Status killOp(uint64_t opid);
    /// serverStatus as JSON: every section, or one ("locks", "globalLock",
    /// "opcounters", ...). InvalidArgument names the sections for an unknown one.
    StatusWith<std::string> serverStatus(std::string_view section = {});
    /// The slow-op threshold and sample rate (MongoDB's slowms and
    /// sampleRate, shared with the profiler). InvalidArgument when out of range.
    Status setSlowOp(int64_t slowMs, double sampleRate);
    SlowOpLog& slowOpLog() { return *slowLog_; }
    Profiler& profiler() { return *profiler_; }

    // --- TTL collections (docs/ttl.md) ---

    /// One TTL monitor pass now, as the background thread runs every
    /// EngineOptions::ttlMonitorSleep: deletes the expired entries of every
    /// TTL collection, each in a transaction of its own (engine/ttl_monitor.h).
    /// IllegalOperation on a secondary or once the engine is closing; the
    /// error that stopped the pass otherwise (what it deleted stays deleted).
    StatusWith<TtlPassResult> runTtlPass() { return ttlMonitor_->runPass(); }
    /// A test seam (TtlMonitor::setTestHook): `hook` runs in every later
    /// pass between its scan and the delete of each expired entry it found.
    void setTtlTestHook(std::function<void(std::string_view ns, std::string_view key)> hook) {
        ttlMonitor_->setTestHook(std::move(hook));
    }
    /// The monitor's figures since open (serverStatus metrics.ttl).
    TtlStats ttlStats() const { return ttlMonitor_->stats(); }
    /// A replica's secondary (EngineOptions::secondary, or
    /// ReplicaApplier::start): its TTL monitor runs no pass, since its
    /// primary's deletes reach it through the oplog; clients' writes and
    /// catalog changes are refused (NotWritablePrimary) and the profiler
    /// writes nothing, so its data and oplog stay the primary's alone.
    /// Setting it waits for a pass in progress to end. Clear it to make the
    /// engine a primary again (a promotion). Setting it on an engine in use
    /// is becomeSecondary's job.
    void setSecondary(bool on) { ttlMonitor_->setSecondary(on); }
    /// Makes an engine in use a secondary (MongoDB's step-down under its
    /// replication state transition lock): takes the Global lock in mode X,
    /// so every operation and every transaction that holds a lock (a
    /// transaction holds its locks to its end, so one that wrote has
    /// committed or aborted by then) is over, sets secondary(), and lets go.
    /// A transaction's write before the change can therefore never commit
    /// after it, and a catalog change that waited for its locks meanwhile
    /// is refused after them. The lock is tried every millisecond, never
    /// queued (a queued X would stop every new operation for the wait), so
    /// under steady load it may take several tries. LockTimeout when they
    /// have not ended within `wait` (0: one try); the engine stays a
    /// primary then. A prepared transaction holds its locks until it is
    /// committed or aborted, so an engine with one cannot become a
    /// secondary. Under the lock it waits for a TTL pass in progress
    /// (setSecondary), at most that pass's lock wait. OK at once on a
    /// secondary.
    Status becomeSecondary(std::chrono::milliseconds wait);
    bool secondary() const { return ttlMonitor_->secondary(); }

    const EngineOptions& options() const { return options_; }
    /// Milliseconds since the Unix epoch: EngineOptions::wallClock, or the
    /// system's real-time clock.
    int64_t wallClockMs() const;
    /// What opening the data directory found. Not to be read while
    /// clearRepairRecord runs on another thread.
    const RecoveryStats& recovery() const { return recovery_; }
    /// Removes the repair record once its losses are dealt with; later opens
    /// stop reporting it (the salvage copies stay). IllegalOperation in
    /// memory; IOError when the file cannot be removed.
    Status clearRepairRecord();
    /// Document locks' waiters, fencing tokens and counters
    /// (engine/document_locks.h is the API).
    DocumentLockState& docLockState() { return docLocks_; }
    lockmgr::LockManager& lockManager() { return lockManager_; }
    mvcc::TransactionManager& transactions() { return txns_; }
    Catalog& catalog() { return catalog_; }

  private:
    explicit Engine(EngineOptions options);
    /// Replays what the checkpoint does not hold of the recovered log, in
    /// log order, through a session (docs/oplog.md, "Recovery").
    Status replay(const recovery::DurableLog::Recovered& recovered,
                  const LoadedCheckpoint& checkpoint);
    /// Recovery: rebuilds a transaction the log left prepared, as prepared,
    /// under its logged id, on an engine session the table owns.
    Status rebuildPrepared(mvcc::TxnId txnId, mvcc::Timestamp prepareTs,
                           const std::vector<oplog::OplogEntry>& writes);
    /// The session of recovered transaction `txnId`, or the error to return.
    StatusWith<std::unique_ptr<Session>> takeRecovered(mvcc::TxnId txnId);
    /// ~Session of a session holding a prepared transaction: an engine
    /// session takes it over, so it stays prepared (engine/replay.cpp).
    void keepPrepared(Session& closing);
    friend class Session;
    friend class Checkpointer;
    friend class Cursor;
    friend class OperationContext;
    friend class Profiler;
    /// The slow-op threshold in microseconds.
    int64_t slowMicros() const { return slowMicros_.load(std::memory_order_relaxed); }
    /// The operations' end check in one load: an operation that ran more
    /// nanoseconds than this goes to Session::reportOp (over the slow-op
    /// threshold, or any duration while a profiler is on).
    int64_t reportNanos() const { return reportNanos_.load(std::memory_order_relaxed); }
    /// After the slow-op threshold or a profiling level changed: derives
    /// slowMicros(), reportNanos() and the clock's precision (precise when
    /// a profiler is on or the threshold is small) from them.
    void updateOpMonitoring();
    /// The slow-op log, with `<path>/mvkv.log` when `withFile`.
    Status openSlowOpLog(bool withFile);

    EngineOptions options_;
    OpClock clock_;
    OpRegistry ops_;
    std::unique_ptr<SlowOpLog> slowLog_;
    std::mutex monitoringMutex_;  // updateOpMonitoring()'s derivations, one at a time
    std::atomic<int64_t> slowMicros_{0};
    std::atomic<int64_t> reportNanos_{std::numeric_limits<int64_t>::max()};  // until the log opens
    mutable EpochManager epochs_;  // outlives every tree below; pinned by const readers
    lockmgr::LockManager lockManager_;
    mvcc::TransactionManager txns_;
    Catalog catalog_;
    historystore::HistoryStore history_;
    HistorySweeper sweeper_;
    std::unique_ptr<recovery::DurableLog> log_;  // null in memory
    std::unique_ptr<oplog::Oplog> memOplog_;  // in memory, unless its cap is 0
    oplog::Oplog* oplog_ = nullptr;    // one of the two above, once logging_
    bool logging_ = false;             // commits are logged (from the end of recovery)
    /// A catalog change and its oplog record happen under it; a checkpoint
    /// notes the log's end and lists the catalog under it.
    std::mutex catalogLogMutex_;
    std::unique_ptr<Checkpointer> checkpointer_;  // null in memory
    RecoveryStats recovery_;
    std::atomic<uint64_t> sessions_{0};
    DocumentLockState docLocks_;
    MajorityCommitPoint majority_;
    mutable std::mutex replMutex_;
    std::shared_ptr<ReplicationCoordinator> repl_;  // GUARDED_BY(replMutex_)
    PreparedTransactions prepared_;  // its recovered sessions end first at close
    std::unique_ptr<Profiler> profiler_;  // after everything its session uses
    std::unique_ptr<TtlMonitor> ttlMonitor_;  // stopped first at close
};

}  // namespace mvkv::engine
