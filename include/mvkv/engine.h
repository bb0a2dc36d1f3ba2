// mvkv/engine.h: an mvkv engine, opened on a data directory or in memory.
// Part of the public API (include/mvkv/); no stable ABI is promised yet.
//
// An engine holds collections of byte-string keys and values whose versions
// carry commit timestamps, a history store for superseded versions, an
// intent lock manager, and an oplog of every commit that is also its
// write-ahead log. Sessions (mvkv/session.h) read and write it.
//
// Durability (on a path): a commit is in the oplog before it is visible, and
// synced per EngineOptions::syncMode; checkpoints (background or
// checkpoint()) bound what recovery replays; open() recovers the newest
// valid checkpoint plus the oplog after it, and prepared transactions as
// prepared. A damaged oplog is refused (Corruption, naming the file and
// offset) unless EngineOptions::repair.
//
// Ownership and lifetime: open() returns the only owner. Destroy every
// Session (and Cursor, DocumentLocks), OplogCursor, ChangeStream and
// ReplicaSet first, then close() it to learn whether the final flush
// succeeded; the destructor closes it too, but cannot report.
//
// Thread safety: every method from any thread, concurrently, except
// close() (and the destructor): no other call on the engine may run beside
// it. Destroying an engine while a Session is open is a contract breach
// that stops the process with a message.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mvkv/change_stream.h"
#include "mvkv/oplog.h"
#include "mvkv/options.h"
#include "mvkv/replica_set.h"
#include "mvkv/session.h"
#include "mvkv/stats.h"
#include "mvkv/status.h"
#include "mvkv/timestamp.h"

namespace mvkv {

/// A prepared transaction not yet committed or aborted.
struct PreparedTransaction {
    TxnId txnId = kNoTxnId;  // its id, as logged; commitPrepared / abortPrepared take it
    Timestamp prepareTs = kNoTimestamp;
    uint64_t writes = 0;
    /// Held by no session (recovered after a restart): resolve it by id.
    bool ownerless = false;
};

/// A database's profiling level (Engine::profile), with the engine's
/// slow-op settings it shares: MongoDB's profile command reply.
struct ProfilingSetting {
    int was = 0;  // the level before (profile); the level (profilingSetting)
    int level = 0;
    int64_t slowMs = 0;
    double sampleRate = 1.0;
};

/// One resource of the lock table (Engine::lockTable).
struct LockTableEntry {
    struct Request {
        uint64_t lockerId = 0;  // Session::lockerId() of its holder or waiter
        std::string mode;       // "IS", "IX", "S" or "X"
    };
    std::string resource;  // "Database app", "Collection app.users", ...
    std::vector<Request> granted;
    std::vector<Request> waiting;  // in queue order
};

/// One TTL monitor pass (Engine::runTtlPass).
struct TtlPassResult {
    uint64_t collections = 0;          // TTL collections scanned
    uint64_t expired = 0;              // entries found expired
    uint64_t deleted = 0;              // of those, deleted
    uint64_t skippedConflicts = 0;     // left for the next pass: a write conflict
    uint64_t skippedLockTimeouts = 0;  // collections left for the next pass: a lock wait
    int64_t nowMs = 0;                 // the wall-clock time the pass judged by
};

/// The TTL monitor (docs/ttl.md): its figures since open and the TTL
/// collections.
struct TtlStatus {
    uint64_t passes = 0;
    uint64_t deletedDocuments = 0;
    uint64_t skippedConflicts = 0;
    uint64_t skippedLockTimeouts = 0;
    uint64_t failedPasses = 0;
    bool secondary = false;  // a replica's secondary: its passes are refused
    int64_t sleepMs = 0;     // the background pass period (0: none)
    struct Collection {
        std::string ns;
        int64_t expireAfterSeconds = 0;
    };
    std::vector<Collection> collections;  // every TTL collection, in catalog order
};

/// InvalidArgument (naming the rule broken) unless `db` is a valid database name.
Status checkDatabaseName(std::string_view db);

class Engine {
  public:
    /// InvalidArgument for bad options; IOError, Corruption for a data
    /// directory that cannot be opened or recovered; Busy when another
    /// process has it open; the MVKV_FAILPOINTS error (mvkv/failpoint.h).
    static StatusWith<std::unique_ptr<Engine>> open(const EngineOptions& options);
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    /// Stops the background threads, writes and syncs the oplog, releases
    /// the directory. IllegalOperation while a Session is open (nothing
    /// changes); IOError when the final flush fails (the engine is closed
    /// all the same: what was acknowledged is in the log). Every call after
    /// a close: IllegalOperation.
    Status close();
    /// IllegalOperation after close().
    StatusWith<std::unique_ptr<Session>> openSession();

    // --- timestamps (WiredTiger's set_timestamp / query_timestamp) ---
    /// InvalidArgument for oldest > stable or a timestamp moving back.
    Status setOldestTimestamp(Timestamp ts);
    Status setStableTimestamp(Timestamp ts);
    Timestamps timestamps() const;
    /// The newest timestamp a majority of a replica set's members made
    /// durable; standalone, the engine's own durable point.
    Timestamp majorityCommitTs() const;

    // --- maintenance ---
    /// Writes a checkpoint at the stable timestamp (all_durable when none
    /// is set). IllegalOperation in memory; Busy when no checkpoint
    /// timestamp can be taken now (retry); IOError.
    Status checkpoint();
    /// One history sweep now: superseded versions no reader needs are
    /// freed. Safe from any thread, one with open cursors included.
    Status sweepHistory();

    // --- looking inside ---
    /// Every figure at once; walks every key for the chain figures.
    EngineStats stats() const;
    /// MongoDB's profiler for database `db`: 0 off, 1 operations slower
    /// than EngineOptions::slowOpThreshold, 2 every operation, written to
    /// `<db>.system.profile` (docs/operations.md). InvalidArgument for
    /// another level or a bad name.
    Status setProfilingLevel(std::string_view db, int level);
    /// MongoDB's serverStatus as a JSON document: every section, or one
    /// (InvalidArgument for an unknown section, naming the others).
    StatusWith<std::string> serverStatus(std::string_view section = {}) const;
    /// MongoDB's currentOp as JSON; all: idle sessions' open transactions too.
    std::string currentOp(bool all = false) const;
    /// Stops operation `opid` (currentOp's) with Interrupted; NotFound.
    Status killOp(uint64_t opid);
    std::vector<std::string> listDatabases() const;
    std::vector<std::string> listCollections(std::string_view db) const;
    /// Every figure of stats() and the lock manager's, as one JSON document.
    std::string statsJson() const;
    /// The lock table now: every resource with a granted or waiting request
    /// (a consistent picture per resource; empty after close()).
    std::vector<LockTableEntry> lockTable() const;
    /// The slow-op threshold and sample rate (MongoDB's slowms and
    /// sampleRate, shared with the profiler). InvalidArgument out of range
    /// (slowMs < 0, rate outside 0..1).
    Status setSlowOp(int64_t slowMs, double sampleRate);
    /// The newest slow-op log lines (MongoDB's logv2 JSON), oldest first;
    /// limit 0: every line the ring holds.
    std::vector<std::string> slowOpLog(size_t limit = 0) const;
    /// `db`'s profiling level and the slow-op settings (`was` = `level`).
    ProfilingSetting profilingSetting(std::string_view db) const;
    /// setProfilingLevel, returning the setting with the level before in
    /// `was` (MongoDB's profile command). InvalidArgument for a level other
    /// than 0, 1, 2 or a bad database name.
    StatusWith<ProfilingSetting> profile(std::string_view db, int level);
    /// Milliseconds since the Unix epoch, by the clock TTL expiry uses.
    int64_t wallClockMs() const;

    // --- the oplog and change streams ---
    /// False for an in-memory engine opened with inMemoryOplogCapBytes 0.
    bool hasOplog() const;
    /// Publishes the commits finished so far to oplog readers and returns
    /// the newest visible oplog timestamp (kNoTimestamp without an oplog).
    Timestamp refreshOplogVisibility();
    /// Reads the oplog (mvkv/oplog.h). IllegalOperation without an oplog.
    StatusWith<std::unique_ptr<OplogCursor>> openOplog(const OplogReadOptions& options);
    /// A change stream (mvkv/change_stream.h). InvalidArgument for a bad
    /// namespace or resume token, or both resumeAfter and startAtTimestamp;
    /// IllegalOperation without an oplog.
    StatusWith<std::unique_ptr<ChangeStream>> watch(const ChangeStreamOptions& options);
    /// Makes this engine the primary of a replica set of one
    /// (mvkv/replica_set.h). IllegalOperation when it already is one.
    StatusWith<std::unique_ptr<ReplicaSet>> startReplicaSet();

    // --- TTL collections (docs/ttl.md) ---
    /// One TTL monitor pass now. IllegalOperation on a secondary; the error
    /// that stopped the pass (what it deleted stays deleted).
    StatusWith<TtlPassResult> runTtlPass();
    TtlStatus ttlStatus() const;

    // --- the repair record (docs/oplog.md, "Repair") ---
    /// Every cut of a damaged oplog and the commits it lost, as a JSON array
    /// ("[]": none). IllegalOperation in memory.
    StatusWith<std::string> repairRecord() const;
    /// Forgets it once dealt with (the salvage copies stay); returns how many
    /// repairs it held. IllegalOperation in memory; IOError.
    StatusWith<uint64_t> clearRepairRecord();

    // --- prepared transactions ---
    std::vector<PreparedTransaction> preparedTransactions() const;
    /// Commit / abort an ownerless prepared transaction by id: NotFound for
    /// none, IllegalOperation when a session holds it (resolve it there).
    Status commitPrepared(TxnId txnId, Timestamp commitTs, Timestamp durableTs);
    Status abortPrepared(TxnId txnId);

    struct Impl;  // the engine's side (opaque)

  private:
    explicit Engine(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace mvkv
