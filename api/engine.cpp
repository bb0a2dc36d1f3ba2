// mvkv::Engine over engine::Engine (include/mvkv/engine.h).
#include "api/convert.h"
#include "api/impl.h"
#include "engine/namespace.h"
#include "lockmgr/lock_mode.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

namespace mvkv {

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Engine::~Engine() {
    if (impl_->engine && impl_->sessions.load(std::memory_order_acquire) != 0) {
        // The sessions would outlive what they point into.
        std::fprintf(stderr, "mvkv: an Engine was destroyed with %lld session(s) still open\n",
                     static_cast<long long>(impl_->sessions.load()));
        std::abort();
    }
    close().ignore();  // close() reports what this cannot
}

StatusWith<std::unique_ptr<Engine>> Engine::open(const EngineOptions& options) {
    auto opened = engine::Engine::open(api::toEngine(options));
    if (!opened.ok())
        return opened.status();
    auto impl = std::make_unique<Impl>();
    impl->engine = std::move(opened).value();
    return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

Status Engine::close() {
    std::unique_ptr<engine::Engine> closing;
    {
        std::lock_guard lock(impl_->closeMutex);
        if (!impl_->engine)
            return Impl::closedError();
        if (int64_t open = impl_->sessions.load(std::memory_order_acquire); open != 0)
            return Status::IllegalOperation(fmt::format(
                "{} session(s) still open: destroy every Session (and its cursors) before "
                "closing the engine",
                open));
        closing = std::move(impl_->engine);
    }
    Status flushed;
    if (oplog::Oplog* log = closing->oplog(); log != nullptr && !closing->options().inMemory)
        flushed = log->flush();
    closing.reset();  // stops the threads, closes the log, releases the directory
    return flushed;
}

StatusWith<std::unique_ptr<Session>> Engine::openSession() {
    auto impl = std::make_unique<Session::Impl>();
    {
        std::lock_guard lock(impl_->closeMutex);
        if (!impl_->engine)
            return Impl::closedError();
        impl_->sessions.fetch_add(1, std::memory_order_acq_rel);
        impl->session = impl_->engine->openSession();
    }
    impl->owner = impl_.get();
    return std::make_unique<Session>(std::move(impl));
}

Status Engine::setOldestTimestamp(Timestamp ts) {
    return impl_->engine ? impl_->engine->setOldestTimestamp(ts) : Impl::closedError();
}
Status Engine::setStableTimestamp(Timestamp ts) {
    return impl_->engine ? impl_->engine->setStableTimestamp(ts) : Impl::closedError();
}
Timestamps Engine::timestamps() const {
    return impl_->engine ? impl_->engine->timestamps() : Timestamps{};
}
Timestamp Engine::majorityCommitTs() const {
    return impl_->engine ? impl_->engine->majorityCommitTs() : kNoTimestamp;
}

Status Engine::checkpoint() {
    return impl_->engine ? impl_->engine->checkpoint() : Impl::closedError();
}

Status Engine::sweepHistory() {
    if (!impl_->engine)
        return Impl::closedError();
    // A public Cursor holds no epoch pin between calls (engine::Cursor pins
    // per step), so this thread holds none here.
    impl_->engine->sweepHistory();
    return Status::OK();
}

EngineStats Engine::stats() const {
    EngineStats out;
    if (!impl_->engine)
        return out;
    const engine::EngineStats s = impl_->engine->stats();
    out.timestamps = s.timestamps;
    out.transactionsBegun = s.transactions.begun;
    out.transactionsCommitted = s.transactions.committed;
    out.transactionsAborted = s.transactions.aborted;
    out.transactionsActive = s.transactions.active;
    out.writeConflicts = s.transactions.writeConflicts;
    out.writeConflictRetries = s.transactions.retries;
    out.holeWaits = s.transactions.holeWaits;
    out.historyEntries = s.history.entries;
    out.historySweepPasses = s.history.sweepPasses;
    out.historyVersionsMoved = s.history.versionsMoved;
    out.historyVersionsFreed = s.history.versionsFreed;
    out.historyPinned = s.history.pinned;
    out.checkpoints = s.checkpoint.count;
    out.checkpointFailures = s.checkpoint.failures;
    out.lastCheckpointTs = s.checkpoint.lastTs;
    out.lastCheckpointNumber = s.checkpoint.lastNumber;
    out.lastCheckpointEntries = s.checkpoint.lastEntries;
    out.lastCheckpointBytes = s.checkpoint.lastBytes;
    out.preparedTransactions = impl_->engine->preparedTransactions().size();
    out.maxChainLength = s.maxChainLength;
    out.meanChainLength = s.meanChainLength;
    return out;
}

Status Engine::setProfilingLevel(std::string_view db, int level) {
    if (!impl_->engine)
        return Impl::closedError();
    return impl_->engine->profiler().setLevel(db, level).status();
}

StatusWith<std::string> Engine::serverStatus(std::string_view section) const {
    return impl_->engine ? impl_->engine->serverStatus(section) : Impl::closedError();
}
std::string Engine::currentOp(bool all) const {
    return impl_->engine ? impl_->engine->currentOp(all) : std::string("{\"inprog\":[]}");
}
Status Engine::killOp(uint64_t opid) {
    return impl_->engine ? impl_->engine->killOp(opid) : Impl::closedError();
}
std::vector<std::string> Engine::listDatabases() const {
    return impl_->engine ? impl_->engine->listDatabases() : std::vector<std::string>{};
}
std::vector<std::string> Engine::listCollections(std::string_view db) const {
    return impl_->engine ? impl_->engine->listCollections(db) : std::vector<std::string>{};
}

Status checkDatabaseName(std::string_view db) {
    return engine::Namespace::checkDbName(db);
}

std::string Engine::statsJson() const {
    return impl_->engine ? impl_->engine->statsJson() : std::string("{}");
}

std::vector<LockTableEntry> Engine::lockTable() const {
    std::vector<LockTableEntry> out;
    if (!impl_->engine)
        return out;
    auto requests = [](const std::vector<lockmgr::LockHeadInfo::Entry>& from) {
        std::vector<LockTableEntry::Request> r;
        r.reserve(from.size());
        for (const auto& e : from)
            r.push_back({e.locker, std::string(lockmgr::modeName(e.mode))});
        return r;
    };
    for (const lockmgr::LockHeadInfo& h : impl_->engine->lockManager().dump()) {
        if (h.granted.empty() && h.waiting.empty())
            continue;
        out.push_back({h.name, requests(h.granted), requests(h.waiting)});
    }
    return out;
}

Status Engine::setSlowOp(int64_t slowMs, double sampleRate) {
    return impl_->engine ? impl_->engine->setSlowOp(slowMs, sampleRate) : Impl::closedError();
}
std::vector<std::string> Engine::slowOpLog(size_t limit) const {
    return impl_->engine ? impl_->engine->slowOpLog().recent(limit) : std::vector<std::string>{};
}

namespace {
ProfilingSetting toPublic(const engine::Profiler::Setting& s) {
    return {s.was, s.level, s.slowMs, s.sampleRate};
}
}  // namespace

ProfilingSetting Engine::profilingSetting(std::string_view db) const {
    if (!impl_->engine)
        return {};
    ProfilingSetting p = toPublic(impl_->engine->profiler().get(db));
    p.was = p.level;
    return p;
}
StatusWith<ProfilingSetting> Engine::profile(std::string_view db, int level) {
    if (!impl_->engine)
        return Impl::closedError();
    auto set = impl_->engine->profiler().setLevel(db, level);
    if (!set.ok())
        return set.status();
    return toPublic(set.value());
}
int64_t Engine::wallClockMs() const {
    return impl_->engine ? impl_->engine->wallClockMs() : 0;
}

bool Engine::hasOplog() const {
    return impl_->engine && impl_->engine->oplog() != nullptr;
}
Timestamp Engine::refreshOplogVisibility() {
    oplog::Oplog* log = impl_->engine ? impl_->engine->oplog() : nullptr;
    return log ? log->refreshVisibility() : kNoTimestamp;
}

StatusWith<std::unique_ptr<OplogCursor>> Engine::openOplog(const OplogReadOptions& options) {
    if (!impl_->engine)
        return Impl::closedError();
    auto cursor = impl_->engine->openOplogCursor({options.from, options.ns});
    if (!cursor.ok())
        return cursor.status();
    auto impl = std::make_unique<OplogCursor::Impl>();
    impl->cursor = std::move(cursor).value();
    return std::make_unique<OplogCursor>(std::move(impl));
}

StatusWith<std::unique_ptr<ChangeStream>> Engine::watch(const ChangeStreamOptions& options) {
    if (!impl_->engine)
        return Impl::closedError();
    replication::ChangeStreamOptions o;
    o.ns = options.ns;
    for (ChangeOp op : options.operationTypes)
        o.operationTypes.push_back(api::toEngine(op));
    o.resumeAfter = options.resumeAfter;
    o.startAtTimestamp = options.startAtTimestamp;
    auto stream = replication::openChangeStream(*impl_->engine, std::move(o));
    if (!stream.ok())
        return stream.status();
    auto impl = std::make_unique<ChangeStream::Impl>();
    impl->stream = std::move(stream).value();
    return std::make_unique<ChangeStream>(std::move(impl));
}

StatusWith<std::unique_ptr<ReplicaSet>> Engine::startReplicaSet() {
    if (!impl_->engine)
        return Impl::closedError();
    auto set = replication::ReplicaSet::start(*impl_->engine);
    if (!set.ok())
        return set.status();
    auto impl = std::make_unique<ReplicaSet::Impl>();
    impl->set = std::move(set).value();
    return std::make_unique<ReplicaSet>(std::move(impl));
}

StatusWith<TtlPassResult> Engine::runTtlPass() {
    if (!impl_->engine)
        return Impl::closedError();
    auto pass = impl_->engine->runTtlPass();
    if (!pass.ok())
        return pass.status();
    const engine::TtlPassResult& p = pass.value();
    return TtlPassResult{p.collections,      p.expired,             p.deleted,
                         p.skippedConflicts, p.skippedLockTimeouts, p.nowMs};
}

TtlStatus Engine::ttlStatus() const {
    TtlStatus out;
    if (!impl_->engine)
        return out;
    const engine::TtlStats st = impl_->engine->ttlStats();
    out.passes = st.passes;
    out.deletedDocuments = st.deletedDocuments;
    out.skippedConflicts = st.skippedConflicts;
    out.skippedLockTimeouts = st.skippedLockTimeouts;
    out.failedPasses = st.failedPasses;
    out.secondary = st.secondary;
    out.sleepMs = impl_->engine->options().ttlMonitorSleep.count();
    for (const auto& c : impl_->engine->catalog().all()) {
        const engine::CollectionOptions o = c->options();
        if (o.expireAfterSeconds)
            out.collections.push_back({std::string(c->ns().ns()), *o.expireAfterSeconds});
    }
    return out;
}

StatusWith<std::string> Engine::repairRecord() const {
    if (!impl_->engine)
        return Impl::closedError();
    if (!impl_->engine->recovery().durable)
        return Status::IllegalOperation(
            "an in-memory engine has no repair record; open one on a path");
    return impl_->engine->recovery().repairsJson;
}

StatusWith<uint64_t> Engine::clearRepairRecord() {
    if (!impl_->engine)
        return Impl::closedError();
    if (!impl_->engine->recovery().durable)
        return Status::IllegalOperation(
            "an in-memory engine has no repair record; open one on a path");
    const uint64_t had = impl_->engine->recovery().repairs;
    if (Status s = impl_->engine->clearRepairRecord(); !s.ok())
        return s;
    return had;
}

std::vector<PreparedTransaction> Engine::preparedTransactions() const {
    std::vector<PreparedTransaction> out;
    if (!impl_->engine)
        return out;
    for (const engine::PreparedTxnInfo& p : impl_->engine->preparedTransactions())
        out.push_back({p.txnId, p.prepareTs, p.writes, p.sessionId == 0});
    return out;
}
Status Engine::commitPrepared(TxnId txnId, Timestamp commitTs, Timestamp durableTs) {
    return impl_->engine ? impl_->engine->commitPrepared(txnId, commitTs, durableTs)
                         : Impl::closedError();
}
Status Engine::abortPrepared(TxnId txnId) {
    return impl_->engine ? impl_->engine->abortPrepared(txnId) : Impl::closedError();
}

}  // namespace mvkv
