// ReplicaApplier: a secondary engine that follows a primary (durable, or in
// memory with its in-memory oplog) by tailing its oplog and applying it in
// parallel batches, as a MongoDB secondary does (seed 000, "How does
// concurrency affect secondaries?").
//
// Design:
// - One tailing thread reads the primary's oplog (OplogCursor::next): whole
//   records, in timestamp order, only up to the primary's no-holes point.
//   Each read is one batch; it is extended by peeking with the records that
//   share its last timestamp (two transactions may commit at one timestamp)
//   so that a batch does not end inside such a group when it can help it.
// - Catalog commands ('c': create, drop, dropDatabase, collMod) split the batch: the
//   data entries before a command are applied and finished, then the command
//   alone (idempotently: create of an existing collection and drop of a
//   missing one succeed), then the rest.
// - Data entries ('i'/'u' put the full post-image, 'd' removes; a missing
//   key is fine) are spread over a fixed pool of workers by a hash of (ns,
//   key), so one key's entries stay on one worker, in timestamp order. Each
//   worker has its own Session and applies its share grouped by timestamp:
//   one explicit transaction per timestamp, committed at that original
//   timestamp. Writes take intent locks only, as any write does.
// - The tailing thread waits for every worker (a barrier) and then
//   publishes the last applied timestamp T: the secondary's stable timestamp
//   moves to T - 1 and lastAppliedTs() to T. It publishes after each data
//   run and each command, so lastAppliedTs() is always a point where
//   everything at or below it that the primary's oplog showed is applied,
//   and nothing applied above it is visible to a reader at it.
// - Why stable is T - 1, not T: commit timestamps must be > stable, and
//   every later entry is >= T but not always > T: the primary may commit a
//   second transaction at T after the first became visible (the oplog then
//   shows it later, after T). Stable still rises with every batch, so a
//   checkpoint of a durable secondary never waits far behind.
// - Readers of the secondary read at lastAppliedTs() (readOptions()): they
//   never see part of a batch and never wait for one. Two exceptions:
//   catalog changes are not timestamped (a reader sees a drop at once), and
//   a transaction the primary committed late at T (above) shows at T while
//   it is applied, possibly in parts (its keys may be on several workers).
// - A command waits for the locks of the secondary's readers (a drop needs
//   X); stop() cuts such a wait short and leaves the command to the next
//   applier (lastAppliedTs() stays before it).
//
// Errors: when applying fails (CappedPositionLost because the secondary fell
// behind the primary's capped oplog, NamespaceNotFound because the start
// point's create was capped away, a refused commit timestamp, ...) the
// applier stops and keeps the Status: status() and waitApplied() return it.
// The secondary may then hold writes above lastAppliedTs() (invisible at
// readOptions()); a new applier from lastAppliedTs() may be refused if a key
// got several of them: resynchronize then.
//
// Durable secondaries (an engine on a data directory, docs/replication.md,
// "Durable members"), and any secondary with an oplog of its own (in memory
// with inMemoryOplogCapBytes > 0): its own oplog must log the primary's
// history in the primary's timestamp order, so that replaying it rebuilds
// the same state and its readers never miss a record (an engine with an
// oplog commits in timestamp order only). So its data runs are applied serially on the tailing thread,
// one transaction per primary timestamp committed at it (the primary's
// transactions at one timestamp become one record), and each catalog command
// is logged at the primary's timestamp (Session::setNextCommandTimestamp).
// Why not parallel apply logged in order afterwards: the log is written at
// commit, and reordering commits of parallel workers would need them to
// wait for each other per timestamp, which is the serial apply with more
// threads. A secondary without an oplog keeps the parallel workers.
// lastDurableTs() is what the secondary's own oplog has synced: with
// SyncMode kFsync every applied commit (durable = applied); otherwise the
// applier syncs it (Oplog::flush) every syncEveryBatches batches and when
// it caught up, so durable may lag applied. In memory durable = applied.
// A primary transaction committed late at an already applied timestamp
// (possible only on an in-memory primary, "stable is T - 1") is refused by
// a durable secondary's ordered commits: the applier stops with that error.
//
// TTL collections (docs/ttl.md): start() marks the secondary
// (Engine::setSecondary), so its TTL monitor deletes nothing; the primary's
// deletes arrive as 'd' entries like any other.
//
// Thread safety: every method may be called from any thread. The secondary
// must be written by this applier only (its users read). Both engines must
// outlive the applier; stop() or the destructor joins every thread it started
// (latency: at most pollWait, plus finishing the data run in progress).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine/session.h"
#include "mvcc/timestamp.h"
#include "oplog/oplog_cursor.h"
#include "oplog/oplog_entry.h"
#include "util/status.h"

namespace mvkv::replication {

struct ReplicaOptions {
    size_t workers = 4;             // apply threads (>= 1)
    size_t maxBatchEntries = 5000;  // per oplog read (whole records: may pass it)
    /// How long one oplog read waits for new entries; also bounds how long
    /// stop() waits, and the lock waits of the apply before it rechecks stop.
    std::chrono::milliseconds pollWait{50};
    /// Everything up to this timestamp is on the secondary already: apply
    /// from startAfter + 1, and lastAppliedTs() starts here (the secondary's
    /// stable timestamp is raised to startAfter - 1, as if it had been
    /// applied here). 0: from the primary's oldest oplog
    /// entry (what capping left).
    mvcc::Timestamp startAfter = mvcc::kNoTimestamp;
    /// Called on the tailing thread after each publication and each sync
    /// with the new lastAppliedTs() and lastDurableTs() (a replica set's
    /// report, replication/replica_set.h). It must not call back into this
    /// applier.
    std::function<void(mvcc::Timestamp applied, mvcc::Timestamp durable)> onApplied;
    /// A durable secondary whose sync mode is not kFsync: sync its oplog
    /// after this many batches (>= 1), and whenever the applier caught up.
    size_t syncEveryBatches = 16;
    /// A test seam: called before each such sync; false skips it (durable
    /// stays behind applied), as a slow disk would.
    std::function<bool()> beforeSync;
    /// Called on the tailing thread once when it ends, with the error it
    /// stopped on (OK after stop()).
    std::function<void(const Status&)> onStopped;
    /// How long start() waits for the secondary's running operations and
    /// open transactions to end before it makes it a secondary
    /// (Engine::becomeSecondary); LockTimeout after it.
    std::chrono::milliseconds becomeSecondaryWait{10000};
};

struct ReplicaStats {
    uint64_t batches = 0;          // oplog reads applied
    uint64_t entriesApplied = 0;   // data entries
    uint64_t commandsApplied = 0;  // catalog commands
    double meanBatch = 0;          // entries and commands per batch
    uint64_t applyMicros = 0;      // applying, not waiting for the oplog
    mvcc::Timestamp lastAppliedTs = mvcc::kNoTimestamp;
    mvcc::Timestamp lastDurableTs = mvcc::kNoTimestamp;
    bool running = false;
};

class ReplicaApplier {
  public:
    /// Opens a cursor on `primary`'s oplog and starts the threads.
    /// InvalidArgument for zero workers, batch size or syncEveryBatches;
    /// IllegalOperation for a primary without an oplog (in memory with
    /// inMemoryOplogCapBytes 0); the secondary's refusal to move its stable
    /// timestamp to startAfter.
    static StatusWith<std::unique_ptr<ReplicaApplier>> start(engine::Engine& primary,
                                                             engine::Engine& secondary,
                                                             ReplicaOptions options = {});
    ~ReplicaApplier();  // stop()
    ReplicaApplier(const ReplicaApplier&) = delete;
    ReplicaApplier& operator=(const ReplicaApplier&) = delete;

    /// Stops after the data run in progress and joins every thread.
    /// Idempotent. lastAppliedTs() is final afterwards: the startAfter of a
    /// new applier on the same secondary. (Without the applier: the
    /// secondary's stable timestamp + 1, once it applied anything or
    /// started after a timestamp.)
    void stop();

    /// Everything of the primary's at or below it is applied (monotonic).
    mvcc::Timestamp lastAppliedTs() const { return lastApplied_.load(std::memory_order_acquire); }
    /// Of those, what the secondary's own oplog made durable (<= applied;
    /// = applied in memory). Starts at startAfter.
    mvcc::Timestamp lastDurableTs() const { return lastDurable_.load(std::memory_order_acquire); }
    /// For readers of the secondary: {readTs = lastAppliedTs()}. Until the
    /// first publication readTs is 0, which means "newest" and may show a
    /// batch in progress: waitApplied() first.
    engine::TxnOptions readOptions() const { return engine::TxnOptions{lastAppliedTs(), false}; }
    /// OK once lastAppliedTs() >= ts; the applier's error if it stopped on
    /// one; IllegalOperation if it was stopped first; Busy after `timeout`.
    Status waitApplied(mvcc::Timestamp ts, std::chrono::milliseconds timeout) const;
    /// OK, or the error the applier stopped on.
    Status status() const;
    ReplicaStats stats() const;

  private:
    struct Worker {
        std::unique_ptr<engine::Session> session;
        std::vector<uint32_t> share;  // indices into the run; filled while idle
        Status error;                 // of its last share
        std::thread thread;
    };
    using Entries = std::vector<oplog::OplogEntry>;

    ReplicaApplier(engine::Engine& secondary, ReplicaOptions options,
                   std::unique_ptr<oplog::OplogCursor> cursor);
    void tailLoop();
    /// Reads the next batch into *batch (empty on timeout), completing its
    /// last timestamp group.
    Status readBatch(Entries* batch);
    Status applyBatch(const Entries& batch);
    /// Data entries [begin, end) on the workers, then the barrier.
    Status applyRun(const Entries& batch, size_t begin, size_t end);
    Status applyCommand(const oplog::OplogEntry& e);
    void workerLoop(Worker& w);
    Status applyShare(engine::Session& session, const Entries& batch,
                      const std::vector<uint32_t>& share);
    Status applyWrite(engine::Session& session, const oplog::OplogEntry& e);
    /// Runs `op` again while it times out on a lock, until stop().
    template <typename Op>
    Status retryLockTimeouts(Op&& op);
    /// Moves stable to `ts` - 1 and lastAppliedTs() to `ts`; with
    /// `batchStart`, `ts` ends the batch begun then, and its figures go out
    /// with it.
    Status publish(mvcc::Timestamp ts,
                   std::optional<std::chrono::steady_clock::time_point> batchStart);
    void finish(Status s);
    /// A durable secondary's oplog synced: lastDurableTs() = lastAppliedTs().
    Status syncDurable();

    engine::Engine& secondary_;
    const ReplicaOptions options_;
    std::atomic<bool> stopping_{false};
    std::atomic<mvcc::Timestamp> lastApplied_;
    std::atomic<mvcc::Timestamp> lastDurable_;
    const bool durable_;         // the secondary is on a data directory
    const bool ordered_;         // it has an oplog: applied serially, in timestamp order
    const bool syncsEachCommit_; // ... with SyncMode kFsync
    size_t batchesSinceSync_ = 0;  // the tailing thread's

    // The tailing thread's own.
    std::unique_ptr<oplog::OplogCursor> cursor_;
    std::unique_ptr<engine::Session> commandSession_;
    Entries carry_;                    // a peeked record that begins the next batch
    bool commandInterrupted_ = false;  // stop() cut a command's lock wait short

    // The pool: the tailer hands out a run, workers apply it, the last one
    // done wakes the tailer.
    std::vector<std::unique_ptr<Worker>> workers_;
    std::mutex poolMutex_;
    std::condition_variable workCv_;
    std::condition_variable doneCv_;
    const Entries* run_ = nullptr;  // GUARDED_BY(poolMutex_)
    uint64_t generation_ = 0;       // GUARDED_BY(poolMutex_): one per run
    size_t busy_ = 0;               // GUARDED_BY(poolMutex_)
    bool quit_ = false;             // GUARDED_BY(poolMutex_)

    // What readers and waiters see.
    mutable std::mutex stateMutex_;
    mutable std::condition_variable appliedCv_;
    Status error_;         // GUARDED_BY(stateMutex_)
    bool running_ = true;  // GUARDED_BY(stateMutex_)
    ReplicaStats stats_;   // GUARDED_BY(stateMutex_)

    std::mutex stopMutex_;  // one joiner at a time
    std::thread tailer_;
};

}  // namespace mvkv::replication
