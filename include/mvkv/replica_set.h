// mvkv/replica_set.h: a replica set in one process (docs/replication.md):
// the engine is its primary, and each secondary is an engine of its own
// (in memory, or durable on a directory) applying the primary's oplog.
// Write concern (Session::commit with a WriteConcern) and read concern
// majority (TxnOptions) wait on it; Engine::majorityCommitTs() follows it.
// Part of the public API (include/mvkv/); no stable ABI is promised yet.
//
// Ownership and lifetime: Engine::startReplicaSet gives the only owner;
// destroy it before the Engine. Destroying it stops the secondaries and
// makes the engine standalone again; a commit waiting on a write concern
// then returns IllegalOperation.
//
// Thread safety: every method from any thread.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "mvkv/status.h"
#include "mvkv/timestamp.h"

namespace mvkv {

struct MemberStatus {
    int id = 0;         // 0: the primary
    std::string state;  // "PRIMARY", "SECONDARY", "PAUSED", "FAILED"
    Timestamp lastApplied = kNoTimestamp;
    Timestamp lastDurable = kNoTimestamp;
    bool paused = false;
    std::string error;  // why a FAILED member's apply stopped
};

class ReplicaSet {
  public:
    ~ReplicaSet();
    ReplicaSet(const ReplicaSet&) = delete;
    ReplicaSet& operator=(const ReplicaSet&) = delete;

    /// One more in-memory secondary, applying the oplog from its oldest
    /// entry; returns its id (1, 2, ...). IllegalOperation for a primary
    /// without an oplog; Engine::open's errors.
    StatusWith<int> addSecondary();
    /// A durable secondary on data directory `path` (created when missing;
    /// one that holds a secondary's data resumes after its newest
    /// timestamp). InvalidArgument for an empty path; CappedPositionLost when
    /// the primary's oplog no longer holds that point; IllegalOperation when
    /// the directory is past the primary's newest; Engine::open's errors.
    StatusWith<int> addSecondary(const std::string& path);
    /// Stops / restarts a secondary's apply. NotFound for an unknown id;
    /// IllegalOperation for the primary or a member already in that state.
    Status pause(int id);
    Status resume(int id);
    /// Members in id order, the primary first.
    std::vector<MemberStatus> status() const;
    /// {"members":[{"id","state","lastApplied","lastDurable","paused"}...],
    ///  "majorityCommitPoint":N}.
    std::string statusJson() const;
    size_t size() const;
    Timestamp majorityCommitTs() const;

    struct Impl;  // the engine's side (opaque)
    explicit ReplicaSet(std::unique_ptr<Impl> impl);

  private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace mvkv
