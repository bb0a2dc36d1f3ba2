// Cursor: ordered iteration over one collection at a snapshot.
//
// Positions only on keys with a live version visible to the cursor's
// transaction (tombstones and invisible versions are skipped); in an
// explicit transaction that includes the transaction's own writes, made
// before or after the cursor was opened. Every positioning call returns OK
// (check valid()) or an error: IllegalOperation once the transaction the
// cursor belongs to has ended.
//
// Thread safety: one thread at a time, the session's. Destroy before the
// session.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "btree/btree.h"
#include "engine/collection.h"
#include "lockmgr/raii_locks.h"
#include "mvcc/transaction.h"
#include "mvcc/txn_manager.h"
#include "util/copy_buffer.h"
#include "util/status.h"

namespace mvkv::engine {

class Session;

/// A closed cursor's buffers, kept by its session for the next cursor: a
/// short scan (open, seek, a few steps, close) then allocates nothing but
/// the Cursor itself. One is enough, as a session's cursors are mostly
/// opened one at a time.
struct CursorSpare {
    std::unique_ptr<BTree::Cursor> tree;  // by pointer: moving its buffers costs more
    CopyBuffer value;
    std::unique_ptr<mvcc::Transaction> txn;
};

class Cursor {
  public:
    ~Cursor();
    Cursor(const Cursor&) = delete;
    Cursor& operator=(const Cursor&) = delete;

    Status seek(std::string_view key);         // first key >= key
    Status seekForPrev(std::string_view key);  // last key <= key
    Status first();
    Status last();
    Status next();
    Status prev();

    bool valid() const { return valid_; }
    /// Valid until the cursor moves (the key is a view of the tree cursor's
    /// own copy of the leaf; the value a copy made when the cursor settled).
    std::string_view key() const { return treeCursor_.key(); }
    /// The caller's bytes (in a TTL collection, without the stored header).
    std::string_view value() const { return value_.view().substr(valueOffset_); }
    /// In a TTL collection (docs/ttl.md), when the entry expires (ms since
    /// the Unix epoch: its explicit expiry, or its write time plus the
    /// collection's expireAfterSeconds as it is now); nullopt in any other.
    std::optional<int64_t> expiresAtMs() const;
    /// The commit timestamp of the version value() came from
    /// (kNoTimestamp for the cursor's own transaction's write).
    mvcc::Timestamp timestamp() const { return ts_; }

  private:
    friend class Session;
    friend class Checkpointer;  // writes stored values, TTL headers included
    /// The value as stored (engine/ttl_value.h).
    std::string_view storedValue() const { return value_.view(); }
    Cursor(Session& session, std::shared_ptr<Collection> coll,
           std::optional<lockmgr::AutoGetCollection> locks);
    /// Outside a transaction: the cursor's own snapshot, begun with `options`
    /// (the session's read concern); refused as begin() refuses it.
    Status beginOwnTxn(const mvcc::BeginOptions& options);
    Status check() const;
    const mvcc::Transaction& txn() const;
    /// Moves the tree cursor in `forward` direction until a visible live key.
    /// Interrupted (killOp) when it is interrupted while skipping keys.
    /// Moves to the first key (from the tree cursor on) with a visible live
    /// value. A prepared version met (docs/mvcc.md): PrepareConflict inside
    /// a transaction; a cursor with its own snapshot waits for it to resolve.
    Status settle(bool forward);
    /// One pass under one epoch pin; stops on a key whose version is
    /// prepared, with *prepared set.
    Status settleOnce(bool forward, const mvcc::Update** prepared);
    /// Keeps `v` (a visible version's bytes) as the cursor's value.
    void takeValue(std::string_view v);
    /// What a step within the tree cursor's batch left to do.
    enum class BatchStep {
        kDone,         // on the next visible entry: the step is over
        kSettleHere,   // on a key whose version is prepared: settle from it
        kStepFromHere, // on the batch's last entry, invisible to this reader: step on from it
        kFullStep,     // nothing done: the full step (an operation) does it all
    };
    /// The cheap step of next()/prev() (docs/operations.md, "Cursor steps"):
    /// moves through the entries the tree cursor already copied, reading
    /// each under one epoch pin, without an operation of its own.
    BatchStep stepInBatch(bool forward);
    Status step(bool forward);

    /// The spare tree cursor of `session`, reset onto `tree`, or a new one.
    static std::unique_ptr<BTree::Cursor> treeCursorFor(Session& session, const BTree& tree);

    Session& session_;
    std::shared_ptr<Collection> coll_;
    std::optional<lockmgr::AutoGetCollection> locks_;  // only with a txn of its own
    std::unique_ptr<mvcc::Transaction> ownTxn_;
    uint64_t generation_;
    std::unique_ptr<BTree::Cursor> treeCursorOwner_;
    BTree::Cursor& treeCursor_;  // *treeCursorOwner_
    bool valid_ = false;
    CopyBuffer value_;  // as stored; a CopyBuffer: every step copies into it (util/copy_buffer.h)
    size_t valueOffset_ = 0;  // where the caller's bytes start in value_ (a TTL header's size)
    mvcc::Timestamp ts_ = mvcc::kNoTimestamp;
    // txn().writes().size() when the cursor last moved: a step after a
    // write of the cursor's own transaction does not trust the batch, a
    // copy in which a key the write inserted is missing.
    size_t writesSeen_ = 0;
};

}  // namespace mvkv::engine
