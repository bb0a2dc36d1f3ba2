#include "mvcc/txn_manager.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <chrono>
#include <thread>
#include <utility>

namespace mvkv::mvcc {

namespace {

uint64_t nowMicros() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
}

// The newest version a writer must be able to see: aborted ones do not count.
const Update* newestLive(const Update* head) {
    while (head && head->state() == UpdateState::kAborted)
        head = head->next();
    return head;
}

Status conflictStatus(const Transaction& txn, const Update& newest) {
    if (newest.state() == UpdateState::kPrepared)
        return Status::WriteConflict(fmt::format(
            "transaction {} has prepared a write of this key (prepare timestamp {}) and has not "
            "committed or aborted it",
            newest.txnId(), newest.startTs()));
    if (newest.state() == UpdateState::kUncommitted)
        return Status::WriteConflict(
            fmt::format("transaction {} is writing this key and has not finished", newest.txnId()));
    if (txn.hasReadTs() && newest.startTs() > txn.readTs())
        return Status::WriteConflict(
            fmt::format("the key was committed at timestamp {}, after this transaction's read "
                        "timestamp {}",
                        newest.startTs(), txn.readTs()));
    return Status::WriteConflict(
        fmt::format("the key was committed by transaction {} at timestamp {}, after this "
                    "transaction's snapshot was taken",
                    newest.txnId(), newest.startTs()));
}

}  // namespace

TransactionManager::TransactionManager() {
    running_.store(new RunningTable(16), std::memory_order_release);
}

TransactionManager::~TransactionManager() {
    delete running_.load(std::memory_order_acquire);
}

size_t TransactionManager::readerShardCount() {
    const size_t cores = std::max(1u, std::thread::hardware_concurrency());
    return std::min<size_t>(16, std::bit_ceil(2 * cores));
}

size_t TransactionManager::threadStripe() {
    static std::atomic<size_t> nextStripe{0};
    thread_local size_t stripe = nextStripe.fetch_add(1, std::memory_order_relaxed);
    return stripe;
}

TransactionManager::Counters& TransactionManager::myCounters() {
    return counters_[threadStripe() % kCounterStripes];
}

void TransactionManager::leaveReaderShard(Transaction& txn) {
    ReaderShard& shard = readerShards_[txn.readerShard_];
    std::lock_guard lock(shard.mutex);
    if (txn.prevReader_)
        txn.prevReader_->nextReader_ = txn.nextReader_;
    else
        shard.head = txn.nextReader_;
    if (txn.nextReader_)
        txn.nextReader_->prevReader_ = txn.prevReader_;
    txn.prevReader_ = txn.nextReader_ = nullptr;
    txn.readerShard_ = -1;
}

void TransactionManager::publishRunningLocked() {
    std::vector<TxnId>& ids = runningScratch_;
    ids.clear();
    for (Transaction* t = activeHead_; t; t = t->nextActive_) {
        // A prepared transaction leaves the running set, as WiredTiger's
        // leaves its global table: readers judge its versions by timestamp.
        // (prepareTs_ is set under this mutex, and reset only while the
        // transaction is off the list.)
        if (t->id_ != kNoTxnId && t->prepareTs_ == kNoTimestamp)
            ids.push_back(t->id_);
    }
    std::sort(ids.begin(), ids.end());
    // Release stores (plain moves on x86): each one orders the odd version
    // below, and everything this transaction did before (such as marking
    // its versions committed), before itself. A reader that reads any of
    // them with its acquire loads then sees the version odd or moved on,
    // and throws its copy away, or sees all of that.
    const Timestamp readPoint = readPointLocked();
    readPoint_.store(readPoint, std::memory_order_release);
    auto fill = [&](RunningTable& table) {
        table.snapMax.store(nextId_, std::memory_order_release);
        table.readPoint.store(readPoint, std::memory_order_release);
        for (size_t i = 0; i < ids.size(); ++i)
            table.ids[i].store(ids[i], std::memory_order_release);
        table.count.store(ids.size(), std::memory_order_release);
    };
    RunningTable* table = running_.load(std::memory_order_relaxed);  // only changed here
    if (ids.size() > table->capacity) {
        // Filled before anyone can see it; readers still on the old one
        // read it as it was (a snapshot of a moment ago), then epochs_ frees it.
        auto* bigger = new RunningTable(std::max(ids.size(), 2 * table->capacity));
        fill(*bigger);
        running_.store(bigger, std::memory_order_release);
        epochs_.retireObject(table);
        return;
    }
    // The sequence lock's write side (no fences: ThreadSanitizer does not
    // model them, and on x86 these orders cost nothing more).
    const uint64_t version = table->version.load(std::memory_order_relaxed);
    table->version.store(version + 1, std::memory_order_relaxed);
    fill(*table);
    table->version.store(version + 2, std::memory_order_release);
}

template <typename Read>
void TransactionManager::readRunning(Read&& read) const {
    auto guard = epochs_.pin();  // the table may be replaced by a bigger one
    const RunningTable* table = running_.load(std::memory_order_acquire);
    for (unsigned tries = 1;; ++tries) {
        const uint64_t before = table->version.load(std::memory_order_acquire);
        if ((before & 1) == 0) {
            read(*table);  // with acquire loads: the check below cannot move above them
            if (table->version.load(std::memory_order_relaxed) == before)
                return;
        }
        // A writer is mid-rewrite (a few stores under mutex_); if it was
        // preempted there, let it run rather than spin out our time slice.
        if (tries % 64 == 0)
            std::this_thread::yield();
        if (tries == 256) {
            // A steady stream of rewrites can keep failing the copy: under
            // mutex_ no rewrite runs, so this copy is whole (bounded wait).
            std::lock_guard lock(mutex_);
            read(*running_.load(std::memory_order_acquire));
            return;
        }
    }
}

void TransactionManager::takeSnapshot(Transaction& txn) const {
    Snapshot& snap = txn.snapshot_;
    readRunning([&](const RunningTable& table) {
        snap.snapMax = table.snapMax.load(std::memory_order_acquire);
        snap.readPoint = table.readPoint.load(std::memory_order_acquire);
        // Bounded: a torn read is thrown away, but must not overrun.
        const size_t n = std::min(table.count.load(std::memory_order_acquire), table.capacity);
        snap.concurrent.resize(n);
        for (size_t i = 0; i < n; ++i)
            snap.concurrent[i] = table.ids[i].load(std::memory_order_acquire);
    });
    snap.snapMin = snap.concurrent.empty() ? snap.snapMax : snap.concurrent.front();
}

void TransactionManager::countEnd(TxnState endState) {
    Counters& c = myCounters();
    if (endState == TxnState::kCommitted)
        c.committed.fetch_add(1, std::memory_order_relaxed);
    else
        c.aborted.fetch_add(1, std::memory_order_relaxed);
}

void TransactionManager::linkActive(Transaction& txn) {
    txn.linked_ = true;
    txn.prevActive_ = nullptr;
    txn.nextActive_ = activeHead_;
    if (activeHead_)
        activeHead_->prevActive_ = &txn;
    activeHead_ = &txn;
    ++activeCount_;
}

void TransactionManager::unlinkActive(Transaction& txn) {
    if (txn.prevActive_)
        txn.prevActive_->nextActive_ = txn.nextActive_;
    else
        activeHead_ = txn.nextActive_;
    if (txn.nextActive_)
        txn.nextActive_->prevActive_ = txn.prevActive_;
    txn.prevActive_ = txn.nextActive_ = nullptr;
    txn.linked_ = false;
    --activeCount_;
}

Status TransactionManager::begin(Transaction& txn, const BeginOptions& options) {
    if (txn.active())
        return Status::IllegalOperation(
            "a transaction is already running in this session; commit or abort it first");
    Timestamp readTs = options.readTs;
    txn.writes_.clear();
    txn.id_ = kNoTxnId;
    txn.commitTs_ = kNoTimestamp;
    txn.prepareTs_ = kNoTimestamp;
    txn.durableTs_ = kNoTimestamp;
    txn.ignorePrepare_ = options.ignorePrepare;
    txn.reserved_ = false;
    txn.committing_ = false;
    // A read timestamp above the read point: a commit at or below it may
    // still be in flight, and would change what a read there returns once
    // it lands. Wait for it, as MongoDB waits for its cluster time to be
    // all_durable (docs/mvcc.md, "Reads above the no-holes point").
    if (readTs != kNoTimestamp && readTs > readPoint_.load(std::memory_order_acquire)) {
        // The clock first: a commit given no timestamp from here on lands
        // above readTs, so the wait below is for the commits in flight now
        // only, and none can slip in under readTs before the snapshot.
        {
            std::lock_guard lock(mutex_);
            clock_ = std::max(clock_, readTs);
        }
        waitForCommitsThrough(readTs);
    }
    // The read bound: the read timestamp, or the read point raised to this
    // session's own newest commit (above the read point only while a
    // transaction that fixed an earlier timestamp early runs on: the one
    // case where a snapshot may miss an earlier commit, docs/mvcc.md). Set
    // before the transaction joins the active list or a reader shard: the
    // horizon reads it under that list's mutex.
    auto setBound = [&](Timestamp ts) {
        if (ts != kNoTimestamp)
            txn.readBound_ = ts;
        else if (txn.snapshot_.readPoint == kMaxTimestamp)
            txn.readBound_ = kMaxTimestamp;
        else
            txn.readBound_ =
                std::max({txn.snapshot_.readPoint, txn.lastOwnCommitTs_, options.ownCommitTs});
    };
    const TimestampPin* pin = options.pin;
    assert(!pin || (pin->manager_ == this && pin->ts() != kNoTimestamp));
    if (readTs == kNoTimestamp && options.unregistered) {
        // The common case takes no lock: the published running ids are the
        // snapshot, and such a reader pins nothing by timestamp; the caller's
        // epoch pin covers its snapshot (BeginOptions::unregistered).
        takeSnapshot(txn);
        setBound(kNoTimestamp);
    } else if (readTs == kNoTimestamp) {
        // On this thread's reader shard (readerShards_), not the active
        // list. The snapshot is taken under the shard's mutex: a horizon
        // that read the shard before this joined it had read the floor of
        // its moment before this snapshot, so this snapshot runs nothing
        // older than that floor (see horizon()).
        const size_t index = threadStripe() % readerShardCount_;
        ReaderShard& shard = readerShards_[index];
        std::lock_guard lock(shard.mutex);
        takeSnapshot(txn);
        txn.readTs_ = kNoTimestamp;
        txn.beginMicros_ = 0;  // read only for readers with a read timestamp
        setBound(kNoTimestamp);
        txn.readerShard_ = static_cast<int>(index);
        txn.prevReader_ = nullptr;
        txn.nextReader_ = shard.head;
        if (shard.head)
            shard.head->prevReader_ = &txn;
        shard.head = &txn;
    } else {
        std::lock_guard lock(mutex_);
        // A pin held since before oldest moved kept the history at and
        // above its timestamp (pins_ and oldest_ change under this lock).
        const bool pinned =
            pin && pin->manager_ == this && pin->ts() != kNoTimestamp && readTs >= pin->ts();
        if (readTs != kNoTimestamp && readTs < oldest_ && !pinned) {
            if (!options.roundUpReadTs)
                return Status::InvalidArgument(fmt::format(
                    "read timestamp {} is older than the oldest timestamp {}: that history may "
                    "be gone; read at or after {} (or ask for round-up)",
                    readTs, oldest_, oldest_));
            readTs = oldest_;
        }
        takeSnapshot(txn);
        clock_ = std::max(clock_, readTs);
        // Fields other threads read through the active list are set before
        // it is linked, under the same lock.
        txn.readTs_ = readTs;
        txn.beginMicros_ = nowMicros();
        setBound(readTs);
        linkActive(txn);  // oldest_reader, pinned and the history horizon see it
    }
    if (options.unregistered && readTs == kNoTimestamp) {
        txn.readTs_ = kNoTimestamp;
        txn.beginMicros_ = 0;
    }
    txn.state_ = TxnState::kActive;
    myCounters().begun.fetch_add(1, std::memory_order_relaxed);
    return Status::OK();
}

Status TransactionManager::checkCommitTsLocked(Timestamp ts, Timestamp held) const {
    if (ts == kNoTimestamp)
        return Status::InvalidArgument("commit timestamp 0 is not a timestamp; use one > 0");
    // Checked against the newest finished commit, which every all_durable
    // ever published is at or below; a timestamp the transaction already
    // holds was checked when it took it, and has held all_durable below it since.
    if (orderedCommits_ && ts != held && ts <= maxCommitted_)
        return Status::InvalidArgument(fmt::format(
            "commit timestamp {} is not after the newest commit, at {}: on an engine with an "
            "oplog (durable, or in memory with inMemoryOplogCapBytes > 0) transactions commit "
            "in timestamp order (an oplog reader may have read past {} already); use a newer "
            "timestamp, or fix it with timestampTransaction before others commit past it",
            ts, maxCommitted_, ts));
    if (ts <= checkpointFloor_)
        return Status::InvalidArgument(fmt::format(
            "commit timestamp {} must be after the newest checkpoint's timestamp {}", ts,
            checkpointFloor_));
    if (stable_ != kNoTimestamp && ts <= stable_)
        return Status::InvalidArgument(
            fmt::format("commit timestamp {} must be after the stable timestamp {}", ts, stable_));
    if (ts < oldest_)
        return Status::InvalidArgument(
            fmt::format("commit timestamp {} is older than the oldest timestamp {}", ts, oldest_));
    return Status::OK();
}

Status TransactionManager::setCommitTimestamp(Transaction& txn, Timestamp ts) {
    if (!txn.active())
        return Status::IllegalOperation("no transaction is running: begin one first");
    if (txn.hasReadTs() && ts < txn.readTs())
        return Status::InvalidArgument(
            fmt::format("commit timestamp {} is older than the transaction's read timestamp {}", ts,
                        txn.readTs()));
    std::lock_guard lock(mutex_);
    if (Status s = checkCommitTsLocked(ts, txn.commitTs_); !s.ok())
        return s;
    clock_ = std::max(clock_, ts);
    if (!txn.linked_)
        linkActive(txn);  // all_durable must see the commit timestamp
    txn.commitTs_ = ts;
    return Status::OK();
}

bool TransactionManager::wouldConflict(const Transaction& txn, const VersionSlot& slot) const {
    const Update* newest = newestLive(slot.head());
    return newest && !txn.canSee(newest);
}

Status TransactionManager::checkWrite(const Transaction& txn, const VersionSlot& slot) const {
    const Update* newest = newestLive(slot.head());
    if (newest && !txn.canSee(newest))
        return conflictStatus(txn, *newest);
    return Status::OK();
}

Status TransactionManager::write(Transaction& txn, VersionSlot& slot, WriteKind kind,
                                 std::string_view value, uint32_t collection) {
    if (txn.prepared())
        return Status::IllegalOperation(
            "the transaction is prepared: it takes no more writes; commit or abort it");
    if (txn.ignorePrepare_)
        return Status::IllegalOperation(
            "a transaction begun with ignorePrepare may not write (it reads as if prepared "
            "writes were absent), as WiredTiger's ignore_prepare");
    if (!txn.active())
        return Status::IllegalOperation("no transaction is running: begin one first");
    if (txn.id_ == kNoTxnId) {
        // The first write makes the transaction visible to others' snapshots.
        std::lock_guard lock(mutex_);
        if (nextId_ > Update::kMaxTxnId) [[unlikely]]
            return Status::Internal(fmt::format(
                "transaction ids are exhausted: versions carry ids up to {}", Update::kMaxTxnId));
        if (!txn.linked_)
            linkActive(txn);
        txn.id_ = nextId_++;
        publishRunningLocked();
    }
    Update* mine = nullptr;
    const Update* ownPrevious;
    while (true) {
        Update* head = slot.head();
        const Update* newest = newestLive(head);
        if (newest && !txn.canSee(newest)) {
            if (mine)
                Update::destroy(mine);
            return conflictStatus(txn, *newest);
        }
        ownPrevious = newest && newest->txnId() == txn.id_ ? newest : nullptr;
        if (!mine)
            mine = Update::make(txn.id_, kind == WriteKind::kTombstone, value);
        if (slot.tryPrepend(head, mine))
            break;
    }
    txn.writes_.push_back({mine, ownPrevious, collection});
    return Status::OK();
}

Timestamp TransactionManager::finish(Transaction& txn, TxnState endState, bool* holeBelow) {
    Timestamp allDurableAfter = kNoTimestamp;
    if (txn.readerShard_ >= 0)
        leaveReaderShard(txn);  // ending: its snapshot holds nothing back any more
    if (txn.linked_) {
        const bool heldTimestamp = txn.commitTs_ != kNoTimestamp;
        {
            std::lock_guard lock(mutex_);
            unlinkActive(txn);
            txn.committing_ = false;
            // A read-only commit's timestamp wrote nothing: it must not move
            // all_durable (past the clock, ahead of commits still to come).
            if (endState == TxnState::kCommitted && (!txn.writes_.empty() || txn.reserved_))
                maxCommitted_ = std::max({maxCommitted_, txn.commitTs_, txn.durableTs_});
            // After its updates were marked: readers see both or neither.
            // The read point moves with maxCommitted_ and the holes.
            if (txn.id_ != kNoTxnId || heldTimestamp)
                publishRunningLocked();
            allDurableAfter = allDurableLocked();
            if (holeBelow)
                *holeBelow = heldTimestamp && orderedCommits_ && committingThroughLocked(txn.commitTs_);
        }
        if (heldTimestamp)
            wakeHoleWaiters();
    }
    if (txn.state_ == TxnState::kPrepared) {
        auto& counter = endState == TxnState::kCommitted ? preparedCommitted_ : preparedAborted_;
        counter.fetch_add(1, std::memory_order_relaxed);
    }
    countEnd(endState);
    txn.state_ = endState;
    return allDurableAfter;
}

Status TransactionManager::commit(Transaction& txn, std::optional<Timestamp> commitTs) {
    auto prepared = prepareCommit(txn, commitTs);
    if (!prepared.ok())
        return prepared.status();
    if (txn.active())
        completeCommit(txn);
    return Status::OK();
}

StatusWith<Timestamp> TransactionManager::prepareCommit(Transaction& txn,
                                                        std::optional<Timestamp> commitTs) {
    if (!txn.active())
        return Status::IllegalOperation("no transaction is running: nothing to commit");
    if (commitTs && txn.hasReadTs() && *commitTs < txn.readTs()) {
        Timestamp readTs = txn.readTs();
        abort(txn);
        return Status::InvalidArgument(fmt::format(
            "commit timestamp {} is older than the transaction's read timestamp {}; the "
            "transaction was rolled back",
            *commitTs, readTs));
    }
    if (txn.writes_.empty()) {
        // Read-only: nothing to timestamp, but a given timestamp must still be legal.
        if (commitTs) {
            Status s;
            {
                std::lock_guard lock(mutex_);
                s = checkCommitTsLocked(*commitTs, *commitTs);  // logs nothing: not ordered
            }
            if (!s.ok()) {
                abort(txn);
                return Status(s.code(), s.message() + "; the transaction was rolled back");
            }
        }
        finish(txn, TxnState::kCommitted);
        // Recorded once off the active list: other threads read commitTs_ of
        // active transactions only, and a read-only one must not hold back
        // all_durable.
        if (commitTs)
            txn.commitTs_ = *commitTs;
        return kNoTimestamp;
    }

    Timestamp ts = commitTs ? *commitTs : txn.commitTs_;
    // An explicit 0 is checked (and refused), not taken as "assign one".
    bool assigned = !commitTs && ts == kNoTimestamp;
    Status tsStatus;
    {
        std::lock_guard lock(mutex_);
        if (assigned)
            ts = std::max({clock_, stable_, oldest_}) + 1;
        else
            tsStatus = checkCommitTsLocked(ts, txn.commitTs_);
        if (tsStatus.ok()) {
            clock_ = std::max(clock_, ts);
            txn.commitTs_ = ts;  // from here all_durable stays below ts until we finish
            txn.committing_ = true;
        }
    }
    if (!tsStatus.ok()) {
        abort(txn);
        return Status(tsStatus.code(), tsStatus.message() + "; the transaction was rolled back");
    }
    if (!assigned) {
        // A caller's timestamp must not go behind a key's newest commit. The
        // version below ours cannot change while ours is uncommitted on top
        // (any other writer conflicts), so this check needs no lock.
        for (const WriteRecord& w : txn.writes_) {
            const Update* prev = supersededVersion(w.update, txn.id_);
            if (prev && prev->state() == UpdateState::kCommitted && prev->startTs() > ts) {
                Timestamp prevTs = prev->startTs();
                abort(txn);
                return Status::InvalidArgument(fmt::format(
                    "commit timestamp {} is older than timestamp {} of a newer committed "
                    "version of a key it writes; the transaction was rolled back",
                    ts, prevTs));
            }
        }
    }
    return ts;
}

Timestamp TransactionManager::completeCommit(Transaction& txn) {
    const Timestamp ts = txn.commitTs_;
    if (txn.durableTs_ == kNoTimestamp)
        txn.durableTs_ = ts;
    // In write order: the history sweep relies on it. While this loop runs
    // it may find an earlier write of ours committed under a later one still
    // uncommitted, and cut below the earlier one only; in the other order it
    // would take a later write (committed) over an earlier one (uncommitted,
    // not yet marked) for an aborted version and free it under us.
    for (const WriteRecord& w : txn.writes_)
        w.update->markCommitted(ts);
    bool holeBelow = false;
    const Timestamp allDurableAfter = finish(txn, TxnState::kCommitted, &holeBelow);
    if (!txn.writes_.empty())
        txn.lastOwnCommitTs_ = ts;
    // Acknowledged only once every earlier-timestamped commit in flight is
    // visible too: an untimestamped snapshot taken after this returns sees
    // this commit (its read point is past it), whoever takes it.
    if (holeBelow)
        waitForCommitsThrough(ts);
    return allDurableAfter;
}

StatusWith<Timestamp> TransactionManager::reserveTimestamp(Transaction& txn,
                                                           std::optional<Timestamp> at) {
    if (!txn.active())
        return Status::IllegalOperation("no transaction is running: begin one first");
    if (!txn.writes_.empty() || txn.commitTs_ != kNoTimestamp)
        return Status::IllegalOperation("the transaction already writes or has a commit timestamp");
    std::lock_guard lock(mutex_);
    Timestamp ts = std::max({clock_, stable_, oldest_}) + 1;
    if (at) {
        if (Status s = checkCommitTsLocked(*at, kNoTimestamp); !s.ok())
            return s;
        ts = *at;
    }
    clock_ = std::max(clock_, ts);
    if (!txn.linked_)
        linkActive(txn);
    txn.commitTs_ = ts;
    txn.reserved_ = true;
    txn.committing_ = true;  // a catalog change: logged and finished right away
    return ts;
}

void TransactionManager::abort(Transaction& txn) {
    if (!txn.active() && !txn.prepared())
        return;
    for (const WriteRecord& w : txn.writes_)
        w.update->markAborted();
    finish(txn, TxnState::kAborted);
}

Status TransactionManager::prepare(Transaction& txn, Timestamp prepareTs) {
    if (txn.prepared())
        return Status::IllegalOperation(
            fmt::format("the transaction is already prepared at timestamp {}; commit or abort it",
                        txn.prepareTs_));
    if (!txn.active())
        return Status::IllegalOperation("no transaction is running: nothing to prepare");
    if (prepareTs == kNoTimestamp)
        return Status::InvalidArgument("prepare timestamp 0 is not a timestamp; use one > 0");
    if (txn.commitTs_ != kNoTimestamp)
        return Status::InvalidArgument(fmt::format(
            "the transaction already has commit timestamp {}; a prepared transaction gets its "
            "commit timestamp at commit, after prepare",
            txn.commitTs_));
    if (txn.hasReadTs() && prepareTs < txn.readTs())
        return Status::InvalidArgument(
            fmt::format("prepare timestamp {} is older than the transaction's read timestamp {}",
                        prepareTs, txn.readTs()));
    // Its versions stay put from here on (nobody writes under them), and a
    // key's newest commit must not be after the prepare timestamp.
    for (const WriteRecord& w : txn.writes_) {
        const Update* prev = supersededVersion(w.update, txn.id_);
        if (prev && prev->state() == UpdateState::kCommitted && prev->startTs() > prepareTs)
            return Status::InvalidArgument(fmt::format(
                "prepare timestamp {} is older than timestamp {} of a newer committed version of "
                "a key the transaction writes",
                prepareTs, prev->startTs()));
    }
    std::unique_lock lock(mutex_);
    if (stable_ != kNoTimestamp && prepareTs <= stable_)
        return Status::InvalidArgument(fmt::format(
            "prepare timestamp {} must be after the stable timestamp {}", prepareTs, stable_));
    if (oldest_ != kNoTimestamp && prepareTs <= oldest_)
        return Status::InvalidArgument(fmt::format(
            "prepare timestamp {} must be after the oldest timestamp {}", prepareTs, oldest_));
    if (prepareTs <= checkpointFloor_)
        return Status::InvalidArgument(
            fmt::format("prepare timestamp {} must be after the newest checkpoint's timestamp {}",
                        prepareTs, checkpointFloor_));
    if (orderedCommits_ && prepareTs <= maxCommitted_)
        return Status::InvalidArgument(fmt::format(
            "prepare timestamp {} is not after the newest commit, at {}: on an engine with an "
            "oplog a reader of it may have read past it; use a newer timestamp",
            prepareTs, maxCommitted_));
    clock_ = std::max(clock_, prepareTs);
    if (!txn.linked_)
        linkActive(txn);
    // Held like a commit timestamp: all_durable, and so every checkpoint,
    // stays below prepareTs until the transaction ends, and its commit
    // (at or after prepareTs) may follow others' (checkCommitTsLocked).
    txn.commitTs_ = prepareTs;
    txn.prepareTs_ = prepareTs;
    for (const WriteRecord& w : txn.writes_)
        w.update->markPrepared(prepareTs);
    txn.state_ = TxnState::kPrepared;
    if (txn.id_ != kNoTxnId)
        publishRunningLocked();
    preparedTotal_.fetch_add(1, std::memory_order_relaxed);
    lock.unlock();  // a shard's mutex is never taken under mutex_ (lock order)
    // Prepared, it reads nothing more: its snapshot holds nothing back.
    if (txn.readerShard_ >= 0)
        leaveReaderShard(txn);
    return Status::OK();
}

Status TransactionManager::prepareCommitPrepared(Transaction& txn, Timestamp commitTs,
                                                 Timestamp durableTs) {
    if (!txn.prepared())
        return Status::IllegalOperation(
            "the transaction is not prepared: commit it with one timestamp");
    const Timestamp prepareTs = txn.prepareTs_;
    if (commitTs < prepareTs)
        return Status::InvalidArgument(fmt::format(
            "commit timestamp {} is older than the prepare timestamp {}; the transaction stays "
            "prepared: commit it at or after {}, or abort it",
            commitTs, prepareTs, prepareTs));
    if (durableTs < commitTs)
        return Status::InvalidArgument(fmt::format(
            "durable timestamp {} is older than the commit timestamp {}; the transaction stays "
            "prepared: give a durable timestamp at or after the commit timestamp, or abort it",
            durableTs, commitTs));
    std::lock_guard lock(mutex_);
    if (stable_ != kNoTimestamp && durableTs <= stable_)
        return Status::InvalidArgument(fmt::format(
            "durable timestamp {} must be after the stable timestamp {}; the transaction stays "
            "prepared",
            durableTs, stable_));
    // commitTs >= prepareTs > every checkpoint timestamp chosen since the
    // prepare (all_durable was held below prepareTs), and oplog readers
    // have not read past prepareTs: no other rule applies (WiredTiger
    // checks a prepared commit against its prepare timestamp only). Until
    // completeCommit its versions are still prepared, so all_durable stays
    // below prepareTs, not commitTs (heldTimestamp).
    clock_ = std::max({clock_, commitTs, durableTs});
    txn.commitTs_ = commitTs;
    txn.durableTs_ = durableTs;
    return Status::OK();
}

Status TransactionManager::commitPrepared(Transaction& txn, Timestamp commitTs,
                                          Timestamp durableTs) {
    if (Status s = prepareCommitPrepared(txn, commitTs, durableTs); !s.ok())
        return s;
    completeCommit(txn);
    return Status::OK();
}

void TransactionManager::cancelCommitPrepared(Transaction& txn) {
    if (!txn.prepared())
        return;
    std::lock_guard lock(mutex_);
    // Prepared again: held, as prepare() holds it, below the prepare
    // timestamp (with no commit timestamp it would hold nothing back).
    txn.commitTs_ = txn.prepareTs_;
    txn.durableTs_ = kNoTimestamp;
}

Status TransactionManager::raiseNextTxnId(TxnId id) {
    if (id > Update::kMaxTxnId)
        return Status::Corruption(fmt::format(
            "the log names transaction id {}, above the largest id mvkv hands out ({})", id,
            Update::kMaxTxnId));
    std::lock_guard lock(mutex_);
    if (id >= nextId_) {
        nextId_ = id + 1;
        publishRunningLocked();
    }
    return Status::OK();
}

Status TransactionManager::adoptTxnId(Transaction& txn, TxnId id) {
    if (!txn.active() || txn.id_ != kNoTxnId || id == kNoTxnId)
        return Status::IllegalOperation(
            "only a running transaction that has written nothing can take a logged id");
    std::lock_guard lock(mutex_);
    if (id >= nextId_)
        return Status::InvalidArgument(
            fmt::format("transaction id {} was not handed out yet (next is {})", id, nextId_));
    if (!txn.linked_)
        linkActive(txn);
    txn.id_ = id;
    publishRunningLocked();
    return Status::OK();
}

Status TransactionManager::handOverPrepared(Transaction& from, Transaction& to) {
    if (!from.prepared() || to.state_ != TxnState::kIdle || to.linked_)
        return Status::IllegalOperation(
            "only a prepared transaction can be handed over, to an idle one");
    assert(from.readerShard_ < 0);  // prepare() took it off its shard
    std::lock_guard lock(mutex_);
    to.state_ = from.state_;
    to.id_ = from.id_;
    to.readTs_ = from.readTs_;
    to.readBound_ = from.readBound_;
    to.commitTs_ = from.commitTs_;
    to.prepareTs_ = from.prepareTs_;
    to.durableTs_ = from.durableTs_;
    to.ignorePrepare_ = from.ignorePrepare_;
    to.snapshot_ = std::move(from.snapshot_);
    to.writes_ = std::move(from.writes_);
    to.reserved_ = from.reserved_;
    to.beginMicros_ = from.beginMicros_;
    if (from.linked_) {
        // `to` takes `from`'s place in the list: the oldest-reader and
        // running-id answers do not change.
        to.linked_ = true;
        to.prevActive_ = from.prevActive_;
        to.nextActive_ = from.nextActive_;
        if (to.prevActive_)
            to.prevActive_->nextActive_ = &to;
        else
            activeHead_ = &to;
        if (to.nextActive_)
            to.nextActive_->prevActive_ = &to;
        from.prevActive_ = from.nextActive_ = nullptr;
        from.linked_ = false;
    }
    from.state_ = TxnState::kIdle;
    from.id_ = kNoTxnId;
    from.readTs_ = from.commitTs_ = from.prepareTs_ = from.durableTs_ = kNoTimestamp;
    from.readBound_ = kMaxTimestamp;
    from.ignorePrepare_ = false;
    from.reserved_ = false;
    from.writes_.clear();
    return Status::OK();
}

TransactionManager::PreparedCounts TransactionManager::preparedCounts() const {
    PreparedCounts c;
    c.total = preparedTotal_.load(std::memory_order_relaxed);
    c.committed = preparedCommitted_.load(std::memory_order_relaxed);
    c.aborted = preparedAborted_.load(std::memory_order_relaxed);
    c.current = c.total - std::min(c.total, c.committed + c.aborted);
    return c;
}

Status TransactionManager::setOldest(Timestamp ts) {
    std::lock_guard lock(mutex_);
    if (ts < oldest_)
        return Status::InvalidArgument(fmt::format(
            "oldest timestamp {} is older than the current oldest timestamp {}; it only moves "
            "forward",
            ts, oldest_));
    if (stable_ != kNoTimestamp && ts > stable_)
        return Status::InvalidArgument(fmt::format(
            "oldest timestamp {} is newer than the stable timestamp {}; oldest must not pass "
            "stable",
            ts, stable_));
    oldest_ = ts;
    clock_ = std::max(clock_, ts);
    return Status::OK();
}

Status TransactionManager::setStable(Timestamp ts) {
    std::lock_guard lock(mutex_);
    if (ts < stable_)
        return Status::InvalidArgument(fmt::format(
            "stable timestamp {} is older than the current stable timestamp {}; it only moves "
            "forward",
            ts, stable_));
    if (ts < oldest_)
        return Status::InvalidArgument(fmt::format(
            "stable timestamp {} is older than the oldest timestamp {}; stable must not fall "
            "behind oldest",
            ts, oldest_));
    stable_ = ts;
    clock_ = std::max(clock_, ts);
    return Status::OK();
}

TimestampPin TransactionManager::chooseCheckpointTimestamp() {
    std::lock_guard lock(mutex_);
    const Timestamp allDurable = allDurableLocked();
    Timestamp ts = stable_ != kNoTimestamp ? std::min(stable_, allDurable) : allDurable;
    if (ts < oldest_) {
        // Nothing committed since oldest moved: reading at oldest reads the
        // same, unless a running transaction holds a timestamp at or below it.
        for (const Transaction* t = activeHead_; t; t = t->nextActive_)
            if (t->commitTs_ != kNoTimestamp && heldTimestamp(*t) <= oldest_)
                return TimestampPin();
        ts = oldest_;
    }
    checkpointFloor_ = std::max(checkpointFloor_, ts);
    if (ts == kNoTimestamp)
        return TimestampPin();  // nothing committed: nothing to read or hold
    // ts >= oldest_ >= every horizon given out so far: nothing a read at ts
    // needs was discarded, and from here on nothing is.
    pins_.push_back(ts);
    return TimestampPin(this, ts);
}

void TransactionManager::releasePin(Timestamp ts) {
    std::lock_guard lock(mutex_);
    auto it = std::find(pins_.begin(), pins_.end(), ts);
    assert(it != pins_.end());
    if (it != pins_.end()) {
        *it = pins_.back();
        pins_.pop_back();
    }
}

TimestampPin::TimestampPin(TimestampPin&& other) noexcept
    : manager_(std::exchange(other.manager_, nullptr)),
      ts_(std::exchange(other.ts_, kNoTimestamp)) {}

TimestampPin& TimestampPin::operator=(TimestampPin&& other) noexcept {
    if (this != &other) {
        release();
        manager_ = std::exchange(other.manager_, nullptr);
        ts_ = std::exchange(other.ts_, kNoTimestamp);
    }
    return *this;
}

void TimestampPin::release() {
    if (manager_)
        std::exchange(manager_, nullptr)->releasePin(ts_);
    ts_ = kNoTimestamp;
}

void TransactionManager::raiseCheckpointFloor(Timestamp ts) {
    std::lock_guard lock(mutex_);
    checkpointFloor_ = std::max(checkpointFloor_, ts);
    clock_ = std::max(clock_, ts);
    // Every commit the checkpoint holds is at or below ts and finished: the
    // no-holes point (and the read point) start there, whether or not the
    // log still holds a record to replay.
    maxCommitted_ = std::max(maxCommitted_, ts);
    publishRunningLocked();
}

void TransactionManager::noteLoggedTimestamp(Timestamp ts) {
    std::lock_guard lock(mutex_);
    clock_ = std::max(clock_, ts);
    maxCommitted_ = std::max(maxCommitted_, ts);
    publishRunningLocked();  // the read point moved
}

Timestamp TransactionManager::allDurable() const {
    std::lock_guard lock(mutex_);
    return allDurableLocked();
}

Timestamp TransactionManager::readPoint() const {
    return readPoint_.load(std::memory_order_acquire);
}

void TransactionManager::requireOrderedCommits() {
    std::lock_guard lock(mutex_);
    orderedCommits_ = true;
    publishRunningLocked();  // from now on snapshots have a read point
}

Timestamp TransactionManager::readPointLocked() const {
    if (!orderedCommits_)
        return kMaxTimestamp;
    Timestamp result = maxCommitted_;
    for (const Transaction* t = activeHead_; t; t = t->nextActive_) {
        if (t->commitTs_ != kNoTimestamp && t->prepareTs_ == kNoTimestamp)
            result = std::min(result, t->commitTs_ - 1);
    }
    return result;
}

bool TransactionManager::committingThroughLocked(Timestamp ts) const {
    for (const Transaction* t = activeHead_; t; t = t->nextActive_) {
        if (t->committing_ && t->prepareTs_ == kNoTimestamp && t->commitTs_ <= ts)
            return true;
    }
    return false;
}

void TransactionManager::waitForCommitsThrough(Timestamp ts) {
    // The hole is another committer between its two steps, usually running
    // on another core: a short spin on the published read point first.
    for (int i = 0; i < 64; ++i) {
        if (readPoint_.load(std::memory_order_acquire) >= ts)
            return;
#if defined(__x86_64__) || defined(__i386__)
        for (int p = 0; p < 8; ++p)
            __builtin_ia32_pause();
#endif
    }
    holeWaiters_.fetch_add(1);  // seq_cst: before the check below (see holeWaiters_)
    {
        std::unique_lock sleep(holeMutex_);
        bool slept = false;
        while (true) {
            bool inFlight;
            {
                std::lock_guard lock(mutex_);
                inFlight = committingThroughLocked(ts);
            }
            if (!inFlight)
                break;
            if (!slept)
                holeWaits_.fetch_add(1, std::memory_order_relaxed);
            slept = true;
            holeCv_.wait(sleep);
        }
    }
    holeWaiters_.fetch_sub(1);
}

void TransactionManager::wakeHoleWaiters() {
    if (holeWaiters_.load() == 0)  // seq_cst: after mutex_ was released (see holeWaiters_)
        return;
    std::lock_guard sleep(holeMutex_);
    holeCv_.notify_all();
}

Timestamp TransactionManager::allDurableLocked() const {
    Timestamp result = maxCommitted_;
    for (const Transaction* t = activeHead_; t; t = t->nextActive_) {
        if (t->commitTs_ != kNoTimestamp)
            result = std::min(result, heldTimestamp(*t) - 1);
    }
    return result;
}

Timestamp TransactionManager::oldestReaderLocked(const Transaction** who) const {
    Timestamp oldest = kNoTimestamp;
    for (const Transaction* t = activeHead_; t; t = t->nextActive_) {
        if (t->readTs_ != kNoTimestamp && (oldest == kNoTimestamp || t->readTs_ < oldest)) {
            oldest = t->readTs_;
            if (who)
                *who = t;
        }
    }
    return oldest;
}

TxnId TransactionManager::snapshotFloorNow(Timestamp* readPoint) const {
    TxnId floor = kNoTxnId;
    readRunning([&](const RunningTable& table) {
        if (readPoint)
            *readPoint = table.readPoint.load(std::memory_order_acquire);
        floor = table.count.load(std::memory_order_acquire) == 0
                    ? table.snapMax.load(std::memory_order_acquire)
                    : table.ids[0].load(std::memory_order_acquire);
    });
    return floor;
}

Timestamp TransactionManager::pinnedLocked() const {
    // As WiredTiger: nothing is pinned until an oldest timestamp is set.
    if (oldest_ == kNoTimestamp)
        return kNoTimestamp;
    Timestamp pinned = oldest_;
    if (Timestamp reader = oldestReaderLocked(nullptr); reader != kNoTimestamp)
        pinned = std::min(pinned, reader);
    for (Timestamp p : pins_)
        pinned = std::min(pinned, p);
    return pinned;
}

Horizon TransactionManager::horizon(TxnId unregisteredFloor,
                                    Timestamp unregisteredReadPoint) const {
    // The floor and read point of now first: a reader that begins after
    // this takes a snapshot no older (the running table only moves on), so
    // what follows needs to find only the readers that began before it.
    Timestamp readPointNow = kNoTimestamp;
    const TxnId floorNow = snapshotFloorNow(&readPointNow);
    Horizon h;
    h.pinnedTs = std::min(unregisteredReadPoint, readPointNow);
    h.oldestId = std::min(unregisteredFloor, floorNow);
    {
        std::lock_guard lock(mutex_);
        h.pinnedTs = std::min(h.pinnedTs, pinnedLocked());
        h.newestId = nextId_;
        for (const Transaction* t = activeHead_; t; t = t->nextActive_)
            if (t->prepareTs_ == kNoTimestamp) {  // a prepared one reads nothing more
                h.oldestId = std::min(h.oldestId, t->snapshot_.snapMin);
                // An untimestamped snapshot sees nothing above its bound: a
                // version newer than it does not make an older one obsolete.
                if (t->readTs_ == kNoTimestamp)
                    h.pinnedTs = std::min(h.pinnedTs, t->readBound_);
            }
    }
    // Then the reader shards (readerShards_): a registered reader that
    // began before this call is on its shard until it ends or is prepared.
    for (size_t i = 0; i < readerShardCount_; ++i) {
        ReaderShard& shard = readerShards_[i];
        std::lock_guard shardLock(shard.mutex);
        for (const Transaction* t = shard.head; t; t = t->nextReader_) {
            // Both set in begin() under this mutex, before t joined the
            // shard, and not changed while it is on it.
            h.oldestId = std::min(h.oldestId, t->snapshot_.snapMin);
            h.pinnedTs = std::min(h.pinnedTs, t->readBound_);
        }
    }
    return h;
}

TransactionManager::PinningReader TransactionManager::pinningReader() const {
    std::lock_guard lock(mutex_);
    const Transaction* who = nullptr;
    PinningReader r;
    r.readTs = oldestReaderLocked(&who);
    if (who) {
        r.any = true;
        r.owner = who->owner_;
        r.ageMicros = nowMicros() - who->beginMicros_;
    }
    return r;
}

Timestamps TransactionManager::timestamps() const {
    std::lock_guard lock(mutex_);
    Timestamps out;
    out.clock = clock_;
    out.oldest = oldest_;
    out.stable = stable_;
    out.allDurable = allDurableLocked();
    out.readPoint = readPointLocked();
    out.oldestReader = oldestReaderLocked(nullptr);
    out.pinned = pinnedLocked();
    return out;
}

MvccStats TransactionManager::stats() const {
    MvccStats s;
    for (const Counters& c : counters_) {
        s.begun += c.begun.load(std::memory_order_relaxed);
        s.committed += c.committed.load(std::memory_order_relaxed);
        s.aborted += c.aborted.load(std::memory_order_relaxed);
    }
    s.writeConflicts = writeConflicts_.load(std::memory_order_relaxed);
    s.retries = retries_.load(std::memory_order_relaxed);
    s.holeWaits = holeWaits_.load(std::memory_order_relaxed);
    std::lock_guard lock(mutex_);
    // Readers without a read timestamp are not on the active list.
    uint64_t ended = s.committed + s.aborted;
    s.active = s.begun > ended ? s.begun - ended : 0;
    const Transaction* who = nullptr;
    s.oldestReadTs = oldestReaderLocked(&who);
    if (who)
        s.oldestReaderAgeMicros = nowMicros() - who->beginMicros_;
    return s;
}

}  // namespace mvkv::mvcc
