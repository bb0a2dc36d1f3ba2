#include "engine/engine.h"

#include "recovery/durable_log.h"
#include "recovery/log_repair.h"

#include <fmt/format.h>

#include <cassert>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine/session.h"
#include "failpoint/failpoint.h"
#include "lockmgr/raii_locks.h"

namespace mvkv::engine {

using recovery::DurableLog;
using recovery::RepairOutcome;
using recovery::damageError;
using recovery::judgeDamage;
using recovery::kRepairRecordName;
using recovery::readRepairRecord;
using recovery::repairLog;

namespace {

// The B+tree stores keys of any length, but one write's key is bounded so a
// single key cannot take a node's worth of memory.
constexpr size_t kMaxKeyLimit = 64 * 1024;
constexpr size_t kMaxValueLimit = size_t{1} << 30;

}  // namespace

StatusWith<std::unique_ptr<Engine>> Engine::open(EngineOptions options) {
    if (options.maxKeyBytes == 0 || options.maxKeyBytes > kMaxKeyLimit)
        return Status::InvalidArgument(fmt::format("maxKeyBytes {} is out of range; use 1..{}",
                                                   options.maxKeyBytes, kMaxKeyLimit));
    if (options.maxValueBytes == 0 || options.maxValueBytes > kMaxValueLimit)
        return Status::InvalidArgument(fmt::format("maxValueBytes {} is out of range; use 1..{}",
                                                   options.maxValueBytes, kMaxValueLimit));
    if (options.writeConflictRetryTimeout.count() < 0)
        return Status::InvalidArgument("writeConflictRetryTimeout must not be negative");
    if (options.lockTimeout && options.lockTimeout->count() < 0)
        return Status::InvalidArgument("lockTimeout must not be negative");
    if (options.historySweepInterval.count() < 0)
        return Status::InvalidArgument("historySweepInterval must not be negative");
    if (options.chainSweepBound > 254)
        return Status::InvalidArgument(fmt::format(
            "chainSweepBound {} is out of range; use 0 (off) or 1..254", options.chainSweepBound));
    if (options.locks.readTickets < 0 || options.locks.writeTickets < 0)
        return Status::InvalidArgument("ticket counts must not be negative");
    if (options.oplogCapBytes == 0)
        return Status::InvalidArgument("oplogCapBytes must be at least 1");
    if (options.oplogSegmentBytes < 4096)
        return Status::InvalidArgument(fmt::format(
            "oplogSegmentBytes {} is too small; use at least 4096", options.oplogSegmentBytes));
    if (options.checkpointInterval.count() < 0)
        return Status::InvalidArgument("checkpointInterval must not be negative");
    if (options.checkpointsKept == 0)
        return Status::InvalidArgument(
            "checkpointsKept must be at least 1: recovery needs a checkpoint once the oplog is "
            "capped");
    if (options.yieldPeriod.count() < 0)
        return Status::InvalidArgument("yieldPeriod must not be negative");
    if (options.ttlMonitorSleep.count() < 0)
        return Status::InvalidArgument("ttlMonitorSleep must not be negative (0: no TTL thread)");
    std::unique_ptr<Engine> engine(new Engine(std::move(options)));
    const EngineOptions& o = engine->options_;
    if (Status s = engine->openSlowOpLog(false); !s.ok())
        return s;
    if (o.path.empty() || o.inMemory) {
        if (o.inMemoryOplogCapBytes > 0) {
            mvcc::TransactionManager& txns = engine->txns_;
            auto mem = oplog::Oplog::openInMemory(o.inMemoryOplogCapBytes,
                                                  [&txns] { return txns.allDurable(); });
            if (!mem.ok())
                return mem.status();
            engine->memOplog_ = std::move(mem).value();
            engine->oplog_ = engine->memOplog_.get();
            engine->logging_ = true;
            // Its readers (tail, replicas, change streams) read up to
            // all_durable and move on, as a durable engine's do: a commit
            // below a record they passed would be missed, and a secondary
            // resuming after a timestamp would skip a second record at it.
            txns.requireOrderedCommits();
        }
        if (Status s = failpoint::applyEnvironmentOnce(); !s.ok())
            return s;
        engine->setSecondary(o.secondary);
        engine->ttlMonitor_->start(o.ttlMonitorSleep);
        return engine;
    }
    auto start = std::chrono::steady_clock::now();
    DurableLog::Recovered recovered;
    auto log = DurableLog::open(o.path, &recovered);
    if (!log.ok())
        return log.status();
    engine->log_ = std::move(log).value();
    // The directory is ours now (its lock is held): the log file may go there.
    if (Status s = engine->openSlowOpLog(true); !s.ok())
        return s;
    engine->checkpointer_ = std::make_unique<Checkpointer>(*engine);
    LoadedCheckpoint checkpoint;
    if (Status s = engine->checkpointer_->load(&checkpoint); !s.ok())
        return s;
    auto repairs = readRepairRecord(o.path);
    if (!repairs.ok())
        return repairs.status();
    // A torn tail is cut; corruption refuses the open unless asked to repair.
    RecoveryStats& r = engine->recovery_;
    judgeDamage(o.path, &recovered, checkpoint);
    if (recovered.tail.damage == oplog::LogDamage::kCorruption) {
        if (!o.repair)
            return damageError(o.path, recovered);
        RepairOutcome repaired;
        if (Status s = repairLog(*engine->log_, recovered, checkpoint, &repaired); !s.ok())
            return Status(s.code(), fmt::format("repairing {}: {}", o.path, s.message()));
        r.repaired = true;
        r.repairLostCommits = repaired.lostCommits;
        r.salvageDir = repaired.salvageDir;
        repairs = readRepairRecord(o.path);
        if (!repairs.ok())
            return repairs.status();
    } else if (recovered.tail.damage == oplog::LogDamage::kTornTail) {
        if (Status s = engine->log_->cut(recovered.tail); !s.ok())
            return s;
    }
    r.repairsJson = repairs.value();
    r.repairs = nlohmann::json::parse(r.repairsJson).size();
    if (Status s = engine->replay(recovered, checkpoint); !s.ok())
        return Status(s.code(), fmt::format("replaying the oplog of {}: {}", o.path, s.message()));
    mvcc::TransactionManager& txns = engine->txns_;
    if (Status s = engine->log_->startOplog(
            {o.path, o.syncMode, o.oplogSegmentBytes, o.oplogCapBytes}, recovered,
            checkpoint.loaded ? checkpoint.logEnd.segment + 1 : 0,
            [&txns] { return txns.allDurable(); });
        !s.ok())
        return s;
    engine->txns_.requireOrderedCommits();
    engine->oplog_ = &engine->log_->oplog();
    engine->logging_ = true;  // from here on commits are logged
    r.durable = true;
    r.checkpointLoaded = checkpoint.loaded;
    r.checkpointNumber = checkpoint.number;
    r.checkpointTs = checkpoint.ts;
    r.checkpointEntries = checkpoint.entries;
    r.checkpointsSkipped = checkpoint.skipped;
    r.checkpointSkipReason = checkpoint.skippedReason;
    r.recordsInLog = recovered.records.size();
    r.tailCut = recovered.tail.cut;
    r.cutSegment = recovered.tail.segment;
    r.cutOffset = recovered.tail.offset;
    r.cutBytes = recovered.tail.bytesCut;
    r.cutReason = recovered.tail.reason;
    r.damage = std::string(oplog::logDamageName(recovered.tail.damage));
    r.damageFile = recovered.tail.file;
    r.recordsAfterDamage = recovered.tail.recordsAfter;
    r.cleanShutdown = recovered.cleanEnd.has_value();
    r.micros = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                         std::chrono::steady_clock::now() - start)
                                         .count());
    if (r.repaired)
        fmt::print(stderr,
                   "mvkv: {}: REPAIRED: cut the oplog at {} offset {} ({} bytes): {}; {} commit{} "
                   "lost, listed in {}/{}; the cut segments are copied to {}\n",
                   o.path, r.damageFile, r.cutOffset, r.cutBytes, r.cutReason, r.repairLostCommits,
                   r.repairLostCommits == 1 ? "" : "s", o.path, kRepairRecordName, r.salvageDir);
    else if (r.tailCut)
        fmt::print(stderr,
                   "mvkv: {}: cut a torn write at the oplog's end, segment {} offset {} ({} "
                   "bytes): {}\n",
                   o.path, r.cutSegment, r.cutOffset, r.cutBytes, r.cutReason);
    if (r.repairs > 0 && !r.repaired)
        fmt::print(stderr,
                   "mvkv: {}: this directory was repaired ({} time{}); what was lost is listed in "
                   "{}/{} (status recovery); clear it once dealt with (repair clear)\n",
                   o.path, r.repairs, r.repairs == 1 ? "" : "s", o.path, kRepairRecordName);
    // After recovery, before the background work: a failpoint set at
    // start-up acts on what the engine does once open, not on its recovery.
    if (Status s = failpoint::applyEnvironmentOnce(); !s.ok())
        return s;
    engine->checkpointer_->start(o.checkpointInterval);
    // After replay: the monitor's deletes are logged like any commit.
    engine->setSecondary(o.secondary);
    engine->ttlMonitor_->start(o.ttlMonitorSleep);
    return engine;
}

Engine::Engine(EngineOptions options)
    : options_(std::move(options)),
      clock_(options_.clock),
      lockManager_(options_.locks),
      catalog_(epochs_),
      history_(epochs_),
      sweeper_(catalog_, txns_, history_, epochs_),
      profiler_(std::make_unique<Profiler>(*this)),
      ttlMonitor_(std::make_unique<TtlMonitor>(*this)) {
    sweeper_.start(options_.historySweepInterval);
}

int64_t Engine::wallClockMs() const {
    if (options_.wallClock) [[unlikely]]
        return options_.wallClock();
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

Status Engine::openSlowOpLog(bool withFile) {
    SlowOpLogOptions o;
    o.slowMs = options_.slowOpThreshold.count();
    o.sampleRate = options_.slowOpSampleRate;
    o.ringLines = options_.slowOpRingLines;
    o.sink = options_.logSink;
    o.fileBytes = options_.logFileBytes;
    o.filesKept = options_.logFilesKept;
    if (withFile)
        o.filePath = options_.path + "/mvkv.log";
    auto log = SlowOpLog::open(std::move(o));
    if (!log.ok())
        return log.status();
    slowLog_ = std::move(log).value();
    updateOpMonitoring();
    return Status::OK();
}

Engine::~Engine() {
    // Checkpoints first: dropping the prepared transactions below frees
    // all_durable, and a checkpoint taken then would hold a timestamp past
    // their prepare, so the next open would not rebuild them.
    if (checkpointer_)
        checkpointer_->stop();  // its sessions end before the check below
    prepared_.dropRecovered();  // the log keeps them prepared for the next open
    ttlMonitor_->stop();    // no pass begins after this; its session ends here
    profiler_->shutdown();  // its session ends before the check below
    assert(sessions_.load() == 0 && "destroy every Session before its Engine");
    checkpointer_.reset();
    log_.reset();  // written and synced, lock released, before the rest goes
}

Status Engine::clearRepairRecord() {
    if (!log_)
        return Status::IllegalOperation("an in-memory engine has no repair record");
    if (Status s = recovery::clearRepairRecord(options_.path); !s.ok())
        return s;
    recovery_.repairsJson = "[]";
    recovery_.repairs = 0;
    return Status::OK();
}

Status Engine::checkpoint() {
    if (!checkpointer_)
        return Status::IllegalOperation("an in-memory engine has no checkpoints; open one on a path");
    return checkpointer_->checkpoint();
}

void Engine::setCheckpointTestHook(std::function<void(mvcc::Timestamp)> hook) {
    if (checkpointer_)
        checkpointer_->setTestHook(std::move(hook));
}

void Engine::setCheckpointPositionTestHook(std::function<void()> hook) {
    if (checkpointer_)
        checkpointer_->setPositionTestHook(std::move(hook));
}

oplog::Oplog* Engine::oplog() {
    return logging_ ? oplog_ : nullptr;
}

StatusWith<std::unique_ptr<oplog::OplogCursor>> Engine::openOplogCursor(
    oplog::OplogCursorOptions options) {
    if (!logging_)
        return Status::IllegalOperation(
            "this in-memory engine keeps no oplog (inMemoryOplogCapBytes is 0); open it with a "
            "cap, or on a path");
    return std::make_unique<oplog::OplogCursor>(*oplog_, std::move(options));
}

Status Engine::becomeSecondary(std::chrono::milliseconds wait) {
    if (secondary())
        return Status::OK();
    // Tried, not queued: a Global X request waiting in the queue would
    // hold every new operation behind it (the queue is FIFO) for the
    // whole wait.
    const auto until = std::chrono::steady_clock::now() + wait;
    lockmgr::Locker locker(lockManager_);
    while (true) {
        lockmgr::GlobalLock global(locker, lockmgr::LockMode::kX, Deadline::in(std::chrono::milliseconds(0)));
        if (global.status().ok()) {
            setSecondary(true);
            return Status::OK();
        }
        if (global.status().code() != StatusCode::kLockTimeout)
            return global.status();
        if (std::chrono::steady_clock::now() >= until)
            return Status(StatusCode::kLockTimeout,
                          fmt::format("cannot become a secondary: operations or open transactions "
                                      "still hold locks on this engine after {} ms (a transaction "
                                      "holds its locks until it commits or aborts; a prepared "
                                      "one until it is committed or aborted by its id)",
                                      wait.count()));
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

mvcc::Timestamp Engine::majorityCommitTs() const {
    if (majority_.attached())
        return majority_.get();
    return logging_ ? oplog_->visibleTs() : txns_.allDurable();
}

mvcc::Timestamp Engine::waitMajorityCommitAfter(mvcc::Timestamp after,
                                                std::chrono::steady_clock::time_point deadline) {
    if (majority_.attached()) {
        const mvcc::Timestamp point = majority_.waitAfter(after, deadline);
        // The set's point answers only while the set owns it: a set that
        // stopped meanwhile left a point nobody advances any more.
        if (point > after || majority_.attached())
            return point;
    }
    // Standalone: the oplog's visibility is the durable point (in memory,
    // the in-memory oplog's). An in-memory engine without an oplog has
    // nothing to wait on: all_durable now.
    return logging_ ? oplog_->waitVisibleAfter(after, deadline) : txns_.allDurable();
}

std::unique_ptr<Session> Engine::openSession() {
    static std::atomic<uint64_t> nextSessionId{1};
    return std::unique_ptr<Session>(new Session(*this, nextSessionId.fetch_add(1)));
}

Status Engine::createCollection(std::string_view ns, const CollectionOptions& options) {
    return openSession()->createCollection(ns, options);
}

EngineStats Engine::stats() const {
    EngineStats out;
    out.transactions = txns_.stats();
    out.timestamps = txns_.timestamps();
    out.sessions = sessions_.load(std::memory_order_relaxed);
    uint64_t totalChains = 0;
    uint64_t totalUpdates = 0;
    for (const auto& coll : catalog_.all()) {
        CollectionStats cs;
        cs.ns = coll->ns().ns();
        cs.keys = coll->keys();
        cs.bytes = coll->bytes();
        cs.capped = coll->options().capped;
        cs.cappedSizeBytes = coll->options().cappedSizeBytes;
        cs.cappedMaxDocs = coll->options().cappedMaxDocs;
        cs.expireAfterSeconds = coll->options().expireAfterSeconds;
        BTree::Stats ts = coll->tree().stats();
        cs.treeHeight = ts.height;
        cs.treeBytes = ts.bytes;
        BTree::Cursor c(coll->tree());
        for (c.seekFirst(); c.valid(); c.next()) {
            // A pin per key: the walk is O(keys) and must not hold back
            // reclamation (or the history sweep's grace period) meanwhile.
            auto guard = epochs_.pin();
            const auto* head = static_cast<const mvcc::Update*>(c.value());
            uint64_t len = mvcc::chainLength(head);
            size_t bucket = len <= 1 ? 0 : len == 2 ? 1 : len <= 4 ? 2 : len <= 8 ? 3 : len <= 16 ? 4 : 5;
            ++out.chainLengthHistogram[bucket];
            ++cs.chains;
            cs.updates += len;
            cs.maxChainLength = std::max(cs.maxChainLength, len);
            cs.chainBytes += mvcc::chainFootprint(head);
        }
        out.chainBytes += cs.chainBytes;
        totalChains += cs.chains;
        totalUpdates += cs.updates;
        out.maxChainLength = std::max(out.maxChainLength, cs.maxChainLength);
        out.collections.push_back(std::move(cs));
    }
    out.meanChainLength =
        totalChains ? static_cast<double>(totalUpdates) / static_cast<double>(totalChains) : 0.0;
    HistoryStats& h = out.history;
    historystore::HistoryStore::Stats hs = history_.stats();
    h.entries = hs.entries;
    h.bytes = hs.bytes;
    h.inserts = hs.inserts;
    h.removals = hs.removals;
    mvcc::Horizon horizon = sweeper_.lastHorizon();
    h.pinned = horizon.pinnedTs;
    h.oldestId = horizon.oldestId;
    mvcc::TransactionManager::PinningReader reader = txns_.pinningReader();
    h.pinnedByReader = reader.any;
    h.readerSession = reader.owner;
    h.readerReadTs = reader.readTs;
    h.readerAgeMicros = reader.ageMicros;
    SweepStats sw = sweeper_.stats();
    h.sweepPasses = sw.passes;
    h.keySweeps = sw.keySweeps;
    h.versionsMoved = sw.versionsMoved;
    h.versionsFreed = sw.versionsFreed;
    h.keysRemoved = sw.keysRemoved;
    h.historyDiscarded = sw.historyDiscarded;
    h.walksSkipped = sw.walksSkipped;
    if (logging_) {
        out.hasOplog = true;
        out.oplog = oplog_->stats();
    }
    if (checkpointer_ && logging_) {
        out.durable = true;
        out.checkpoint = checkpointer_->stats();
    }
    return out;
}

std::string Engine::statsJson() const {
    EngineStats s = stats();
    nlohmann::json j;
    const auto& t = s.transactions;
    j["transactions"] = {{"begun", t.begun},
                         {"committed", t.committed},
                         {"aborted", t.aborted},
                         {"active", t.active},
                         {"writeConflicts", t.writeConflicts},
                         {"retries", t.retries},
                         {"holeWaits", t.holeWaits},
                         {"oldestReadTimestamp", t.oldestReadTs},
                         {"oldestReaderAgeMicros", t.oldestReaderAgeMicros}};
    const auto& ts = s.timestamps;
    j["timestamps"] = {{"clock", ts.clock},
                       {"oldest", ts.oldest},
                       {"stable", ts.stable},
                       {"all_durable", ts.allDurable},
                       {"read_point", ts.readPoint == kMaxTimestamp ? nlohmann::json(nullptr)
                                                                : nlohmann::json(ts.readPoint)},
                       {"oldest_reader", ts.oldestReader},
                       {"pinned", ts.pinned}};
    j["updateChains"] = {{"maxLength", s.maxChainLength},
                         {"meanLength", s.meanChainLength},
                         {"bytes", s.chainBytes},
                         {"lengthHistogram",
                          {{"1", s.chainLengthHistogram[0]},
                           {"2", s.chainLengthHistogram[1]},
                           {"3-4", s.chainLengthHistogram[2]},
                           {"5-8", s.chainLengthHistogram[3]},
                           {"9-16", s.chainLengthHistogram[4]},
                           {"17+", s.chainLengthHistogram[5]}}}};
    const HistoryStats& h = s.history;
    nlohmann::json pinnedBy = nullptr;
    if (h.pinnedByReader)
        pinnedBy = {{"session", h.readerSession},
                    {"readTimestamp", h.readerReadTs},
                    {"ageMicros", h.readerAgeMicros}};
    j["history"] = {{"entries", h.entries},
                    {"bytes", h.bytes},
                    {"inserts", h.inserts},
                    {"removals", h.removals},
                    {"pinned", h.pinned},
                    {"oldestId", h.oldestId},
                    {"pinnedBy", pinnedBy},
                    {"sweep",
                     {{"passes", h.sweepPasses},
                      {"keySweeps", h.keySweeps},
                      {"versionsMoved", h.versionsMoved},
                      {"versionsFreed", h.versionsFreed},
                      {"keysRemoved", h.keysRemoved},
                      {"historyDiscarded", h.historyDiscarded},
                      {"walksSkipped", h.walksSkipped}}}};
    nlohmann::json colls = nlohmann::json::object();
    for (const auto& c : s.collections) {
        colls[c.ns] = {{"keys", c.keys},
                       {"bytes", c.bytes},
                       {"chains", c.chains},
                       {"updates", c.updates},
                       {"maxChainLength", c.maxChainLength},
                       {"chainBytes", c.chainBytes},
                       {"treeHeight", c.treeHeight},
                       {"treeBytes", c.treeBytes},
                       {"capped", c.capped}};
        if (c.capped) {
            // MongoDB's collStats names for the caps.
            colls[c.ns]["maxSize"] = c.cappedSizeBytes;
            colls[c.ns]["max"] = c.cappedMaxDocs;
        }
        if (c.expireAfterSeconds)  // a TTL collection (MongoDB's TTL index option)
            colls[c.ns]["expireAfterSeconds"] = *c.expireAfterSeconds;
    }
    j["collections"] = std::move(colls);
    if (s.hasOplog) {
        const oplog::OplogStats& o = s.oplog;
        j["oplog"] = {{"entries", o.entries},
                      {"records", o.records},
                      {"bytes", o.bytes},
                      {"capBytes", o.capBytes},
                      {"firstTimestamp", o.firstTs},
                      {"lastTimestamp", o.lastTs},
                      {"visibleTimestamp", o.visibleTs},
                      {"segments", o.segments},
                      {"segmentsDropped", o.segmentsDropped},
                      {"recordsDropped", o.recordsDropped},
                      {"inMemory", o.inMemory},
                      {"syncMode", oplog::syncModeName(oplog_->syncMode())},
                      {"groupCommit",
                       {{"batches", o.batches}, {"meanBatch", o.meanBatch}, {"syncs", o.syncs}}},
                      {"visibilityPublications", o.visibilityPublications}};
    }
    if (s.durable) {
        const CheckpointStats& c = s.checkpoint;
        j["checkpoint"] = {{"started", c.started},
                           {"count", c.count},
                           {"failures", c.failures},
                           {"failuresByReason", c.failuresByReason},
                           {"lastAttemptTimestamp", c.lastAttemptTs},
                           {"lastTimestamp", c.lastTs},
                           {"lastNumber", c.lastNumber},
                           {"lastEntries", c.lastEntries},
                           {"lastBytes", c.lastBytes},
                           {"lastDurationMicros", c.lastMicros},
                           {"lastError", c.lastError},
                           {"lastFailure", c.lastFailure},
                           {"lastFailureTimestamp", c.lastFailureTs}};
        const RecoveryStats& r = recovery_;
        j["recovery"] = {{"micros", r.micros},
                         {"checkpointLoaded", r.checkpointLoaded},
                         {"checkpointNumber", r.checkpointNumber},
                         {"checkpointTimestamp", r.checkpointTs},
                         {"checkpointEntries", r.checkpointEntries},
                         {"checkpointsSkipped", r.checkpointsSkipped},
                         {"checkpointSkipReason", r.checkpointSkipReason},
                         {"recordsInLog", r.recordsInLog},
                         {"recordsReplayed", r.recordsReplayed},
                         {"entriesReplayed", r.entriesReplayed},
                         {"tailCut", r.tailCut},
                         {"cutSegment", r.cutSegment},
                         {"cutOffset", r.cutOffset},
                         {"cutBytes", r.cutBytes},
                         {"cutReason", r.cutReason},
                         {"damage", r.damage},
                         {"damageFile", r.damageFile},
                         {"recordsAfterDamage", r.recordsAfterDamage},
                         {"cleanShutdown", r.cleanShutdown},
                         {"repaired", r.repaired},
                         {"repairLostCommits", r.repairLostCommits},
                         {"salvageDir", r.salvageDir},
                         {"repairs", nlohmann::json::parse(r.repairsJson)}};
    }
    j["sessions"] = s.sessions;
    j["locks"] = nlohmann::json::parse(lockManager_.serverStatusJson());
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace mvkv::engine
