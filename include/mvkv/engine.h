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
// Session (and Cursor) first, then close() it to learn whether the final
// flush succeeded; the destructor closes it too, but cannot report.
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

#include "mvkv/options.h"
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
