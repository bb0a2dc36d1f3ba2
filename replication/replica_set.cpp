#include "replication/replica_set.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <thread>
#include <nlohmann/json.hpp>

#include "failpoint/failpoints.h"

namespace mvkv::replication {

using engine::Engine;
using engine::EngineOptions;
using engine::ReplicationCoordinator;
using engine::Session;
using engine::TxnOptions;
using engine::WriteConcern;

namespace {

nlohmann::ordered_json membersJson(const std::vector<MemberStatus>& members,
                                   mvcc::Timestamp majority) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const MemberStatus& m : members) {
        nlohmann::ordered_json one = {{"id", m.id},
                                      {"state", m.state},
                                      {"lastApplied", m.lastApplied},
                                      {"lastDurable", m.lastDurable},
                                      {"paused", m.paused}};
        if (!m.error.empty())
            one["error"] = m.error;
        list.push_back(std::move(one));
    }
    return {{"members", std::move(list)}, {"majorityCommitPoint", majority}};
}

}  // namespace

// The members' figures and the write-concern waits. Shared with the
// primary engine (a commit may still hold it while the set goes away), so
// it knows nothing of the set but what the set reports to it.
class ReplicaSet::Coordinator : public ReplicationCoordinator {
  public:
    Coordinator(Engine& primary, std::chrono::milliseconds syncInterval)
        : primary_(primary), syncInterval_(syncInterval), syncsPrimary_(needsSync(primary)) {
        if (syncsPrimary_)
            syncer_ = std::thread([this] { syncLoop(); });
    }
    ~Coordinator() { close(); }

    /// The primary's applied point: its oplog's no-holes point.
    mvcc::Timestamp primaryApplied() const {
        if (oplog::Oplog* log = primary_.oplog())
            return log->visibleTs();
        return primary_.transactions().allDurable();
    }
    /// The primary's durable point: what of that its oplog has synced
    /// (oplog::Oplog::syncedTs; with sync mode fsync, or in memory, the same).
    mvcc::Timestamp primaryDurable() const {
        if (oplog::Oplog* log = primary_.oplog())
            return log->syncedTs();
        return primary_.transactions().allDurable();
    }
    /// With sync mode write or none the primary's oplog syncs only when
    /// asked: the set asks when a member has made durable more than it has
    /// (as a member's own applier syncs its oplog when it catches up), and
    /// when a {w: "majority"} commit waits for it (MongoDB's j: true). The
    /// sync runs on the set's own thread (syncLoop), like MongoDB's journal
    /// flusher: a member's applier or a committer never waits for the disk
    /// there, and one sync serves every request made before it began.
    /// `urgent`: a commit waits for it; else at most every syncInterval_.
    void requestPrimarySyncLocked(mvcc::Timestamp ts, bool urgent) {
        if (!syncsPrimary_ || closed_)
            return;
        syncWanted_ = std::max(syncWanted_, ts);
        requested_ = true;
        urgent_ = urgent_ || urgent;
        syncCv_.notify_one();
    }

    /// A new secondary at `applied`; the first one takes the primary's
    /// majority point over, from where the standalone engine had it.
    void addMember(mvcc::Timestamp applied) {
        std::lock_guard lock(mutex_);
        Figures f;
        f.applied = applied;
        f.durable = applied;
        members_.push_back(std::move(f));
        if (!attached_) {
            point_ = std::max(point_, primary_.majorityCommitTs());
            primary_.majorityCommitPoint().attach(point_);
            attached_ = true;
        }
        recomputeLocked();
    }
    void report(int id, mvcc::Timestamp applied, mvcc::Timestamp durable) {
        {
            std::lock_guard lock(mutex_);
            Figures& f = members_[static_cast<size_t>(id - 1)];
            f.applied = std::max(f.applied, applied);
            f.durable = std::max(f.durable, durable);
            requestPrimarySyncLocked(f.durable, false);
            recomputeLocked();
        }
        cv_.notify_all();
    }
    void stopped(int id, const Status& s) {
        std::lock_guard lock(mutex_);
        Figures& f = members_[static_cast<size_t>(id - 1)];
        f.error = s.ok() ? std::string() : s.toString();
    }
    void setPaused(int id, bool paused) {
        std::lock_guard lock(mutex_);
        Figures& f = members_[static_cast<size_t>(id - 1)];
        f.paused = paused;
        if (!paused)
            f.error.clear();
    }
    /// The set is going away: waiters return, the primary is standalone.
    /// Idempotent.
    void close() {
        {
            std::lock_guard lock(mutex_);
            closed_ = true;
            if (attached_)
                primary_.majorityCommitPoint().detach();
            attached_ = false;
        }
        cv_.notify_all();
        syncCv_.notify_all();
        std::lock_guard join(joinMutex_);
        if (syncer_.joinable())
            syncer_.join();
    }

    mvcc::Timestamp majority() const {
        std::lock_guard lock(mutex_);
        return attached_ ? point_ : primary_.majorityCommitTs();
    }
    size_t size() const {
        std::lock_guard lock(mutex_);
        return members_.size() + 1;
    }
    std::vector<MemberStatus> members() const {
        std::lock_guard lock(mutex_);
        std::vector<MemberStatus> out;
        const mvcc::Timestamp durable = primaryDurable();  // first: never above applied
        out.push_back({0, "PRIMARY", primaryApplied(), durable, false, ""});
        for (size_t i = 0; i < members_.size(); ++i) {
            const Figures& f = members_[i];
            const char* state = f.paused ? "PAUSED" : !f.error.empty() ? "FAILED" : "SECONDARY";
            out.push_back({static_cast<int>(i + 1), state, f.applied, f.durable, f.paused, f.error});
        }
        return out;
    }

    Status checkSatisfiable(const WriteConcern& wc) const override {
        const size_t n = size();
        if (!wc.majority && static_cast<size_t>(wc.w) > n)
            return Status::InvalidArgument(fmt::format(
                "write concern {} needs {} members but the replica set has {}; use w <= {} or "
                "w=majority",
                wc.describe(), wc.w, n, n));
        return Status::OK();
    }

    Status awaitReplication(mvcc::Timestamp ts, const WriteConcern& wc) override {
        using Clock = std::chrono::steady_clock;
        const Clock::time_point until = wc.wtimeout ? Clock::now() + *wc.wtimeout : Clock::now();
        // The primary's own visible point is published by its committers
        // through its oplog, which does not report to this set: wait for it
        // first (with no secondary, or no report to come, nothing else would
        // wake the wait below).
        if (oplog::Oplog* log = primary_.oplog()) {
            while (log->visibleTs() < ts && (!wc.wtimeout || Clock::now() < until)) {
                const Clock::time_point slice = Clock::now() + std::chrono::seconds(1);
                log->waitVisibleAfter(ts - 1, wc.wtimeout ? std::min(until, slice) : slice);
            }
        }
        std::unique_lock lock(mutex_);
        // The majority counts the primary's synced point: ask for it now
        // rather than wait for a member's report to. Another flush (a
        // checkpoint's) may have synced it already, unseen by the point.
        const bool syncFailed = wc.majority && syncsPrimary_;
        if (wc.majority) {
            recomputeLocked();
            requestPrimarySyncLocked(ts, true);
        }
        auto met = [&] {
            return closed_ || (syncFailed && !syncError_.ok()) || satisfiedLocked(ts, wc);
        };
        if (wc.wtimeout)
            cv_.wait_until(lock, until, met);
        else
            cv_.wait(lock, met);
        if (satisfiedLocked(ts, wc))
            return Status::OK();
        if (syncFailed && !syncError_.ok())
            return Status(syncError_.code(),
                          fmt::format("the write IS committed at timestamp {}, but the primary's "
                                      "oplog could not be synced for write concern {}: {}",
                                      ts, wc.describe(), syncError_.message()));
        if (closed_)
            return Status::IllegalOperation(fmt::format(
                "the write IS committed at timestamp {}, but the replica set was stopped before "
                "write concern {} was met",
                ts, wc.describe()));
        return Status(StatusCode::kWriteConcernTimeout,
                      fmt::format("the write IS committed at timestamp {} (it is not rolled "
                                  "back), but write concern {} was not met in time: {} of {} "
                                  "members applied it, the majority commit point is {}",
                                  ts, wc.describe(), appliedCountLocked(ts), members_.size() + 1,
                                  point_));
    }

    std::string statusJson() const override {
        return membersJson(members(), majority()).dump();
    }

  private:
    struct Figures {
        mvcc::Timestamp applied = mvcc::kNoTimestamp;
        mvcc::Timestamp durable = mvcc::kNoTimestamp;  // = applied: in memory
        bool paused = false;
        std::string error;
    };

    // The primary counts once it committed; secondaries once they applied.
    size_t appliedCountLocked(mvcc::Timestamp ts) const {
        size_t count = 1;
        for (const Figures& f : members_)
            count += f.applied >= ts ? 1 : 0;
        return count;
    }
    bool satisfiedLocked(mvcc::Timestamp ts, const WriteConcern& wc) const {
        if (wc.majority)
            return (attached_ ? point_ : primary_.majorityCommitTs()) >= ts;
        return appliedCountLocked(ts) >= static_cast<size_t>(wc.w);
    }
    // The (n / 2 + 1)-th largest durable timestamp, the primary's included.
    void recomputeLocked() {
        if (!attached_)
            return;
        std::vector<mvcc::Timestamp> durable;
        durable.push_back(primaryDurable());
        for (const Figures& f : members_)
            durable.push_back(f.durable);
        const size_t majority = durable.size() / 2 + 1;
        std::nth_element(durable.begin(), durable.begin() + static_cast<ptrdiff_t>(majority - 1),
                         durable.end(), std::greater<>());
        const mvcc::Timestamp point = durable[majority - 1];
        if (point > point_) {
            point_ = point;
            primary_.majorityCommitPoint().advance(point);
        }
    }

    // The primary's oplog syncs (requestPrimarySyncLocked), one at a time,
    // outside the mutex; after each the point may move. Members' reports
    // wait for the interval since the last sync: a sync holds the log
    // writer, and the members' own oplog reads of a sync-none primary
    // wait behind it (synced at every report, the members fell far
    // behind: docs/replication.md). Every request wakes it to recompute
    // the point, even with nothing to sync. A failed
    // sync stays the oplog's error (every later commit returns it); the
    // thread ends and majority waits return it.
    void syncLoop() {
        oplog::Oplog* log = primary_.oplog();
        auto wanted = [&](mvcc::Timestamp ts) {
            return std::min(ts, log->visibleTs()) > log->syncedTs();
        };
        std::chrono::steady_clock::time_point lastSync{};
        std::unique_lock lock(mutex_);
        while (true) {
            syncCv_.wait(lock, [&] { return closed_ || requested_; });
            syncCv_.wait_until(lock, lastSync + syncInterval_, [&] { return closed_ || urgent_; });
            if (closed_)
                return;
            requested_ = urgent_ = false;
            // Another flush (a checkpoint's) may have synced what was asked:
            // the point must see it even when nothing is left to sync.
            recomputeLocked();
            cv_.notify_all();
            if (!wanted(syncWanted_))
                continue;
            lastSync = std::chrono::steady_clock::now();
            lock.unlock();
            Status s = log->flush();
            lock.lock();
            if (!s.ok()) {
                syncError_ = s;
                cv_.notify_all();
                return;
            }
            recomputeLocked();
            cv_.notify_all();
        }
    }

    Engine& primary_;
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::condition_variable syncCv_;                 // wakes syncLoop
    static bool needsSync(Engine& primary) {
        oplog::Oplog* log = primary.oplog();
        return log && !log->inMemory() && log->syncMode() != oplog::SyncMode::kFsync;
    }

    const std::chrono::milliseconds syncInterval_;
    const bool syncsPrimary_;  // a syncer_ thread runs (sync mode write or none)
    mvcc::Timestamp syncWanted_ = mvcc::kNoTimestamp;    // GUARDED_BY(mutex_)
    bool requested_ = false;  // GUARDED_BY(mutex_): a request since syncLoop last woke
    bool urgent_ = false;     // GUARDED_BY(mutex_): one of them a commit's
    Status syncError_;                                 // GUARDED_BY(mutex_)
    std::mutex joinMutex_;                             // close() from two threads
    std::thread syncer_;  // with sync mode write or none only
    std::vector<Figures> members_;  // GUARDED_BY(mutex_): member id - 1
    mvcc::Timestamp point_ = mvcc::kNoTimestamp;  // GUARDED_BY(mutex_)
    bool attached_ = false;                       // GUARDED_BY(mutex_)
    bool closed_ = false;                         // GUARDED_BY(mutex_)
};

StatusWith<std::unique_ptr<ReplicaSet>> ReplicaSet::start(Engine& primary,
                                                          ReplicaSetOptions options) {
    if (primary.replicationCoordinator())
        return Status::IllegalOperation(
            "this engine is already the primary of a replica set; use that set");
    std::unique_ptr<ReplicaSet> set(new ReplicaSet(primary, std::move(options)));
    primary.setReplicationCoordinator(set->coordinator_);
    return set;
}

ReplicaSet::ReplicaSet(Engine& primary, ReplicaSetOptions options)
    : primary_(primary),
      options_(std::move(options)),
      coordinator_(std::make_shared<Coordinator>(primary, options_.primarySyncInterval)) {}

ReplicaSet::~ReplicaSet() {
    // Closed first: a commit that finds the set meanwhile gets OK or
    // IllegalOperation from it. The other order left a window where the
    // engine had no set but the set's majority point, which no member
    // advanced any more: a majority wait timed out on it.
    coordinator_->close();
    failpoint::hangInReplicaSetTeardown.pauseIfFires();
    primary_.setReplicationCoordinator(nullptr);
    std::lock_guard lock(controlMutex_);
    for (auto& m : members_)
        m->applier.reset();  // before its engine
    members_.clear();
}

StatusWith<std::unique_ptr<ReplicaApplier>> ReplicaSet::startApplier(Member& m,
                                                                     mvcc::Timestamp after) {
    ReplicaOptions o = options_.applier;
    o.startAfter = after;
    const int id = m.id;
    o.onApplied = [c = coordinator_.get(), id](mvcc::Timestamp applied, mvcc::Timestamp durable) {
        c->report(id, applied, durable);
    };
    o.onStopped = [c = coordinator_.get(), id](const Status& s) { c->stopped(id, s); };
    return ReplicaApplier::start(primary_, *m.engine, std::move(o));
}

StatusWith<int> ReplicaSet::addSecondary() {
    EngineOptions eo = options_.secondary;
    eo.inMemory = true;
    eo.path.clear();
    // No oplog of its own: nobody reads it, its parallel apply commits out
    // of timestamp order (its readers could miss records), and every write
    // would be copied once more.
    eo.inMemoryOplogCapBytes = 0;
    return addMember(std::move(eo));
}

StatusWith<int> ReplicaSet::addSecondary(const std::string& path) {
    if (path.empty())
        return Status::InvalidArgument("a durable secondary needs a data directory path");
    EngineOptions eo = options_.secondary;
    eo.inMemory = false;
    eo.path = path;
    return addMember(std::move(eo));
}

StatusWith<mvcc::Timestamp> ReplicaSet::resumePoint(Engine& secondary) const {
    // What its own recovered oplog (and checkpoint) hold: applied through
    // there, in the primary's timestamps.
    mvcc::Timestamp newest = secondary.recovery().checkpointTs;
    if (oplog::Oplog* log = secondary.oplog())
        newest = std::max(newest, log->stats().lastTs);
    if (newest == mvcc::kNoTimestamp)
        return newest;  // a new directory: from the primary's oldest entry
    oplog::Oplog* primaryLog = primary_.oplog();
    const oplog::OplogStats primary = primaryLog->stats();
    const mvcc::Timestamp primaryNewest = std::max(primary.lastTs, primaryLog->visibleTs());
    if (newest > primaryNewest)
        return Status::IllegalOperation(fmt::format(
            "the secondary's data directory holds writes up to timestamp {}, past the primary's "
            "newest {}: it was written by another engine, not this primary's secondary; use an "
            "empty directory",
            newest, primaryNewest));
    // Capping drops the oldest records first: while the primary still
    // holds the secondary's newest record, nothing after it is gone.
    if (primary.firstTs == mvcc::kNoTimestamp || primary.firstTs > newest)
        return Status(StatusCode::kCappedPositionLost, fmt::format(
            "OplogHistoryLost: the secondary applied through timestamp {} but the primary's oplog "
            "now starts at {} (capping dropped what came between); resynchronize the secondary "
            "from an empty directory",
            newest, primary.firstTs));
    return newest;
}

StatusWith<int> ReplicaSet::addMember(EngineOptions eo) {
    eo.secondary = true;
    std::lock_guard lock(controlMutex_);
    auto cursorCheck = primary_.openOplogCursor({});
    if (!cursorCheck.ok())
        return cursorCheck.status();
    auto engine = Engine::open(std::move(eo));
    if (!engine.ok())
        return engine.status();
    auto after = resumePoint(*engine.value());
    if (!after.ok())
        return after.status();
    auto m = std::make_unique<Member>();
    m->id = static_cast<int>(members_.size()) + 1;
    m->engine = std::move(engine).value();
    m->pausedAt = after.value();
    // Known to the coordinator before its applier reports.
    coordinator_->addMember(after.value());
    auto applier = startApplier(*m, after.value());
    if (!applier.ok()) {
        // Known to the coordinator already: it stays, failed, so ids stay dense.
        coordinator_->stopped(m->id, applier.status());
        members_.push_back(std::move(m));
        return applier.status();
    }
    m->applier = std::move(applier).value();
    members_.push_back(std::move(m));
    return members_.back()->id;
}

ReplicaSet::Member* ReplicaSet::find(int id) const {
    if (id < 1 || static_cast<size_t>(id) > members_.size())
        return nullptr;
    return members_[static_cast<size_t>(id - 1)].get();
}

StatusWith<ReplicaSet::Member*> ReplicaSet::pausable(int id) const {
    if (id == 0)
        return Status::IllegalOperation("member 0 is the primary; only secondaries pause");
    Member* m = find(id);
    if (!m)
        return Status::NotFound(fmt::format("no member {}; the set has members 0..{}", id,
                                            members_.size()));
    return m;
}

Status ReplicaSet::pause(int id) {
    std::lock_guard lock(controlMutex_);
    auto found = pausable(id);
    if (!found.ok())
        return found.status();
    Member* m = found.value();
    if (!m->applier)
        return Status::IllegalOperation(fmt::format("member {} is paused already", id));
    m->applier->stop();
    m->pausedAt = m->applier->lastAppliedTs();
    m->applier.reset();
    coordinator_->setPaused(id, true);
    return Status::OK();
}

Status ReplicaSet::resume(int id) {
    std::lock_guard lock(controlMutex_);
    auto found = pausable(id);
    if (!found.ok())
        return found.status();
    Member* m = found.value();
    // A member whose applier stopped on an error resumes as a paused one.
    if (m->applier && m->applier->stats().running)
        return Status::IllegalOperation(fmt::format("member {} is not paused", id));
    if (m->applier) {
        m->applier->stop();
        m->pausedAt = m->applier->lastAppliedTs();
        m->applier.reset();
    }
    auto applier = startApplier(*m, m->pausedAt);
    if (!applier.ok())
        return applier.status();
    m->applier = std::move(applier).value();
    coordinator_->setPaused(id, false);
    return Status::OK();
}

std::vector<MemberStatus> ReplicaSet::status() const {
    return coordinator_->members();
}

std::string ReplicaSet::statusJson() const {
    return coordinator_->statusJson();
}

size_t ReplicaSet::size() const {
    return coordinator_->size();
}

mvcc::Timestamp ReplicaSet::majorityCommitTs() const {
    return coordinator_->majority();
}

Engine* ReplicaSet::secondary(int id) {
    std::lock_guard lock(controlMutex_);
    Member* m = find(id);
    return m ? m->engine.get() : nullptr;
}

TxnOptions ReplicaSet::readOptions(int id) const {
    std::lock_guard lock(controlMutex_);
    Member* m = find(id);
    if (!m)
        return {};
    if (!m->applier)
        return TxnOptions{m->pausedAt, false};
    return m->applier->readOptions();
}

Status ReplicaSet::waitApplied(int id, mvcc::Timestamp ts,
                               std::chrono::milliseconds timeout) const {
    std::lock_guard lock(controlMutex_);
    Member* m = find(id);
    if (!m)
        return Status::NotFound(fmt::format("no secondary {}; the set has members 0..{}", id,
                                            members_.size()));
    if (!m->applier)
        return Status::IllegalOperation(fmt::format("member {} is paused; resume it first", id));
    return m->applier->waitApplied(ts, timeout);
}

}  // namespace mvkv::replication
