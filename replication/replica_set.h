// ReplicaSet: a primary and N secondaries in one process (docs/replication.md,
// "The replica set"), as MongoDB's replica set is on one machine per member.
//
// Design:
// - Member 0 is the primary, an engine the caller owns. Members 1..N are
//   engines the set owns, in memory or on their own data directories
//   (addSecondary(path)), each followed by a ReplicaApplier
//   (replication/replica.h) reading the primary's oplog through
//   Engine::openOplogCursor; a durable one logs the apply in the primary's
//   timestamp order, and reopened resumes after its own newest timestamp.
// - Each member reports its last applied and last durable timestamp. The
//   primary's are its oplog's visible point (everything below is logged);
//   a secondary's are its applier's lastAppliedTs() and lastDurableTs()
//   (in memory, durable = applied). A secondary never passes the primary:
//   it reads the oplog only up to that point.
// - The majority commit point is the newest timestamp that a majority of the
//   members (n / 2 + 1, the primary included) have made durable: the
//   (n / 2 + 1)-th largest durable timestamp. The set attach()es the
//   primary's MajorityCommitPoint (engine/majority_commit_point.h) when its
//   first secondary joins and advance()s it on every report (so it never
//   moves back, also when a member is paused or added). With no secondary
//   the primary is standalone: a majority of one.
// - Write concern (engine/write_concern.h): the set is the primary's
//   ReplicationCoordinator. {w: N} waits until N members applied the commit,
//   {w: "majority"} until the majority point reaches it, on one condition
//   variable every report wakes.
// - pause(id) stops the member's applier (its lastAppliedTs() stays);
//   resume(id) starts a new one after it (ReplicaOptions::startAfter).
//
// Thread safety: every method from any thread. The primary must outlive the
// set; the destructor stops every applier and hands the primary back to
// standalone (a commit waiting on a write concern gets IllegalOperation).
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "replication/replica.h"
#include "engine/write_concern.h"
#include "mvcc/timestamp.h"
#include "util/status.h"

namespace mvkv::replication {

struct ReplicaSetOptions {
    /// For every secondary's applier (startAfter and onApplied are the set's).
    ReplicaOptions applier;
    /// For every secondary's engine (addSecondary() forces inMemory on,
    /// addSecondary(path) off with that path).
    engine::EngineOptions secondary;
    /// A primary whose oplog syncs only when asked (sync mode write or
    /// none) is synced for the members' reports at most this often (MongoDB's
    /// journal commitIntervalMs); a {w: "majority"} commit asks at once.
    std::chrono::milliseconds primarySyncInterval{100};
};

struct MemberStatus {
    int id = 0;                 // 0: the primary
    std::string state;          // "PRIMARY", "SECONDARY", "PAUSED", "FAILED"
    mvcc::Timestamp lastApplied = mvcc::kNoTimestamp;
    mvcc::Timestamp lastDurable = mvcc::kNoTimestamp;
    bool paused = false;
    std::string error;          // why a FAILED member's applier stopped
};

class ReplicaSet {
  public:
    /// A set of one (the primary); addSecondary() grows it. IllegalOperation
    /// when `primary` is already the primary of a set.
    static StatusWith<std::unique_ptr<ReplicaSet>> start(engine::Engine& primary,
                                                         ReplicaSetOptions options = {});
    ~ReplicaSet();
    ReplicaSet(const ReplicaSet&) = delete;
    ReplicaSet& operator=(const ReplicaSet&) = delete;

    /// Opens one more in-memory secondary and starts applying the primary's
    /// oplog from its oldest entry; returns its id (1, 2, ...). Errors of
    /// Engine::open and ReplicaApplier::start (IllegalOperation for a
    /// primary without an oplog).
    StatusWith<int> addSecondary();
    /// Opens a durable secondary on data directory `path` (created when
    /// missing; ReplicaSetOptions::secondary otherwise). A directory that
    /// already holds a secondary's data resumes after its own newest
    /// timestamp (docs/replication.md, "Durable members"): CappedPositionLost
    /// (OplogHistoryLost) when the primary's oplog no longer holds that
    /// point, IllegalOperation when it is past the primary's newest (another
    /// engine wrote it); InvalidArgument for an empty path; the errors above.
    StatusWith<int> addSecondary(const std::string& path);
    /// Stops / restarts a secondary's apply. NotFound for an unknown id,
    /// IllegalOperation for the primary or a member already in that state;
    /// resume returns ReplicaApplier::start's errors. A FAILED member (its
    /// applier stopped on an error) resumes from its last applied timestamp.
    Status pause(int id);
    Status resume(int id);

    /// Members in id order, the primary first.
    std::vector<MemberStatus> status() const;
    /// {"members":[{"id","state","lastApplied","lastDurable","paused"}...],
    ///  "majorityCommitPoint":N} (docs/shell.md, `rs status`).
    std::string statusJson() const;
    size_t size() const;
    mvcc::Timestamp majorityCommitTs() const;
    /// A secondary's engine, for reads (null for an unknown id or 0), and
    /// its read options (at its last applied batch).
    engine::Engine* secondary(int id);
    engine::TxnOptions readOptions(int id) const;
    /// OK once secondary `id` applied `ts` (ReplicaApplier::waitApplied;
    /// IllegalOperation while it is paused). Membership changes wait
    /// while it waits.
    Status waitApplied(int id, mvcc::Timestamp ts, std::chrono::milliseconds timeout) const;

  private:
    class Coordinator;
    struct Member {
        int id = 0;
        std::unique_ptr<engine::Engine> engine;
        std::unique_ptr<ReplicaApplier> applier;  // null while paused
        mvcc::Timestamp pausedAt = mvcc::kNoTimestamp;
    };
    ReplicaSet(engine::Engine& primary, ReplicaSetOptions options);
    Member* find(int id) const;
    /// Secondary `id` for pause/resume: IllegalOperation for 0, NotFound.
    StatusWith<Member*> pausable(int id) const;
    StatusWith<std::unique_ptr<ReplicaApplier>> startApplier(Member& m, mvcc::Timestamp after);
    StatusWith<int> addMember(engine::EngineOptions eo);
    /// Where a secondary engine's apply starts (its recovered newest
    /// timestamp), checked against the primary's oplog.
    StatusWith<mvcc::Timestamp> resumePoint(engine::Engine& secondary) const;

    engine::Engine& primary_;
    const ReplicaSetOptions options_;
    std::shared_ptr<Coordinator> coordinator_;
    /// Membership changes (add, pause, resume) one at a time; never held
    /// by a report, so stopping an applier under it cannot deadlock.
    mutable std::mutex controlMutex_;
    std::vector<std::unique_ptr<Member>> members_;  // GUARDED_BY(controlMutex_); secondaries
};

}  // namespace mvkv::replication
