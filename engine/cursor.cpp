#include "engine/cursor.h"

#include <cstring>

#include "engine/engine.h"
#include "engine/session.h"
#include "engine/visible_value.h"

namespace mvkv::engine {

Cursor::Cursor(Session& session, std::shared_ptr<Collection> coll,
               std::optional<lockmgr::AutoGetCollection> locks, bool ownTxn)
    : session_(session),
      coll_(std::move(coll)),
      locks_(std::move(locks)),
      generation_(session.txnGeneration_),
      treeCursor_(coll_->tree()) {
    if (ownTxn) {
        ownTxn_ = std::make_unique<mvcc::Transaction>();
        ownTxn_->setOwner(session_.id_);
        // A fresh transaction with no read timestamp cannot be refused.
        session_.engine_.txns_.begin(*ownTxn_).ignore();
    }
    ++session_.openCursors_;
}

Cursor::~Cursor() {
    if (ownTxn_)
        session_.engine_.txns_.commit(*ownTxn_).ignore();  // read-only
    locks_.reset();
    --session_.openCursors_;
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

void Cursor::settle(bool forward) {
    valid_ = false;
    auto guard = session_.engine_.epochs_.pin();
    const mvcc::Transaction& t = txn();
    while (treeCursor_.valid()) {
        const auto* head = static_cast<const mvcc::Update*>(treeCursor_.value());
        std::string_view v;
        auto reader = [this]() -> historystore::HistoryStore::Reader& {
            return session_.historyReader();
        };
        if (readVisibleValue(head, t, session_.engine_.history_, reader, coll_->id(),
                             treeCursor_.key(), &v, &ts_)) {
            // resize + memcpy: assign()'s general path (aliasing, growth
            // policy) costs more than the copy of a small value.
            value_.resize(v.size());
            std::memcpy(value_.data(), v.data(), v.size());
            valid_ = true;
            return;
        }
        if (forward)
            treeCursor_.next();
        else
            treeCursor_.prev();
    }
}

Status Cursor::seek(std::string_view key) {
    if (Status s = check(); !s.ok())
        return s;
    treeCursor_.seek(key);
    settle(true);
    return Status::OK();
}

Status Cursor::seekForPrev(std::string_view key) {
    if (Status s = check(); !s.ok())
        return s;
    treeCursor_.seekForPrev(key);
    settle(false);
    return Status::OK();
}

Status Cursor::first() {
    if (Status s = check(); !s.ok())
        return s;
    treeCursor_.seekFirst();
    settle(true);
    return Status::OK();
}

Status Cursor::last() {
    if (Status s = check(); !s.ok())
        return s;
    treeCursor_.seekLast();
    settle(false);
    return Status::OK();
}

Status Cursor::next() {
    if (Status s = check(); !s.ok())
        return s;
    if (!valid_)
        return Status::OK();
    treeCursor_.next();
    settle(true);
    return Status::OK();
}

Status Cursor::prev() {
    if (Status s = check(); !s.ok())
        return s;
    if (!valid_)
        return Status::OK();
    treeCursor_.prev();
    settle(false);
    return Status::OK();
}

}  // namespace mvkv::engine
