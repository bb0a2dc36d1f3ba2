// Session's prepared transactions (docs/mvcc.md, "Prepared transactions";
// docs/oplog.md for their records): prepare, the commit with commit and
// durable timestamps, abort, the prepare conflict readers get, and the
// wait of implicit readers for a prepared transaction to resolve.
#include <fmt/format.h>

#include "recovery/durable_log.h"
#include "engine/engine.h"
#include "engine/namespace.h"
#include "engine/op_scope.h"
#include "engine/session.h"
#include "engine/write_entries.h"
#include "failpoint/failpoints.h"
#include "lockmgr/raii_locks.h"
#include "util/printable.h"

namespace mvkv::engine {

using lockmgr::LockMode;

Status Session::prepare(mvcc::Timestamp prepareTs) {
    if (!explicit_)
        return Status::IllegalOperation(
            "no transaction is running: begin one, write, then prepare");
    OpScope op(*this, {CurOpType::kCommand, "prepareTransaction"});
    Status s = prepareTxn(prepareTs, true);
    if (!s.ok() && !txn_.active() && !txn_.prepared()) {
        // The prepare record could not be written: rolled back.
        tally_.add(OpTally::kTxnAborted);
        endExplicit();
    }
    return op.finish(std::move(s));
}

Status Session::prepareTxn(mvcc::Timestamp prepareTs, bool log) {
    if (Status s = engine_.txns_.prepare(txn_, prepareTs); !s.ok())
        return s;
    const bool logged = log && engine_.logging_ && txn_.id() != mvcc::kNoTxnId;
    if (logged) {
        if (Status s = logPrepareRecord(false); !s.ok()) {
            const mvcc::TxnId id = txn_.id();
            engine_.txns_.abort(txn_);
            pending_.clear();
            engine_.oplog_->notifyCommit();  // its hold on all_durable is gone
            // Readers may have met its versions while they were prepared and
            // wait for it to resolve: it did (aborted).
            engine_.prepared_.resolved(id);
            return Status(s.code(),
                          "the transaction was rolled back: its prepare record was not "
                          "written: " +
                              s.message());
        }
    }
    txnDesc_.prepareTs.store(prepareTs, std::memory_order_relaxed);
    describeTxn();
    PreparedTxnInfo info;
    info.txnId = txn_.id();
    info.prepareTs = prepareTs;
    info.readTs = txn_.readTs();
    info.sessionId = log ? id_ : 0;
    info.writes = txn_.writes().size();
    engine_.prepared_.add(info);
    return Status::OK();
}

Status Session::commit(mvcc::Timestamp commitTs, mvcc::Timestamp durableTs) {
    if (!explicit_)
        return Status::IllegalOperation("no transaction is running: nothing to commit");
    if (!txn_.prepared())
        return Status::IllegalOperation(
            "the transaction is not prepared: a commit with a durable timestamp is for prepared "
            "transactions; commit it with one timestamp");
    OpScope op(*this, {CurOpType::kCommand, "commitTransaction"});
    Status s = commitPreparedTxn(commitTs, durableTs);
    if (txn_.prepared())
        return op.finish(std::move(s));  // refused: still prepared
    tally_.add(s.ok() ? OpTally::kTxnCommitted : OpTally::kTxnAborted);
    endExplicit();
    return op.finish(std::move(s));
}

Status Session::commitPreparedTxn(mvcc::Timestamp commitTs, mvcc::Timestamp durableTs) {
    const mvcc::TxnId id = txn_.id();
    measureCommit();
    if (Status s = engine_.txns_.prepareCommitPrepared(txn_, commitTs, durableTs); !s.ok())
        return s;
    Status s;
    if (engine_.logging_ && !txn_.writes().empty()) {
        // The commit record is an ordinary one at commitTs with the
        // transaction's id (recovery matches it with the prepare record),
        // ending with the durable timestamp, which recovery restores.
        s = appendCommitRecord(durableTs);
        if (!s.ok()) {
            // Not rolled back: the log holds its prepare and no resolution,
            // so prepared is what the next open rebuilds. Kept prepared here
            // too, to be committed again or aborted.
            engine_.txns_.cancelCommitPrepared(txn_);
            return Status(s.code(), commitRecordError(s));
        }
        if (failpoint::hangAfterOplogAppend.armed() && clientOp())
            failpoint::hangAfterOplogAppend.pauseIfFires();
        if (failpoint::abortProcess.armed() && clientOp())
            failpoint::crashPoint("afterOplogAppend");
        engine_.oplog_->publishVisible(engine_.txns_.completeCommit(txn_));
    } else if (engine_.logging_) {
        // Nothing to log, but a prepared transaction held all_durable below
        // its prepare timestamp: the commits it held back become visible.
        engine_.oplog_->publishVisible(engine_.txns_.completeCommit(txn_));
    } else {
        engine_.txns_.completeCommit(txn_);
    }
    if (s.ok()) {
        applyCommitCounts();
        if (!txn_.writes().empty())
            lastCommitTs_ = commitTs;
    }
    pending_.clear();
    txnDesc_.prepareTs.store(0, std::memory_order_relaxed);
    engine_.prepared_.resolved(id);
    return s;
}

std::string Session::commitRecordError(const Status& s) const {
    if (s.code() == StatusCode::kIOError)
        return fmt::format(
            "the prepared transaction was not committed and stays prepared: its commit record "
            "could not be written ({}); the engine takes no more writes (restart it): the next "
            "open rebuilds it as prepared (or committed, if the record reached the log file "
            "before the error), to be resolved there by its id {}",
            s.message(), txn_.id());
    return "the prepared transaction was not committed and stays prepared: its commit record "
           "could not be written: " +
           s.message() + "; commit it again or abort it";
}

Status Session::abortPreparedTxn(bool log) {
    const mvcc::TxnId id = txn_.id();
    Status logged;
    if (log && engine_.logging_ && id != mvcc::kNoTxnId) {
        // Without it the next open rebuilds the transaction as prepared. It
        // is rolled back here all the same (its versions must go); the
        // caller says so.
        logged = logPrepareRecord(true);
    }
    engine_.txns_.abort(txn_);
    pending_.clear();
    if (engine_.logging_)
        engine_.oplog_->notifyCommit();  // its hold on all_durable is gone
    txnDesc_.prepareTs.store(0, std::memory_order_relaxed);
    engine_.prepared_.resolved(id);
    if (logged.ok())
        return logged;
    return Status(logged.code(),
                  fmt::format("the prepared transaction was rolled back, but its abort record "
                              "could not be written ({}): the next open rebuilds it as prepared, "
                              "to be aborted again there by its id {}",
                              logged.message(), id));
}

Status Session::handOverPrepared(Session& to) {
    if (Status s = engine_.txns_.handOverPrepared(txn_, to.txn_); !s.ok())
        return s;
    // The locks go with the transaction: a drop still waits for it. The
    // held locks point at the locker, which moves as a whole. currentOp
    // reads both sessions' lockers under the registry's mutex.
    {
        std::lock_guard registry(engine_.ops_.mutex());
        std::swap(locker_, to.locker_);
    }
    // A kill of the closing session's last operation must not stop the
    // new owner's lock waits (only a session's next operation clears it).
    to.locker_->clearInterrupt();
    to.txnLocks_ = std::move(txnLocks_);
    to.txnLockModes_ = std::move(txnLockModes_);
    to.txnCollections_ = std::move(txnCollections_);
    to.pending_ = std::move(pending_);
    txnLocks_.clear();
    txnLockModes_.clear();
    txnCollections_.clear();
    pending_.clear();
    to.explicit_ = true;
    const auto relaxed = std::memory_order_relaxed;
    to.txnDesc_.readTs.store(txnDesc_.readTs.load(relaxed), relaxed);
    to.txnDesc_.startMicros.store(txnDesc_.startMicros.load(relaxed), relaxed);
    to.txnDesc_.prepareTs.store(txnDesc_.prepareTs.load(relaxed), relaxed);
    to.describeTxn();
    to.txnDesc_.open.store(true, std::memory_order_release);
    // Neither committed nor aborted here: endExplicit counts nothing.
    txnDesc_.prepareTs.store(0, relaxed);
    endExplicit();
    return Status::OK();
}

void Session::abandonPrepared() {
    if (txn_.prepared())
        abortPreparedTxn(false).ignore();
}

Status Session::logPrepareRecord(bool abort) {
    const auto& writes = txn_.writes();
    const mvcc::Timestamp ts = txn_.prepareTs();
    const auto count = static_cast<uint32_t>(abort ? 1 : writes.size() + 1);
    oplog::startPayload(&logPayload_, count);
    oplog::addEntry(&logPayload_, ts, txn_.id(), oplog::OpType::kCommand, oplog::kPreparedTxnNs, {},
                    abort ? oplog::kAbortPreparedCommand : oplog::kPrepareCommand);
    if (!abort)
        addWriteEntries(&logPayload_, ts, txn_.id(), writes, pending_);
    lockmgr::DBLock local(*locker_, Namespace::kLocalDb, LockMode::kIX, lockDeadline());
    if (!local.status().ok())
        return local.status();
    // The transaction holds all_durable below its prepare timestamp: no
    // reader has passed it.
    return engine_.oplog_->append(logPayload_, ts, count);
}

Status Session::prepareConflict(const Collection& coll, std::string_view key,
                                const mvcc::Update* u) {
    return Status::PrepareConflict(fmt::format(
        "key '{}' in {} was written by transaction {}, prepared at timestamp {} and not yet "
        "committed or aborted: read again once it resolves, or read in a transaction begun with "
        "ignore_prepare",
        printable(key), coll.ns().ns(), u->txnId(), u->startTs()));
}

Status Session::preparedReadRefused() {
    // As WiredTiger: the history sweep no longer keeps a prepared
    // transaction's snapshot (it reads nothing more), so it may not read.
    return Status::IllegalOperation(
        "the transaction is prepared: it reads nothing more (its snapshot is no longer kept); "
        "commit or abort it");
}

bool Session::waitPrepareResolved(uint64_t seen, Status* why) {
    if (!prepareConflictWait_)
        return false;  // *why stays the PrepareConflict
    if (Status s = checkInterrupted(); !s.ok()) {
        *why = std::move(s);
        return false;
    }
    if (!engine_.prepared_.waitResolvedAfter(seen, interrupted_)) {
        *why = checkInterrupted();
        return false;
    }
    return true;
}

}  // namespace mvkv::engine
