#include "engine/cursor.h"

#include <limits>

#include "engine/engine.h"
#include "engine/op_scope.h"
#include "engine/session.h"
#include "engine/ttl_value.h"
#include "engine/visible_value.h"

namespace mvkv::engine {

Cursor::Cursor(Session& session, std::shared_ptr<Collection> coll,
               std::optional<lockmgr::AutoGetCollection> locks)
    : session_(session),
      coll_(std::move(coll)),
      locks_(std::move(locks)),
      generation_(session.txnGeneration_),
      treeCursorOwner_(treeCursorFor(session, coll_->tree())),
      treeCursor_(*treeCursorOwner_) {
    ++session_.openCursors_;
    if (CursorSpare* spare = session_.cursorSpare_.get()) {
        value_.swap(spare->value);
        value_.clear();  // its capacity, not the last cursor's bytes
    }
}

std::unique_ptr<BTree::Cursor> Cursor::treeCursorFor(Session& session, const BTree& tree) {
    CursorSpare* spare = session.cursorSpare_.get();
    if (!spare || !spare->tree)
        return std::make_unique<BTree::Cursor>(tree);
    spare->tree->reset(tree);
    return std::move(spare->tree);
}

Status Cursor::beginOwnTxn(const mvcc::BeginOptions& options) {
    CursorSpare* spare = session_.cursorSpare_.get();
    auto txn = spare && spare->txn ? std::move(spare->txn) : std::make_unique<mvcc::Transaction>();
    txn->setOwner(session_.id_);
    if (Status s = session_.engine_.txns_.begin(*txn, options); !s.ok())
        return s;
    ownTxn_ = std::move(txn);
    return Status::OK();
}

Cursor::~Cursor() {
    if (ownTxn_)
        session_.engine_.txns_.commit(*ownTxn_).ignore();  // read-only
    locks_.reset();
    --session_.openCursors_;
    if (!session_.cursorSpare_)
        session_.cursorSpare_ = std::make_unique<CursorSpare>();
    CursorSpare& spare = *session_.cursorSpare_;
    // Kept only while small: an idle session should not hold the buffers of
    // one huge value or of a leaf of long keys.
    constexpr size_t kSpareBytes = 64 << 10;
    if (!spare.tree && treeCursor_.bufferBytes() <= kSpareBytes &&
        value_.capacity() <= kSpareBytes) {  // another cursor may have refilled it already
        spare.tree = std::move(treeCursorOwner_);
        spare.value.swap(value_);
    }
    if (ownTxn_ && !spare.txn)
        spare.txn = std::move(ownTxn_);
}

const mvcc::Transaction& Cursor::txn() const {
    return ownTxn_ ? *ownTxn_ : session_.txn_;
}

Status Cursor::check() const {
    if (!ownTxn_ && (generation_ != session_.txnGeneration_ || !session_.txn_.active()))
        return Status::IllegalOperation(
            "the transaction this cursor read in has ended; open a new cursor");
    return Status::OK();
}

Status Cursor::settle(bool forward) {
    valid_ = false;
    writesSeen_ = txn().writes().size();
    while (true) {
        const uint64_t seen = session_.engine_.prepared_.resolvedCount();
        const mvcc::Update* prepared = nullptr;
        Status s = settleOnce(forward, &prepared);
        if (!s.ok() || !prepared)
            return s;
        // The key's version this cursor would read is prepared: inside a
        // transaction that is the caller's PrepareConflict; a cursor of its
        // own waits for the resolution, as MongoDB retries, then reads the
        // same key again.
        session_.curOp_.add(session_.curOp_.prepareConflicts);
        Status conflict = session_.prepareConflict(*coll_, treeCursor_.key(), prepared);
        if (!ownTxn_)
            return conflict;
        if (!session_.waitPrepareResolved(seen, &conflict))
            return conflict;
    }
}

Status Cursor::settleOnce(bool forward, const mvcc::Update** prepared) {
    auto guard = session_.engine_.epochs_.pin();
    const mvcc::Transaction& t = txn();
    CurOp& op = session_.curOp_;
    uint64_t examined = 0;
    while (treeCursor_.valid()) {
        op.add(op.keysExamined);
        // killOp reaches a step that skips many invisible keys.
        if (++examined % 128 == 0) {
            if (Status s = session_.checkInterrupted(); !s.ok())
                return s;
        }
        const auto* head = static_cast<const mvcc::Update*>(treeCursor_.value());
        std::string_view v;
        auto reader = [this]() -> historystore::HistoryStore::Reader& {
            return session_.historyReader();
        };
        if (readVisibleValue(head, t, session_.engine_.history_, reader, coll_->id(),
                             treeCursor_.key(), &v, prepared, &ts_)) {
            takeValue(v);
            valid_ = true;
            op.add(op.docsExamined);
            op.add(op.nreturned);
            return Status::OK();
        }
        if (*prepared) [[unlikely]]
            return Status::OK();  // stays on the key
        if (forward)
            treeCursor_.next();
        else
            treeCursor_.prev();
    }
    return Status::OK();
}

void Cursor::takeValue(std::string_view v) {
    value_.assign(v);
    if (coll_->ttl()) [[unlikely]]
        valueOffset_ = v.size() - coll_->userValue(v).size();
}

Cursor::BatchStep Cursor::stepInBatch(bool forward) {
    // Not an operation: it runs no OpScope (two clock reads and the
    // CurOp's publication would be most of its cost), so it must stay
    // bounded and unable to wait. It reads at most the rest of one leaf's
    // batch (<= BTree::kLeafCapacity entries), takes no lock and leaves a
    // prepared version, a refill of the batch and every error to the full
    // step. With the profiler on every step is a full one, so it sees them
    // all; a pending interrupt is reported by the full step too.
    // Inside an operation (withTransaction's body) a step adds its counters
    // to that operation: the full step does it. After a write of the
    // cursor's own transaction, too: it reloads the batch from the tree.
    if (!valid_ || !check().ok() ||
        session_.engine_.reportNanos() == std::numeric_limits<int64_t>::min() ||
        session_.interrupted_.load(std::memory_order_relaxed) || session_.curOp_.active() ||
        txn().writes().size() != writesSeen_) [[unlikely]]
        return BatchStep::kFullStep;
    auto guard = session_.engine_.epochs_.pin();
    const mvcc::Transaction& t = txn();
    auto reader = [this]() -> historystore::HistoryStore::Reader& {
        return session_.historyReader();
    };
    bool moved = false;
    while (forward ? treeCursor_.nextInBatch() : treeCursor_.prevInBatch()) {
        moved = true;
        const auto* head = static_cast<const mvcc::Update*>(treeCursor_.value());
        const mvcc::Update* prepared = nullptr;
        std::string_view v;
        if (readVisibleValue(head, t, session_.engine_.history_, reader, coll_->id(),
                             treeCursor_.key(), &v, &prepared, &ts_)) {
            takeValue(v);
            session_.tally_.add(OpTally::kGetMore);  // a step counts as one, as before
            return BatchStep::kDone;
        }
        if (prepared) [[unlikely]] {
            valid_ = false;
            return BatchStep::kSettleHere;
        }
    }
    if (!moved)
        return BatchStep::kFullStep;
    valid_ = false;  // no longer on the entry key() and value() describe
    return BatchStep::kStepFromHere;
}

std::optional<int64_t> Cursor::expiresAtMs() const {
    TtlStamp stamp;
    if (!valid_ || !coll_->ttl() || !decodeTtlStamp(value_.view(), &stamp))
        return std::nullopt;
    return stamp.expiresAtMs(coll_->expireAfterSeconds());
}

Status Cursor::seek(std::string_view key) {
    OpScope scope(session_, {CurOpType::kGetMore, "getMore", coll_->ns().ns(), key});
    if (Status s = check(); !s.ok())
        return scope.finish(std::move(s));
    treeCursor_.seek(key);
    return scope.finish(settle(true));
}

Status Cursor::seekForPrev(std::string_view key) {
    OpScope scope(session_, {CurOpType::kGetMore, "getMore", coll_->ns().ns(), key});
    if (Status s = check(); !s.ok())
        return scope.finish(std::move(s));
    treeCursor_.seekForPrev(key);
    return scope.finish(settle(false));
}

Status Cursor::first() {
    OpScope scope(session_, {CurOpType::kGetMore, "getMore", coll_->ns().ns(), {}});
    if (Status s = check(); !s.ok())
        return scope.finish(std::move(s));
    treeCursor_.seekFirst();
    return scope.finish(settle(true));
}

Status Cursor::last() {
    OpScope scope(session_, {CurOpType::kGetMore, "getMore", coll_->ns().ns(), {}});
    if (Status s = check(); !s.ok())
        return scope.finish(std::move(s));
    treeCursor_.seekLast();
    return scope.finish(settle(false));
}

Status Cursor::next() {
    return step(true);
}

Status Cursor::prev() {
    return step(false);
}

Status Cursor::step(bool forward) {
    const BatchStep done = stepInBatch(forward);
    if (done == BatchStep::kDone) [[likely]]
        return Status::OK();
    OpScope scope(session_, {CurOpType::kGetMore, "getMore", coll_->ns().ns(), {}});
    if (Status s = check(); !s.ok())
        return scope.finish(std::move(s));
    if (done == BatchStep::kFullStep && !valid_)
        return scope.finish(Status::OK());  // not on an entry: no step to take
    if (txn().writes().size() != writesSeen_) {
        // The transaction wrote since the cursor last moved: a key it
        // inserted may belong inside the batch, which is a copy.
        treeCursor_.stepFromTree(forward);
    } else if (done != BatchStep::kSettleHere) {
        if (forward)
            treeCursor_.next();
        else
            treeCursor_.prev();
    }
    return scope.finish(settle(forward));
}

}  // namespace mvkv::engine
