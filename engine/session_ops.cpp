// Session's operation life (engine/op_scope.h: begin, end, the slow-op log
// and the profiler) and its multi-key operations — scan, count and
// removeRange — with the yield policy of docs/operations.md.
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "engine/engine.h"
#include "engine/implicit_write.h"
#include "engine/op_report.h"
#include "engine/op_scope.h"
#include "engine/operation_context.h"
#include "engine/session.h"
#include "engine/visible_value.h"

namespace mvkv::engine {

using lockmgr::LockMode;

namespace {

std::string_view dbOf(std::string_view ns) {
    size_t dot = ns.find('.');
    return dot == std::string_view::npos ? ns : ns.substr(0, dot);
}

}  // namespace

// ---- the operation's life ----

void Session::beginOpSlow(CurOp::Description d) {
    // Inside withTransaction the whole transaction is one operation: an
    // interrupt during its body must reach the retry loop.
    if (!inWithTransaction_ && interrupted_.load(std::memory_order_relaxed) &&
        interrupted_.exchange(false, std::memory_order_acq_rel))
        locker_->clearInterrupt();
    locker_->resetOperationStats();
    tally_.add(OpTally::counterFor(d.op));
    uint64_t reserved = 0;
    if (reservedOpid_.load(std::memory_order_relaxed) != 0)
        reserved = reservedOpid_.exchange(0, std::memory_order_acq_rel);
    const bool killedEarly = (reserved & kReservedKilled) != 0;
    curOp_.begin(d, engine_.clock_.nowNanos(), reserved & ~kReservedKilled);
    if (killedEarly) {
        // killOp named this operation's opid before it began: it starts
        // interrupted (after the older interrupt was cleared above).
        curOp_.markKilled();
        interrupt();
    }
}

bool Session::killReserved(uint64_t opid) {
    uint64_t expected = opid;
    if (reservedOpid_.compare_exchange_strong(expected, opid | kReservedKilled,
                                              std::memory_order_acq_rel))
        return true;
    return expected == (opid | kReservedKilled);  // killed already
}

Status Session::afterOp(Status s) {
    if (s.code() != StatusCode::kInterrupted)
        return s;
    // Counted once: by the outermost operation (withTransaction's body's
    // operations share its CurOp and end Interrupted before it does).
    if (curOp_.killed() && !inWithTransaction_)
        tally_.add(OpTally::kKilled);
    if (!explicit_ || txn_.prepared())
        return s;  // a prepared transaction is never killed (MongoDB): only commit or abort end it
    // MongoDB aborts a transaction whose operation was killed: its snapshot
    // and locks go, and the client learns it from the error.
    abortTxn();
    tally_.add(OpTally::kTxnAborted);
    endExplicit();
    return Status::Interrupted(s.message() + "; the transaction was aborted");
}

void Session::reportOp(int64_t nanos, StatusCode code) {
    if (!monitored_)
        return;
    // The clock may have switched between coarse and precise during the
    // operation (OpClock::setPrecise); the coarse one lags by up to a tick.
    const int64_t micros = std::max<int64_t>(nanos, 0) / 1000;
    // Sampled once, as MongoDB does: a slow operation sampled out is in
    // neither the log nor a level-1 profile.
    const bool slow = micros > engine_.slowMicros() && engine_.slowLog_->shouldLog(micros);
    // Whether a profiler wants it, before anything is built: with one
    // database profiled, every operation comes here (Engine::reportNanos).
    const std::string_view db = dbOf(curOp_.ns());
    const int level = engine_.profiler_->anyOn() && !db.empty() ? engine_.profiler_->levelOf(db) : 0;
    // A secondary's profile would be a write of its own (engine.h, secondary()).
    const bool profile = (level == 2 || (level == 1 && slow)) && !engine_.secondary();
    if (!slow && !profile)
        return;
    OpSnapshot snap = curOp_.ownSnapshot(engine_.ops_.opidCounter());
    lockmgr::LockStats locks = locker_->operationStats();
    std::string client = name();
    FinishedOp f;
    f.op = &snap;
    f.client = client;
    f.connectionId = id_;
    f.locks = &locks;
    f.micros = micros;
    f.code = code;
    f.inTransaction = explicit_;
    if (explicit_) {
        f.txnId = txn_.id();
        f.readTs = txn_.readTs();
    }
    f.when = std::chrono::system_clock::now();
    if (slow) {
        tally_.add(OpTally::kSlowOps);
        engine_.slowLog_->write(slowOpLine(f));
    }
    if (profile)
        engine_.profiler_->profile(db, f);
}

void Session::describeTxn() {
    txnDesc_.txnId.store(txn_.id(), std::memory_order_relaxed);
}

void Session::setName(std::string name) {
    std::lock_guard<std::mutex> g(engine_.ops_.mutex());
    name_ = std::move(name);
}

std::string Session::name() const {
    std::lock_guard<std::mutex> g(engine_.ops_.mutex());
    return name_;
}

uint64_t Session::reserveOpid() {
    uint64_t id = engine_.ops_.opidCounter().fetch_add(1, std::memory_order_relaxed) + 1;
    reservedOpid_.store(id, std::memory_order_release);
    return id;
}

// ---- yielding ----

Status Session::yieldLocks(OperationContext& op, std::string_view ns) {
    const uint32_t before = op.collection().id();
    const LockMode mode = op.mode();
    op.releaseLocks();
    curOp_.add(curOp_.numYields);
    tally_.add(OpTally::kYields);
    // Waiters queued behind us were granted as the locks went; give them
    // the processor before we queue again.
    std::this_thread::yield();
    if (Status s = checkInterrupted(); !s.ok())
        return s;
    Status s = op.lockCollection(ns, mode);
    if (s.code() == StatusCode::kNamespaceNotFound || (s.ok() && op.collection().id() != before))
        return Status::QueryPlanKilled(fmt::format(
            "collection {} was dropped while the operation yielded its locks; what it did "
            "before the yield stands",
            ns));
    return s;
}

// ---- range walks ----

namespace {

CurOp::Description describeRange(CurOpType op, std::string_view command, std::string_view ns,
                                 const KeyRange& range) {
    CurOp::Description d{op, command, ns, range.from.value_or(std::string_view{})};
    d.keyEnd = range.to.value_or(std::string_view{});
    d.hasRange = true;
    return d;
}

bool inRange(std::string_view key, const KeyRange& r) {
    if (r.from && key < *r.from)
        return false;
    if (r.to && key > *r.to)
        return false;
    return true;
}

}  // namespace

Status Session::walkRange(std::string_view ns, LockMode mode, const KeyRange& range,
                          bool reverse, const RangeVisitor& onKey) {
    constexpr size_t kBatch = 128;  // keys read per epoch pin; also the interrupt check
    if (explicit_ && txn_.prepared()) [[unlikely]]
        return preparedReadRefused();
    OperationContext op(*this);
    if (Status s = op.lockCollection(ns, mode); !s.ok())
        return s;
    const bool yields = !explicit_;
    const uint64_t yieldIterations = engine_.options_.yieldIterations;
    const int64_t yieldMicros =
        std::chrono::duration_cast<std::chrono::microseconds>(engine_.options_.yieldPeriod).count();
    int64_t lastYield = engine_.clock_.now();
    uint64_t sinceYield = 0;

    // An implicit walk reads with a snapshot of its own, renewed at each
    // yield; an explicit one reads its transaction's (own writes included).
    mvcc::Transaction ownTxn;
    ownTxn.setOwner(id_);
    auto beginOwn = [&]() -> Status {
        if (!yields)
            return Status::OK();
        // A scan's snapshot follows the read concern, renewed at each yield;
        // a write's walk (removeRange, IX) reads the newest commits.
        auto begin = mode == LockMode::kIS ? implicitReadBegin()
                                           : StatusWith<mvcc::BeginOptions>(kImplicitBegin);
        if (!begin.ok())
            return begin.status();
        mvcc::BeginOptions o = begin.value();
        o.ownCommitTs = lastCommitTs_;
        o.unregistered = false;  // held across batches: the sweep must see it
        return engine_.txns_.begin(ownTxn, o);
    };
    auto endOwn = [&] {
        if (yields && ownTxn.active())
            engine_.txns_.commit(ownTxn).ignore();  // read-only
    };
    if (Status s = beginOwn(); !s.ok())
        return s;
    const mvcc::Transaction& readTxn = yields ? ownTxn : txn_;

    std::string resume;  // the last key handed out
    bool started = false;
    std::vector<std::pair<std::string, std::string>> batch;
    Status result;
    bool stop = false;
    while (!stop) {
        batch.clear();
        bool exhausted = false;
        const mvcc::Update* prepared = nullptr;
        std::string preparedKey;
        const uint64_t resolvedSeen = engine_.prepared_.resolvedCount();
        {
            Collection& coll = op.collection();
            auto pin = engine_.epochs_.pin();
            BTree::Cursor tc(coll.tree());
            if (!started) {
                if (reverse)
                    range.to ? tc.seekForPrev(*range.to) : tc.seekLast();
                else
                    range.from ? tc.seek(*range.from) : tc.seekFirst();
            } else if (reverse) {
                tc.seekForPrev(resume);
                if (tc.valid() && tc.key() == resume)
                    tc.prev();
            } else {
                tc.seek(resume);
                if (tc.valid() && tc.key() == resume)
                    tc.next();
            }
            while (batch.size() < kBatch) {
                if (!tc.valid() || !inRange(tc.key(), range)) {
                    exhausted = true;
                    break;
                }
                curOp_.add(curOp_.keysExamined);
                tally_.add(OpTally::kScanned);
                std::string_view v;
                const auto* head = static_cast<const mvcc::Update*>(tc.value());
                if (readVisibleValue(
                        head, readTxn, engine_.history_,
                        [this]() -> historystore::HistoryStore::Reader& { return historyReader(); },
                        coll.id(), tc.key(), &v, &prepared)) {
                    curOp_.add(curOp_.docsExamined);
                    tally_.add(OpTally::kScannedObjects);
                    batch.emplace_back(std::string(tc.key()), std::string(v));
                } else if (prepared) [[unlikely]] {
                    // Not handed out and not the resume point: read again
                    // once resolved (implicit), or PrepareConflict.
                    preparedKey.assign(tc.key());
                    break;
                }
                resume.assign(tc.key());
                started = true;
                ++sinceYield;
                if (reverse)
                    tc.prev();
                else
                    tc.next();
            }
            if (!started)
                exhausted = true;
        }
        for (auto& [k, v] : batch) {
            if (Status s = onKey(op.collection(), k, v, &stop); !s.ok()) {
                result = std::move(s);
                stop = true;
            }
            if (stop)
                break;
        }
        if (stop)
            break;
        if (prepared) [[unlikely]] {
            curOp_.add(curOp_.prepareConflicts);
            Status conflict = prepareConflict(op.collection(), preparedKey, prepared);
            if (!yields) {
                result = std::move(conflict);
                break;
            }
            endOwn();  // its snapshot pins nothing while it waits
            if (!waitPrepareResolved(resolvedSeen, &conflict)) {
                result = std::move(conflict);
                break;
            }
            if (Status s = beginOwn(); !s.ok()) {
                result = std::move(s);
                break;
            }
            continue;
        }
        if (exhausted)
            break;
        if (Status s = checkInterrupted(); !s.ok()) {
            result = std::move(s);
            break;
        }
        if (yields) {
            int64_t now = engine_.clock_.now();
            bool due = (yieldIterations != 0 && sinceYield >= yieldIterations) ||
                       (yieldMicros > 0 && now - lastYield >= yieldMicros);
            if (due) {
                endOwn();
                if (Status s = yieldLocks(op, ns); !s.ok()) {
                    result = std::move(s);
                    break;
                }
                if (Status s = beginOwn(); !s.ok()) {
                    result = std::move(s);
                    break;
                }
                sinceYield = 0;
                lastYield = engine_.clock_.now();
            }
        }
    }
    endOwn();
    return result;
}

Status Session::scan(std::string_view ns, const ScanOptions& options,
                     const std::function<bool(std::string_view, std::string_view)>& visit) {
    OpScope scope(*this, describeRange(CurOpType::kQuery, "find", ns, options.range));
    uint64_t returned = 0;
    return scope.finish(walkRange(
        ns, LockMode::kIS, options.range, options.reverse,
        [&](Collection& coll, std::string_view k, std::string_view v, bool* stop) {
            curOp_.add(curOp_.nreturned);
            ++returned;
            if (!visit(k, coll.userValue(v)) || (options.limit != 0 && returned >= options.limit))
                *stop = true;
            return Status::OK();
        }));
}

StatusWith<uint64_t> Session::count(std::string_view ns, const KeyRange& range) {
    OpScope scope(*this, describeRange(CurOpType::kCommand, "count", ns, range));
    uint64_t n = 0;
    Status s = walkRange(ns, LockMode::kIS, range, false,
                         [&](Collection&, std::string_view, std::string_view, bool*) {
                             ++n;
                             return Status::OK();
                         });
    s = scope.finish(std::move(s));
    if (!s.ok())
        return s;
    return n;
}

StatusWith<uint64_t> Session::removeRange(std::string_view ns, const KeyRange& range) {
    OpScope scope(*this, describeRange(CurOpType::kRemove, "delete", ns, range));
    uint64_t removed = 0;
    // walkRange hands out each key with no epoch pin held; the remove takes
    // the collection the walk has locked (IX), one key at a time outside a
    // transaction, in the transaction inside one.
    Status s = walkRange(ns, LockMode::kIX, range, false,
                         [&](Collection& coll, std::string_view k, std::string_view,
                             bool*) -> Status {
                             Status w = writeLocked(WriteOp::kRemove, coll, k, {});
                             if (w.code() == StatusCode::kNotFound)
                                 return Status::OK();  // removed by someone else meanwhile
                             if (w.ok())
                                 ++removed;
                             return w;
                         });
    s = scope.finish(std::move(s));
    if (!s.ok() && removed == 0)
        return s;
    if (!s.ok())
        return Status(s.code(), fmt::format("{} (after removing {} keys, which stay removed)",
                                            s.message(), removed));
    return removed;
}

}  // namespace mvkv::engine
