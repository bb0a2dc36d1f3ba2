// TransactionManager: the engine-wide MVCC state — transaction ids, the table
// of running transactions, the timestamp clock, and the global timestamps
// oldest / stable / all_durable (WiredTiger's names and rules).
//
// Timestamp rules (each refusal is InvalidArgument naming both numbers):
// - a commit timestamp must be > stable, > the newest checkpoint's timestamp
//   (chooseCheckpointTimestamp), on an engine with an oplog > the newest finished
//   commit unless already held (requireOrderedCommits), >= oldest, and >= the newest
//   committed timestamp of every key the transaction wrote; a commit that
//   breaks a rule rolls the transaction back and says so;
// - a read timestamp below oldest is refused, or rounded up to oldest when the
//   caller asks for round-up;
// - oldest and stable only move forward, and oldest <= stable.
// The clock hands out commit timestamps to commits that give none; it moves
// past every timestamp it sees, so an assigned timestamp is newer than every
// committed one.
//
// Thread safety: every method may be called from any thread. A given
// Transaction is used by one thread at a time. Reads of update chains take no
// lock; begin/first write/commit/abort take a short internal mutex, but a
// registered reader without a read timestamp begins and ends under the
// mutex of its thread's reader shard instead (readerShards_). Oldest, the
// active list and the held TimestampPins are all guarded by the internal
// mutex, so pinned never misses a pin or a reader, and a pin's timestamp is
// never below a horizon already given out; the history horizon reads the
// active list and then every shard, after the snapshot floor of the moment,
// so it misses no reader that began before it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "mvcc/mvcc_stats.h"
#include "mvcc/timestamp.h"
#include "mvcc/transaction.h"
#include "util/epoch.h"
#include "util/spin_then_block.h"
#include "util/status.h"

namespace mvkv::mvcc {

class TimestampPin;
class TransactionManager;

struct BeginOptions {
    Timestamp readTs = kNoTimestamp;  // kNoTimestamp: read the newest commits
    bool roundUpReadTs = false;       // read ts below oldest -> oldest
    /// A short reader with no read timestamp (one implicit operation) may
    /// stay off the active list and take its snapshot with no lock. The
    /// history sweep then cannot see its snapshot, so the caller must hold
    /// a pin of the engine's EpochManager from before begin() until it no
    /// longer reads: the sweep waits out such pins (a grace period) before
    /// it trusts the published snapshot floor (historystore, docs/mvcc.md).
    bool unregistered = false;
    /// A held pin of this manager (chooseCheckpointTimestamp) at or below
    /// readTs: the read is allowed even if oldest has moved past readTs
    /// since the pin was taken, because the pin kept that history.
    const TimestampPin* pin = nullptr;
    /// WiredTiger's ignore_prepare: prepared versions read as if absent
    /// (no PrepareConflict). Such a transaction may not write.
    bool ignorePrepare = false;
    /// The caller's session's newest commit timestamp: a snapshot begun
    /// without a read timestamp sees it even above its read point (a cursor
    /// or scan runs in a Transaction of its own, which did not commit it).
    Timestamp ownCommitTs = kNoTimestamp;
};

/// A hold on history at one timestamp, as WiredTiger holds a running
/// checkpoint's timestamp in its pinned timestamp. While it is held,
/// `pinned` and the history sweep's horizon stay at or below ts() however
/// far oldest moves, so every version a read at ts() needs stays (in its
/// chain or the history store), and begin() with BeginOptions::pin may read
/// at ts() or later though oldest has passed it. Taken only by
/// TransactionManager::chooseCheckpointTimestamp, under the lock that
/// guards oldest and the active list, atomically with choosing ts.
///
/// Move-only; released by release() or the destructor, which take the
/// manager's mutex. The manager must outlive it. One thread at a time uses
/// a given pin.
class TimestampPin {
  public:
    TimestampPin() = default;  // holds nothing
    TimestampPin(TimestampPin&& other) noexcept;
    TimestampPin& operator=(TimestampPin&& other) noexcept;
    TimestampPin(const TimestampPin&) = delete;
    TimestampPin& operator=(const TimestampPin&) = delete;
    ~TimestampPin() { release(); }

    /// The pinned timestamp (kNoTimestamp when nothing is held).
    Timestamp ts() const { return ts_; }
    bool held() const { return manager_ != nullptr; }
    /// Lets the history go; a no-op when nothing is held.
    void release();

  private:
    friend class TransactionManager;
    TimestampPin(TransactionManager* manager, Timestamp ts) : manager_(manager), ts_(ts) {}
    TransactionManager* manager_ = nullptr;
    Timestamp ts_ = kNoTimestamp;
};

/// What no reader can still need: versions superseded by a version visible
/// to all are obsolete. A committed version is visible to all when its
/// transaction finished before every running snapshot (txnId < oldestId)
/// and its commit timestamp is <= pinnedTs.
struct Horizon {
    Timestamp pinnedTs = kNoTimestamp;  // 0: nothing is visible to all by timestamp
    TxnId oldestId = kNoTxnId;          // 0: nothing is visible to all by id
    /// Ids from here on were handed out after the horizon was taken: a
    /// version they wrote is too new for it to judge what that version
    /// replaced (kNoTxnId: unknown, every id counts as older).
    TxnId newestId = kNoTxnId;
    bool newerThanHorizon(TxnId txnId) const {
        return newestId != kNoTxnId && txnId >= newestId;
    }
    bool visibleToAll(TxnId txnId, Timestamp startTs) const {
        return txnId < oldestId && startTs <= pinnedTs;
    }
};

/// query_timestamp: all of the engine's timestamps at one moment.
using mvkv::Timestamps;  // the public struct (include/mvkv/timestamp.h)

enum class WriteKind : uint8_t { kValue, kTombstone };

class TransactionManager {
  public:
    TransactionManager();
    TransactionManager(const TransactionManager&) = delete;
    TransactionManager& operator=(const TransactionManager&) = delete;
    /// Every transaction must have ended.
    ~TransactionManager();

    /// Starts `txn` (which must be idle or ended): takes its snapshot and
    /// checks the read timestamp. IllegalOperation if already active.
    Status begin(Transaction& txn, const BeginOptions& options = {});

    /// WiredTiger's timestamp_transaction: fixes the commit timestamp before
    /// commit. all_durable stays below it until the transaction ends.
    Status setCommitTimestamp(Transaction& txn, Timestamp ts);

    /// Writes a new version of the key behind `slot` for `txn`: the eager
    /// write-conflict check, then a compare-and-swap onto the head.
    /// WriteConflict (nothing written) when the newest non-aborted version is
    /// not visible to `txn`.
    Status write(Transaction& txn, VersionSlot& slot, WriteKind kind, std::string_view value,
                 uint32_t collection);

    /// True when a write by `txn` to the key behind `slot` would conflict now.
    bool wouldConflict(const Transaction& txn, const VersionSlot& slot) const;
    /// The WriteConflict write() would return now, or OK.
    Status checkWrite(const Transaction& txn, const VersionSlot& slot) const;

    /// Commits with `commitTs`, or the timestamp set earlier, or the clock's
    /// next. On a broken timestamp rule the transaction is rolled back and
    /// the status says so. A read-only transaction needs no timestamp.
    Status commit(Transaction& txn, std::optional<Timestamp> commitTs = std::nullopt);

    /// commit() in two steps, for a durable engine that logs in between:
    /// prepareCommit checks every timestamp rule (rolling back on a broken
    /// one, as commit does) and fixes the commit timestamp; the writes stay
    /// invisible and conflicting, and all_durable stays below the timestamp,
    /// until completeCommit makes them visible, which cannot fail. A
    /// transaction that wrote nothing is committed by prepareCommit itself,
    /// which then returns kNoTimestamp (nothing to log, nothing to complete).
    StatusWith<Timestamp> prepareCommit(Transaction& txn,
                                        std::optional<Timestamp> commitTs = std::nullopt);
    /// Returns all_durable as it stood the moment the transaction left the
    /// active list (read under the same lock), for the committer to publish
    /// as the oplog's visible timestamp without asking again.
    Timestamp completeCommit(Transaction& txn);
    /// For a write outside the MVCC tables (a catalog command) that must
    /// take its place in timestamp order: gives the running transaction,
    /// which has written nothing, the clock's next timestamp; all_durable
    /// stays below it until completeCommit (or abort), and then moves past it.
    /// With `at` (a secondary logging the primary's command at the primary's
    /// timestamp): that timestamp, checked as a commit timestamp is.
    StatusWith<Timestamp> reserveTimestamp(Transaction& txn,
                                           std::optional<Timestamp> at = std::nullopt);

    /// Rolls back: every update is marked aborted. Also ends a prepared
    /// transaction. No-op when neither active nor prepared.
    void abort(Transaction& txn);

    // --- prepared transactions (docs/mvcc.md, "Prepared transactions") ---
    /// WiredTiger's prepare_transaction: the writes stay in place, marked
    /// prepared at `prepareTs`, and the transaction takes no more writes.
    /// Its id leaves the running set (a snapshot taken from now on judges
    /// its versions by timestamp: a reader at or after prepareTs conflicts),
    /// and it holds all_durable (so checkpoints) below prepareTs until it
    /// ends. InvalidArgument, the transaction still active and unchanged,
    /// when prepareTs is 0, not after stable, oldest or the newest
    /// checkpoint's timestamp, below the read timestamp, at or below the
    /// newest finished commit on an engine with an oplog, or older than a key's
    /// newest commit; or when a commit timestamp was already set.
    /// IllegalOperation when not active.
    Status prepare(Transaction& txn, Timestamp prepareTs);
    /// The first step of a prepared transaction's commit (the second is
    /// completeCommit): commitTs >= prepareTs, durableTs >= commitTs, and
    /// durableTs after stable. A refused commit leaves the transaction
    /// prepared (InvalidArgument naming the numbers). IllegalOperation when
    /// not prepared.
    Status prepareCommitPrepared(Transaction& txn, Timestamp commitTs, Timestamp durableTs);
    /// Both steps at once (an engine that does not log in between).
    Status commitPrepared(Transaction& txn, Timestamp commitTs, Timestamp durableTs);
    /// Undoes prepareCommitPrepared when the commit could not be completed
    /// (its record was not logged): the transaction is prepared as before.
    void cancelCommitPrepared(Transaction& txn);
    /// Recovery: the next transaction ids are above `id` (the oplog's own).
    /// Corruption when `id` is past Update::kMaxTxnId (no engine logs one).
    Status raiseNextTxnId(TxnId id);
    /// Recovery: `txn` (active, nothing written) writes under `id`, an id
    /// below every id handed out since raiseNextTxnId: a prepared
    /// transaction rebuilt from the log keeps the id it was logged with.
    Status adoptTxnId(Transaction& txn, TxnId id);
    /// Moves prepared `from` (its id, timestamps, snapshot and writes) into
    /// idle `to`, which takes its place among the running transactions;
    /// `from` is left idle. A prepared transaction outlives its session so.
    Status handOverPrepared(Transaction& from, Transaction& to);
    /// Prepared transactions begun, and how they ended; currently prepared.
    struct PreparedCounts {
        uint64_t total = 0;
        uint64_t committed = 0;
        uint64_t aborted = 0;
        uint64_t current = 0;
    };
    PreparedCounts preparedCounts() const;

    /// The horizon now, for the history sweep. `unregisteredFloor` is the
    /// snapshot floor of readers that are not registered at all (see
    /// BeginOptions::unregistered), which only the caller's grace period
    /// can vouch for; the result's oldestId is at most it.
    /// `unregisteredReadPoint` is their lowest read point, vouched for the
    /// same way; the result's pinnedTs is at most it and at most every
    /// running untimestamped snapshot's read bound (docs/mvcc.md).
    Horizon horizon(TxnId unregisteredFloor,
                    Timestamp unregisteredReadPoint = kMaxTimestamp) const;
    /// The snapMin a snapshot taken now would get: no running snapshot
    /// taken from now on has a smaller one. With `readPoint`: the read point
    /// from the same copy of the running table.
    TxnId snapshotFloorNow(Timestamp* readPoint = nullptr) const;
    /// The transaction with the smallest read timestamp among the running
    /// ones (the reader that pins history): its owner tag, read ts and age.
    struct PinningReader {
        bool any = false;
        uint64_t owner = 0;
        Timestamp readTs = kNoTimestamp;
        uint64_t ageMicros = 0;
    };
    PinningReader pinningReader() const;

    Status setOldest(Timestamp ts);
    Status setStable(Timestamp ts);
    Timestamps timestamps() const;
    /// For a checkpoint: the timestamp C to write it at — stable (or, with
    /// no stable timestamp, all_durable), but never past all_durable, so
    /// every transaction at or below it has finished — and from now on a
    /// floor for commit timestamps, as stable is (a later commit at or below
    /// it would be missing from the checkpoint and from the log's replay
    /// after it). Returns C as a held pin, taken under the same lock as C
    /// was chosen: no history sweep can discard what a read at C needs, and
    /// the checkpoint reads at C with BeginOptions::pin even if oldest moves
    /// past C meanwhile. An empty pin (ts() kNoTimestamp) when there is none
    /// to take: nothing committed yet, or a running transaction holds a
    /// timestamp at or below oldest.
    TimestampPin chooseCheckpointTimestamp();
    /// A durable engine's oplog readers read up to all_durable and move on:
    /// from this call on, a commit timestamp at or below the newest finished
    /// commit is refused, unless the transaction already held it (through
    /// setCommitTimestamp) when that commit happened: a hole readers waited for.
    void requireOrderedCommits();
    /// Recovery: commit timestamps must from now on be after `ts`, and
    /// every commit at or below it finished (a checkpoint at ts was loaded).
    void raiseCheckpointFloor(Timestamp ts);
    /// Recovery: a record logged at `ts` that replay does not commit (a
    /// catalog command), or a prepared commit's durable timestamp, finished:
    /// the clock and the no-holes point reach it.
    void noteLoggedTimestamp(Timestamp ts);
    /// The no-holes point alone: every transaction with a commit timestamp
    /// at or below it has finished (0 until a write commits).
    Timestamp allDurable() const;
    /// The read point an untimestamped snapshot taken now gets: all_durable
    /// leaving prepared transactions out (readers conflict on their writes
    /// instead). kMaxTimestamp, no bound, until requireOrderedCommits():
    /// without it a commit may take any older timestamp at any time.
    Timestamp readPoint() const;
    /// Waits until no transaction that fixed a commit timestamp at or below
    /// `ts` in its commit (between prepareCommit, or reserveTimestamp, and
    /// its end) is still committing. Such a hole closes by itself, without
    /// another caller's help; a timestamp fixed early with
    /// setCommitTimestamp is not waited for (its transaction may run on).
    /// completeCommit calls it, so a commit is acknowledged only once every
    /// earlier-timestamped commit in flight is visible; begin() calls it
    /// for a read timestamp above the read point.
    void waitForCommitsThrough(Timestamp ts);

    /// Counters (begun, committed, ...) and the oldest reader.
    MvccStats stats() const;
    /// Counted by the engine's retry loops.
    void noteWriteConflict() { writeConflicts_.fetch_add(1, std::memory_order_relaxed); }
    void noteRetries(uint64_t n) { retries_.fetch_add(n, std::memory_order_relaxed); }

  private:
    friend class TimestampPin;
    void releasePin(Timestamp ts);

    // The ids of running transactions that have written, and the next id:
    // what a snapshot copies. Rebuilt under mutex_ whenever that set changes
    // (twice per writing transaction) and read with no lock by a reader
    // without a read timestamp, as a sequence lock: the writer makes
    // `version` odd, rewrites the table in place, makes it even again; a
    // reader copies it and retries if the version was odd or moved. In
    // place, because a fresh copy per change (allocated, then retired
    // through epochs_) cost more than the rest of a commit's bookkeeping,
    // all of it under mutex_. Only a table too small is replaced (retired
    // through epochs_, which readers pin).
    struct RunningTable {
        explicit RunningTable(size_t slots)
            : capacity(slots), ids(new std::atomic<TxnId>[slots]) {}
        std::atomic<uint64_t> version{0};  // odd while being rewritten
        std::atomic<TxnId> snapMax{1};
        std::atomic<Timestamp> readPoint{kMaxTimestamp};  // readPointLocked() as published
        std::atomic<size_t> count{0};
        const size_t capacity;
        std::unique_ptr<std::atomic<TxnId>[]> ids;  // [0, count) sorted
    };
    /// Calls read(table) until it ran on a table no writer changed meanwhile.
    template <typename Read>
    void readRunning(Read&& read) const;
    void publishRunningLocked();
    void takeSnapshot(Transaction& txn) const;
    void countEnd(TxnState endState);

    // All below require mutex_.
    void linkActive(Transaction& txn);
    void unlinkActive(Transaction& txn);
    /// `held`: the timestamp the transaction already holds (exempt from the
    /// ordered-commit rule).
    Status checkCommitTsLocked(Timestamp ts, Timestamp held) const;
    /// The timestamp a transaction with a commit timestamp holds all_durable
    /// below: its prepare timestamp while it has one (its versions stay
    /// prepared until completeCommit, even once its commit timestamp is
    /// fixed: a read at or after the prepare timestamp would conflict), else
    /// its commit timestamp.
    static Timestamp heldTimestamp(const Transaction& t) {
        return t.prepareTs_ != kNoTimestamp ? t.prepareTs_ : t.commitTs_;
    }
    Timestamp allDurableLocked() const;
    Timestamp readPointLocked() const;
    /// A transaction other than the caller's, not prepared, is committing
    /// at or below ts (waitForCommitsThrough).
    bool committingThroughLocked(Timestamp ts) const;
    Timestamp oldestReaderLocked(const Transaction** who) const;
    /// min(oldest, oldest reader, held pins); 0 until oldest is set.
    Timestamp pinnedLocked() const;
    /// Ends `txn`; returns all_durable right after (kNoTimestamp when the
    /// transaction was not on the active list: it held nothing back).
    /// `holeBelow`, when given, says whether a commit below txn's commit
    /// timestamp was still in flight then.
    Timestamp finish(Transaction& txn, TxnState endState, bool* holeBelow = nullptr);
    /// Wakes waitForCommitsThrough's sleepers, if any, after a hole closed.
    void wakeHoleWaiters();

    // Taken three times by every writing transaction, briefly: waiters spin
    // before they sleep (util/spin_then_block.h).
    mutable SpinThenBlockMutex mutex_;
    Transaction* activeHead_ = nullptr;  // running transactions, newest first
    size_t activeCount_ = 0;
    TxnId nextId_ = 1;
    Timestamp clock_ = kNoTimestamp;
    Timestamp oldest_ = kNoTimestamp;
    Timestamp stable_ = kNoTimestamp;
    Timestamp maxCommitted_ = kNoTimestamp;  // newest commit ts of a finished txn
    Timestamp checkpointFloor_ = kNoTimestamp;  // commits must be after it
    bool orderedCommits_ = false;               // commits at or after all_durable
    std::vector<Timestamp> pins_;               // of every held TimestampPin (a few at most)

    mutable EpochManager epochs_;
    std::atomic<RunningTable*> running_{nullptr};
    std::atomic<Timestamp> readPoint_{kMaxTimestamp};  // as last published, for a lock-free look
    std::vector<TxnId> runningScratch_;  // publishRunningLocked's, under mutex_

    // Registered transactions without a read timestamp (a cursor's own, an
    // explicit one) hold back only the history horizon, through their
    // snapshot and read bound. They join the shard of the thread that
    // begins them, not the active list under mutex_, so that readers on
    // different cores do not take one lock twice per transaction. One stays
    // on its shard until it ends or is prepared, also while it is on the
    // active list (after a write, or a commit timestamp). Lock order: a
    // shard's mutex, then mutex_ (begin's snapshot may fall back to
    // mutex_, readRunning), never the reverse.
    struct alignas(64) ReaderShard {
        std::mutex mutex;
        Transaction* head = nullptr;  // GUARDED_BY(mutex)
    };
    // Twice the cores (a power of two, at most 16): threads begun one after
    // another get different shards, and horizon(), which locks every shard
    // on each history sweep of a key, locks no more than it needs.
    static size_t readerShardCount();
    const size_t readerShardCount_ = readerShardCount();
    const std::unique_ptr<ReaderShard[]> readerShards_{new ReaderShard[readerShardCount_]};
    static size_t threadStripe();  // this thread's shard and counter stripe
    void leaveReaderShard(Transaction& txn);

    // Striped by thread so that readers on different cores do not share a
    // line for every transaction they count.
    struct alignas(64) Counters {
        std::atomic<uint64_t> begun{0};
        std::atomic<uint64_t> committed{0};
        std::atomic<uint64_t> aborted{0};
    };
    static constexpr size_t kCounterStripes = 16;
    Counters& myCounters();
    Counters counters_[kCounterStripes];
    std::atomic<uint64_t> writeConflicts_{0};
    std::atomic<uint64_t> preparedTotal_{0};
    std::atomic<uint64_t> preparedCommitted_{0};
    std::atomic<uint64_t> preparedAborted_{0};
    std::atomic<uint64_t> retries_{0};

    // waitForCommitsThrough's sleepers. A finisher that closed a hole loads
    // holeWaiters_ after releasing mutex_; a sleeper raises it before it
    // checks the holes under mutex_ and sleeps under holeMutex_: one of the
    // two sees the other, and the wake-up cannot fall between check and sleep.
    std::atomic<uint32_t> holeWaiters_{0};
    std::mutex holeMutex_;
    std::condition_variable holeCv_;
    std::atomic<uint64_t> holeWaits_{0};  // commits and reads that waited
};

}  // namespace mvkv::mvcc
