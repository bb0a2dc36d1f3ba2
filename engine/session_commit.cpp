// Session's commit path (docs/oplog.md, "A commit"): measuring what a
// commit changes in its collections, prepare -> log -> complete on a
// durable engine, catalog changes and their oplog records.
#include <fmt/format.h>

#include <cassert>
#include <optional>
#include <unordered_set>
#include <utility>

#include "recovery/durable_log.h"
#include "engine/engine.h"
#include "engine/namespace.h"
#include "engine/session.h"
#include "engine/write_entries.h"
#include "failpoint/failpoints.h"
#include "lockmgr/raii_locks.h"

namespace mvkv::engine {

using lockmgr::LockMode;

Status Session::commitTxn(std::optional<mvcc::Timestamp> commitTs) {
    if (failpoint::hangBeforeCommit.armed() && clientOp())
        failpoint::hangBeforeCommit.pauseIfFires();
    if (failpoint::abortProcess.armed() && clientOp())
        failpoint::crashPoint("beforeCommit");
    measureCommit();
    Status s;
    if (!engine_.logging_) {
        s = engine_.txns_.commit(txn_, commitTs);
    } else {
        // Logged before it is visible: prepare (timestamp fixed, all_durable
        // held below it), append, then make it visible (docs/oplog.md).
        const bool heldTimestamp = txn_.commitTs() != mvcc::kNoTimestamp;
        auto prepared = engine_.txns_.prepareCommit(txn_, commitTs);
        s = prepared.status();
        bool published = false;
        if (s.ok() && prepared.value() != mvcc::kNoTimestamp) {
            s = logCommitted();
            if (s.ok()) {
                if (failpoint::hangAfterOplogAppend.armed() && clientOp())
                    failpoint::hangAfterOplogAppend.pauseIfFires();
                if (failpoint::abortProcess.armed() && clientOp())
                    failpoint::crashPoint("afterOplogAppend");
                // The no-holes point read as it finished: no second look.
                engine_.oplog_->publishVisible(engine_.txns_.completeCommit(txn_));
                published = true;
            }
            else
                engine_.txns_.abort(txn_);
        }
        // A rollback, or a timestamp held and given up, may have closed a
        // hole; a read-only commit held none (and the recompute takes the
        // manager's mutex, so it is skipped).
        if (!published && (!s.ok() || heldTimestamp || prepared.value() != mvcc::kNoTimestamp))
            engine_.oplog_->notifyCommit();
    }
    if (s.ok()) {
        applyCommitCounts();
        if (!txn_.writes().empty())
            lastCommitTs_ = txn_.commitTs();
    }
    pending_.clear();
    return s;
}

void Session::abortTxn() {
    const bool heldTimestamp = txn_.commitTs() != mvcc::kNoTimestamp;
    engine_.txns_.abort(txn_);
    pending_.clear();
    if (heldTimestamp && engine_.logging_)
        engine_.oplog_->notifyCommit();  // its hole closed
}

Status Session::appendCommitRecord(mvcc::Timestamp preparedDurableTs) {
    // Encoded straight from the versions into a buffer the session reuses.
    const auto& writes = txn_.writes();
    const bool prepared = preparedDurableTs != mvcc::kNoTimestamp;
    const auto count = static_cast<uint32_t>(writes.size() + (prepared ? 1 : 0));
    oplog::startPayload(&logPayload_, count);
    addWriteEntries(&logPayload_, txn_.commitTs(), txn_.id(), writes, pending_);
    if (prepared)
        oplog::addEntry(&logPayload_, preparedDurableTs, txn_.id(), oplog::OpType::kCommand,
                        oplog::kPreparedTxnNs, {}, oplog::kCommitPreparedCommand);
    // Writing the oplog is a write to the `local` database (seed 000).
    lockmgr::DBLock local(*locker_, Namespace::kLocalDb, LockMode::kIX, lockDeadline());
    if (!local.status().ok())
        return local.status();
    return engine_.oplog_->append(logPayload_, txn_.commitTs(), count);
}

Status Session::logCommitted() {
    Status s = appendCommitRecord();
    if (s.code() == StatusCode::kIOError)
        return Status(s.code(),
                      "the transaction was rolled back and the engine takes no more writes "
                      "(restart it); its oplog record was cut from the log unless the message "
                      "below says otherwise: " +
                          s.message());
    if (!s.ok())
        return Status(s.code(), "the transaction was rolled back: its oplog record was not written: " +
                                    s.message());
    return s;
}

Status Session::changeCatalog(std::string_view ns, std::string_view command,
                              const std::function<Status()>& change) {
    const mvcc::Timestamp at = std::exchange(nextCommandTs_, mvcc::kNoTimestamp);
    // Again under the caller's locks: the engine may have become a
    // secondary while they waited (Engine::becomeSecondary holds Global X).
    if (engine_.secondary() && clientOp())
        return secondaryWriteRefused();
    if (!engine_.logging_)
        return change();
    // Every lock first, so that once the catalog changed nothing but an I/O
    // error (which stops every later write too) keeps it out of the log.
    lockmgr::DBLock local(*locker_, Namespace::kLocalDb, LockMode::kIX, lockDeadline());
    if (!local.status().ok())
        return local.status();
    // The change and its record together: a checkpoint lists the catalog
    // and notes the log's end under the same mutex (docs/oplog.md).
    std::lock_guard catalogLog(engine_.catalogLogMutex_);
    // A timestamp in the commit order, held in all_durable until logged.
    mvcc::Transaction cmd;
    if (Status s = engine_.txns_.begin(cmd); !s.ok())
        return s;
    auto ts = engine_.txns_.reserveTimestamp(
        cmd, at == mvcc::kNoTimestamp ? std::nullopt : std::optional(at));
    if (!ts.ok()) {
        engine_.txns_.abort(cmd);
        return ts.status();
    }
    Status s = change();
    if (s.ok()) {
        oplog::OplogEntry e;
        e.ts = ts.value();
        e.op = oplog::OpType::kCommand;
        e.ns.assign(ns);
        e.value.assign(command);
        s = engine_.oplog_->append({e});
        if (!s.ok())
            s = Status(s.code(), fmt::format("{} {} was done in memory but its oplog record was "
                                             "not written, and the engine takes no more writes: {}",
                                             command, ns, s.message()));
    }
    if (s.ok())
        engine_.txns_.completeCommit(cmd);
    else
        engine_.txns_.abort(cmd);
    engine_.oplog_->notifyCommit();
    return s;
}

void Session::applyCommitCounts() {
    for (const PendingWrite& p : pending_) {
        if (p.keysDelta != 0 || p.bytesDelta != 0)
            p.collection->addCommitted(p.keysDelta, p.bytesDelta);
        // After the commit became visible: a woken acquisition sees it.
        if (p.wakesLockWaiters) [[unlikely]]
            engine_.docLockState().waiters.notify(p.collection->ns().ns(), p.key);
    }
}

void Session::measureCommit() {
    // Only the newest own version of each key counts; it replaced the newest
    // committed version below it (stable: nobody writes under ours).
    const auto& writes = txn_.writes();
    assert(writes.size() == pending_.size());
    auto live = [](const mvcc::Update* u) { return u && !u->isTombstone(); };
    // Versions a later write of the same key replaced do not count.
    std::unordered_set<const mvcc::Update*> replaced;
    for (const mvcc::WriteRecord& w : writes)
        if (w.ownPrevious)
            replaced.insert(w.ownPrevious);
    for (size_t i = writes.size(); i-- > 0;) {
        const mvcc::WriteRecord& w = writes[i];
        pending_[i].keysDelta = pending_[i].bytesDelta = 0;
        if (!replaced.empty() && replaced.count(w.update))
            continue;
        const mvcc::Update* before = mvcc::supersededVersion(w.update, txn_.id());
        const Collection& coll = *pending_[i].collection;
        // The caller's bytes: a TTL collection's header does not count.
        auto valueBytes = [&](const mvcc::Update* u) {
            return static_cast<int64_t>(coll.userValue(u->value()).size());
        };
        int64_t keyBytes = pending_[i].keyBytes;
        int64_t keys = (live(w.update) ? 1 : 0) - (live(before) ? 1 : 0);
        int64_t bytes = (live(w.update) ? keyBytes + valueBytes(w.update) : 0) -
                        (live(before) ? keyBytes + valueBytes(before) : 0);
        pending_[i].keysDelta = keys;
        pending_[i].bytesDelta = bytes;
        // A lock removed, or rewritten with other content (a take-over, a
        // refresh), may let a waiter in; a new lock, or a fenced write's
        // unchanged rewrite, lets nobody in.
        if (pending_[i].collection->isLockCollection()) [[unlikely]]
            pending_[i].wakesLockWaiters =
                !live(w.update) || (live(before) && before->value() != w.update->value());
    }
}

// --- data ---

}  // namespace mvkv::engine
