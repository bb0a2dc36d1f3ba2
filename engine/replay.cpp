// Engine::replay: what recovery applies of the oplog after the checkpoint it
// loaded (docs/oplog.md, "Recovery").
#include <fmt/format.h>

#include <algorithm>

#include "engine/engine.h"
#include "engine/session.h"

namespace mvkv::engine {

using recovery::DurableLog;

namespace {

bool isDrop(const oplog::OplogEntry& e) {
    return e.op == oplog::OpType::kCommand && (e.value == "drop" || e.value == "dropDatabase");
}

// True when `ns` ("db.coll") is the target of drop command `e`, or in its database.
bool dropHits(const oplog::OplogEntry& e, std::string_view ns) {
    if (e.value == "drop")
        return e.ns == ns;
    return ns.size() > e.ns.size() && ns.compare(0, e.ns.size(), e.ns) == 0 && ns[e.ns.size()] == '.';
}

}  // namespace

Status Engine::replay(const DurableLog::Recovered& recovered, const LoadedCheckpoint& checkpoint) {
    const auto& records = recovered.records;
    // Records logged before the checkpoint's position are in it, unless
    // newer than its timestamp, and so are later ones at or below it; of
    // the first, a write to a collection that a later record (still before
    // that point) dropped belongs to the dropped one.
    // `kept[i]`: the entries of record i to apply (all of them when null).
    std::vector<bool> apply(records.size(), true);
    std::vector<std::unique_ptr<std::vector<oplog::OplogEntry>>> kept(records.size());
    if (checkpoint.loaded) {
        auto before = [&](const oplog::ExistingRecord& w) {
            return w.segment < checkpoint.logEnd.segment ||
                   (w.segment == checkpoint.logEnd.segment && w.offset < checkpoint.logEnd.offset);
        };
        std::vector<const oplog::OplogEntry*> laterDrops;
        for (size_t i = records.size(); i-- > 0;) {
            const DurableLog::Record& r = records[i];
            const oplog::OplogEntry& first = r.entries.front();
            const auto kind = oplog::preparedRecordKind(r.entries);
            if (!before(r.where)) {
                // Logged after the position but at or below the timestamp:
                // it finished before the timestamp was chosen (that is at
                // most all_durable), so the checkpoint holds it. Commands
                // replay idempotently; an abort only resolves a prepare.
                const bool data = kind == oplog::PreparedRecord::kNone &&
                                  first.op != oplog::OpType::kCommand;
                if (data || kind == oplog::PreparedRecord::kPrepare)
                    apply[i] = first.ts > checkpoint.ts;
                continue;
            }
            // A prepare at or below the checkpoint's timestamp was resolved
            // before the checkpoint (an unresolved one holds checkpoints
            // below its prepare timestamp); a later one is replayed.
            if (kind != oplog::PreparedRecord::kNone) {
                apply[i] = first.ts > checkpoint.ts;
                continue;
            }
            if (first.op == oplog::OpType::kCommand) {
                apply[i] = false;  // the checkpoint's catalog has it
                if (isDrop(first))
                    laterDrops.push_back(&first);
                continue;
            }
            if (first.ts <= checkpoint.ts) {
                apply[i] = false;
                continue;
            }
            auto live = std::make_unique<std::vector<oplog::OplogEntry>>();
            for (const oplog::OplogEntry& e : r.entries) {
                bool dropped = false;
                for (const oplog::OplogEntry* d : laterDrops)
                    dropped = dropped || dropHits(*d, e.ns);
                if (!dropped)
                    live->push_back(e);
            }
            apply[i] = !live->empty();
            if (live->size() != r.entries.size())
                kept[i] = std::move(live);
        }
    }
    // Transaction ids go on after the log's own: a prepared transaction
    // rebuilt below keeps its logged id, which no later one may reuse.
    mvcc::TxnId maxLoggedId = mvcc::kNoTxnId;
    for (const DurableLog::Record& r : records)
        for (const oplog::OplogEntry& e : r.entries)
            maxLoggedId = std::max(maxLoggedId, e.txnId);
    if (Status s = txns_.raiseNextTxnId(maxLoggedId); !s.ok())
        return s;
    // Replay commits data at its timestamps, but applies commands without
    // theirs: a command newer than every data commit would stay above the
    // clock and all_durable (invisible to oplog readers, its timestamp
    // handed out again).
    for (const DurableLog::Record& r : records)
        if (r.entries.front().op == oplog::OpType::kCommand &&
            oplog::preparedRecordKind(r.entries) == oplog::PreparedRecord::kNone)
            txns_.noteLoggedTimestamp(r.entries.front().ts);
    // Prepared transactions not yet committed or aborted in the log, in
    // log order (docs/oplog.md, "Prepared transactions").
    struct PendingPrepare {
        mvcc::TxnId txnId;
        mvcc::Timestamp prepareTs;
        std::vector<oplog::OplogEntry> writes;
    };
    std::vector<PendingPrepare> pendingPrepares;
    auto resolvePending = [&](mvcc::TxnId id) {
        std::erase_if(pendingPrepares, [&](const PendingPrepare& p) { return p.txnId == id; });
    };
    auto session = openSession();
    session->setApplyingOplog(true);  // the log holds every capped eviction
    session->setMonitored(false);     // recovery is the engine's, not a client's
    for (size_t i = 0; i < records.size(); ++i) {
        if (!apply[i]) {
            // A commit record left out (the checkpoint holds it, or every
            // write went to a collection dropped later) still resolves the
            // prepare of its transaction: rebuilt, that would be prepared
            // again, into a collection that may be gone.
            const oplog::OplogEntry& first = records[i].entries.front();
            if (first.op != oplog::OpType::kCommand)
                resolvePending(first.txnId);
            continue;
        }
        const std::vector<oplog::OplogEntry>& entries = kept[i] ? *kept[i] : records[i].entries;
        const oplog::OplogEntry& e = entries.front();
        ++recovery_.recordsReplayed;
        recovery_.entriesReplayed += entries.size();
        if (auto kind = oplog::preparedRecordKind(entries); kind != oplog::PreparedRecord::kNone) {
            resolvePending(e.txnId);
            if (kind == oplog::PreparedRecord::kPrepare)
                pendingPrepares.push_back(
                    {e.txnId, e.ts,
                     std::vector<oplog::OplogEntry>(entries.begin() + 1, entries.end())});
            continue;
        }
        if (e.op == oplog::OpType::kCommand) {
            // Commands replay idempotently: the checkpoint's catalog may
            // already hold what a command logged just after it began did.
            Status s;
            CollectionOptions options;
            auto create = parseCreateCommand(e.value, &options);
            if (!create.ok())
                return create.status();
            int64_t expireAfter = 0;
            auto collMod = parseCollModCommand(e.value, &expireAfter);
            if (!collMod.ok())
                return collMod.status();
            if (create.value()) {
                s = session->createCollection(e.ns, options);
                if (s.code() == StatusCode::kNamespaceExists)
                    s = Status::OK();
            } else if (collMod.value()) {
                s = session->setExpireAfterSeconds(e.ns, expireAfter);
            } else if (e.value == "drop" || e.value == "dropDatabase") {
                s = e.value == "drop" ? session->dropCollection(e.ns) : session->dropDatabase(e.ns);
                if (s.code() == StatusCode::kNamespaceNotFound)
                    s = Status::OK();
            } else {
                s = Status::Corruption(fmt::format("unknown oplog command '{}'", e.value));
            }
            if (!s.ok())
                return s;
            continue;
        }
        // One transaction, applied at its commit timestamp (a prepared
        // one's commit record carries its id).
        resolvePending(e.txnId);
        if (Status s = session->begin(); !s.ok())
            return s;
        for (const oplog::OplogEntry& w : entries) {
            Status s = w.op == oplog::OpType::kDelete ? session->remove(w.ns, w.key)
                                                      : session->put(w.ns, w.key, w.value);
            if (s.code() == StatusCode::kNotFound && w.op == oplog::OpType::kDelete)
                s = Status::OK();
            if (!s.ok()) {
                session->abort().ignore();
                return s;
            }
        }
        if (Status s = session->commit(e.ts); !s.ok())
            return s;
    }
    session.reset();
    for (const PendingPrepare& p : pendingPrepares) {
        if (Status s = rebuildPrepared(p.txnId, p.prepareTs, p.writes); !s.ok())
            return Status(s.code(), fmt::format("rebuilding prepared transaction {}: {}", p.txnId,
                                                s.message()));
    }
    // A prepared commit's durable timestamp may be above its commit
    // timestamp: all_durable and the clock reached it before the crash, so
    // they do again (also when the checkpoint held the commit). Last, so a
    // transaction rebuilt prepared below it still holds all_durable back.
    for (const DurableLog::Record& r : records)
        if (r.preparedDurableTs != mvcc::kNoTimestamp)
            txns_.noteLoggedTimestamp(r.preparedDurableTs);
    return Status::OK();
}

Status Engine::rebuildPrepared(mvcc::TxnId txnId, mvcc::Timestamp prepareTs,
                               const std::vector<oplog::OplogEntry>& writes) {
    auto session = openSession();
    session->setApplyingOplog(true);
    session->setMonitored(false);
    session->setName(fmt::format("recovered prepared transaction {}", txnId));
    if (Status s = session->begin(); !s.ok())
        return s;
    if (Status s = txns_.adoptTxnId(session->txn_, txnId); !s.ok())
        return s;
    for (const oplog::OplogEntry& w : writes) {
        Status s = w.op == oplog::OpType::kDelete ? session->remove(w.ns, w.key)
                                                  : session->put(w.ns, w.key, w.value);
        if (s.code() == StatusCode::kNotFound && w.op == oplog::OpType::kDelete)
            s = Status::OK();  // nothing to delete
        if (!s.ok())
            return s;
    }
    if (Status s = session->prepareTxn(prepareTs, false); !s.ok())
        return s;
    prepared_.adopt(txnId, std::move(session));
    return Status::OK();
}

void Engine::keepPrepared(Session& closing) {
    const mvcc::TxnId id = closing.txn_.id();
    auto session = openSession();
    session->setMonitored(false);
    session->setName(fmt::format("prepared transaction {} (its session closed)", id));
    if (Status s = closing.handOverPrepared(*session); !s.ok()) {
        // Cannot happen (the closing session's transaction is prepared);
        // rolled back then, as the only safe end left.
        closing.abortPreparedTxn(true).ignore();
        return;
    }
    prepared_.adopt(id, std::move(session));
}

StatusWith<std::unique_ptr<Session>> Engine::takeRecovered(mvcc::TxnId txnId) {
    if (auto session = prepared_.take(txnId))
        return session;
    for (const PreparedTxnInfo& p : prepared_.list()) {
        if (p.txnId == txnId && p.sessionId != 0)
            return Status::IllegalOperation(fmt::format(
                "prepared transaction {} belongs to session {}: commit or abort it there", txnId,
                p.sessionId));
    }
    return Status::NotFound(fmt::format(
        "no prepared transaction without a session has id {} (preparedTransactions lists them; "
        "it may "
        "have been committed or aborted already)",
        txnId));
}

Status Engine::commitPrepared(mvcc::TxnId txnId, mvcc::Timestamp commitTs,
                              mvcc::Timestamp durableTs) {
    auto session = takeRecovered(txnId);
    if (!session.ok())
        return session.status();
    std::unique_ptr<Session> owned = std::move(session).value();
    Status s = owned->commit(commitTs, durableTs);
    if (owned->prepared())
        prepared_.giveBack(txnId, std::move(owned));
    return s;
}

Status Engine::abortPrepared(mvcc::TxnId txnId) {
    auto session = takeRecovered(txnId);
    if (!session.ok())
        return session.status();
    return session.value()->abort();
}

}  // namespace mvkv::engine
