// Transaction: one session's unit of work in the MVCC layer.
//
// A Transaction object belongs to one session and is reused across
// transactions (its buffers keep their capacity). It is begun, written and
// ended through the TransactionManager; this header holds its state and the
// visibility rule.
//
// Visibility (docs/architecture.md, "Timestamps and visibility"; docs/mvcc.md):
// an update is visible to T when it is T's own, or when its transaction
// finished (committed) before T's snapshot was taken AND its commit
// timestamp <= T's read bound: T's read timestamp, or, without one, the
// snapshot's read point (no bound on an engine without ordered commits),
// raised to T's session's own newest commit.
//
// Thread safety: not thread-safe; one thread at a time (the session's). The
// manager reads the fields it publishes (id, readTs, commitTs) under its own
// mutex, and a reader's snapshot floor and read bound under its reader
// shard's mutex too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mvcc/snapshot.h"
#include "mvcc/timestamp.h"
#include "mvcc/update.h"

namespace mvkv::mvcc {

/// kPrepared: Session::prepare / TransactionManager::prepare ran; only a
/// commit (with timestamps) or an abort ends it.
enum class TxnState : uint8_t { kIdle, kActive, kPrepared, kCommitted, kAborted };

/// What a reader makes of one version (Transaction::see).
enum class Seen : uint8_t {
    kNo,
    kYes,
    /// A prepared version the reader's snapshot and read timestamp would
    /// see: the reader cannot know yet whether it commits (PrepareConflict).
    kPrepared,
};

/// What a transaction wrote: the engine gives each write a `collection` tag
/// so it can account per collection after commit.
struct WriteRecord {
    Update* update;
    /// This transaction's own earlier version of the key that `update`
    /// replaced, or null: a key written twice counts once.
    const Update* ownPrevious;
    uint32_t collection;
};

class Transaction {
  public:
    Transaction() = default;
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;

    TxnState state() const { return state_; }
    bool active() const { return state_ == TxnState::kActive; }
    bool prepared() const { return state_ == TxnState::kPrepared; }
    /// The prepare timestamp (kNoTimestamp unless prepared).
    Timestamp prepareTs() const { return prepareTs_; }
    /// The durable timestamp of a committed prepared transaction (its
    /// commit timestamp otherwise).
    Timestamp durableTs() const { return durableTs_; }
    /// Begun with BeginOptions::ignorePrepare: prepared versions read as absent.
    bool ignoresPrepare() const { return ignorePrepare_; }
    /// kNoTxnId until the first write.
    TxnId id() const { return id_; }
    bool hasReadTs() const { return readTs_ != kNoTimestamp; }
    Timestamp readTs() const { return readTs_; }
    /// The newest commit timestamp this transaction can see: its read
    /// timestamp, or its snapshot's read point (kMaxTimestamp: no bound).
    Timestamp readBound() const { return readBound_; }
    /// The commit timestamp of the newest commit that wrote through this
    /// object (it outlives each transaction): a snapshot begun later
    /// without a read timestamp always sees it.
    Timestamp lastOwnCommitTs() const { return lastOwnCommitTs_; }
    /// The commit timestamp set with timestamp_transaction, or the one
    /// commit assigned; kNoTimestamp before either.
    Timestamp commitTs() const { return commitTs_; }
    const Snapshot& snapshot() const { return snapshot_; }
    const std::vector<WriteRecord>& writes() const { return writes_; }
    /// A caller's tag (the engine: its session id), shown when this
    /// transaction is the reader that pins history.
    uint64_t owner() const { return owner_; }
    void setOwner(uint64_t owner) { owner_ = owner; }

    /// The visibility rule; `u` must not be null.
    bool canSee(const Update* u) const {
        if (u->txnId() == id_ && id_ != kNoTxnId)
            return u->state() != UpdateState::kAborted;
        if (u->state() != UpdateState::kCommitted)
            return false;
        if (!snapshot_.finishedBefore(u->txnId()))
            return false;
        return u->startTs() <= readBound_;
    }

    /// The visibility rule with prepared versions (WiredTiger's
    /// __wt_txn_upd_visible_type): the state is loaded once, so a version
    /// committing under the reader is judged either prepared or committed.
    Seen see(const Update* u) const {
        if (u->txnId() == id_ && id_ != kNoTxnId)
            return u->state() != UpdateState::kAborted ? Seen::kYes : Seen::kNo;
        const UpdateState state = u->state();
        if (state != UpdateState::kCommitted && state != UpdateState::kPrepared)
            return Seen::kNo;
        if (!snapshot_.finishedBefore(u->txnId()))
            return Seen::kNo;
        if (state == UpdateState::kCommitted)
            return u->startTs() <= readBound_ ? Seen::kYes : Seen::kNo;
        // Prepared: judged by the read timestamp alone, so an untimestamped
        // reader conflicts on it whatever its read point (as it did before
        // read points: a conflict is never wrong, only cautious).
        if (readTs_ != kNoTimestamp && u->startTs() > readTs_)
            return Seen::kNo;
        return ignorePrepare_ ? Seen::kNo : Seen::kPrepared;
    }

    /// The visibility rule for a committed version known only by its
    /// transaction and commit timestamp (a history store entry).
    bool canSeeCommitted(TxnId txnId, Timestamp startTs) const {
        return snapshot_.finishedBefore(txnId) && startTs <= readBound_;
    }

    /// The newest version from `head` down visible to this transaction, or
    /// null (no version visible in the chain). The result may be a tombstone.
    /// With `lookInHistory`: set when nothing was visible and older versions
    /// of the key were moved to the history store, where the caller must look.
    /// With `prepared`: when a prepared version would be seen, the walk
    /// stops there, returns null and sets *prepared to it (a reader must
    /// not read past it: PrepareConflict). Without, prepared versions are
    /// skipped (writers: they conflict on it through canSee first).
    const Update* findVisible(const Update* head, bool* lookInHistory = nullptr,
                              const Update** prepared = nullptr) const {
        const Update* last = nullptr;
        for (const Update* u = head; u; u = u->next()) {
            const Seen seen = see(u);
            if (seen == Seen::kYes)
                return u;
            if (seen == Seen::kPrepared && prepared) {
                *prepared = u;
                if (lookInHistory)
                    *lookInHistory = false;
                return nullptr;
            }
            last = u;
        }
        if (lookInHistory)
            *lookInHistory = last && last->olderInHistory();
        return nullptr;
    }
    const Update* findVisible(const VersionSlot& slot) const { return findVisible(slot.head()); }

  private:
    friend class TransactionManager;

    TxnState state_ = TxnState::kIdle;
    TxnId id_ = kNoTxnId;
    Timestamp readTs_ = kNoTimestamp;
    Timestamp readBound_ = kMaxTimestamp;  // readTs_, or the read point (see readBound())
    Timestamp lastOwnCommitTs_ = kNoTimestamp;
    Timestamp commitTs_ = kNoTimestamp;
    Timestamp prepareTs_ = kNoTimestamp;
    Timestamp durableTs_ = kNoTimestamp;
    bool ignorePrepare_ = false;
    Snapshot snapshot_;
    std::vector<WriteRecord> writes_;
    // Membership of the manager's active list (guarded by its mutex).
    bool linked_ = false;  // on the active list (short unregistered readers stay off it)
    bool reserved_ = false;  // holds a timestamp from reserveTimestamp()
    // Between fixing its commit timestamp in a commit (prepareCommit,
    // reserveTimestamp) and finishing: a hole that closes by itself, which
    // later commits and reads wait for (guarded by the manager's mutex).
    bool committing_ = false;
    Transaction* prevActive_ = nullptr;
    Transaction* nextActive_ = nullptr;
    // Membership of a reader shard (guarded by that shard's mutex): a
    // transaction registered without a read timestamp is on the shard of the
    // thread that began it until it ends or is prepared, on the active list
    // too or not (TransactionManager::readerShards_).
    int readerShard_ = -1;
    Transaction* prevReader_ = nullptr;
    Transaction* nextReader_ = nullptr;
    uint64_t beginMicros_ = 0;  // steady clock, for the age of the oldest reader
    uint64_t owner_ = 0;
};

}  // namespace mvkv::mvcc
