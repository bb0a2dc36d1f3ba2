#include "engine/session.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <unordered_set>

#include "engine/cursor.h"
#include "engine/engine.h"
#include "recovery/durable_log.h"
#include "engine/key_slot.h"
#include "engine/ttl_value.h"
#include "engine/visible_value.h"
#include "engine/operation_context.h"
#include "engine/op_scope.h"
#include "engine/implicit_write.h"
#include "failpoint/failpoints.h"
#include "mvcc/write_conflict_retry.h"
#include "util/printable.h"

namespace mvkv::engine {

using lockmgr::LockMode;

Session::Session(Engine& engine, uint64_t id)
    : engine_(engine),
      id_(id),
      locker_(std::make_unique<lockmgr::Locker>(engine.lockManager_)),
      lockTimeout_(engine.options_.lockTimeout),
      retryTimeout_(engine.options_.writeConflictRetryTimeout) {
    txn_.setOwner(id_);
    engine_.sessions_.fetch_add(1, std::memory_order_relaxed);
    name_ = fmt::format("conn{}", id_);
    engine_.ops_.add(this);
}

Session::~Session() {
    assert(openCursors_ == 0 && "destroy every Cursor before its Session");
    if (txn_.prepared())
        engine_.keepPrepared(*this);  // it outlives the session (as in MongoDB)
    else if (txn_.active())
        abortTxn();
    if (explicit_)
        tally_.add(OpTally::kTxnAborted);  // closing a session aborts its transaction
    endExplicit();
    // The profiler's own writes count in no opcounter (as in MongoDB).
    static const OpTally kNoTally;
    engine_.ops_.remove(this, monitored_ ? tally_ : kNoTally);
    engine_.sessions_.fetch_sub(1, std::memory_order_relaxed);
}

Deadline Session::lockDeadline() const {
    return lockTimeout_ ? Deadline::in(*lockTimeout_) : Deadline::never();
}

void Session::interrupt() {
    // The locker's flag first: beginOpSlow clears the locker's flag only
    // after it took ours, so it can never clear ours and leave the locker's
    // set behind it (every later lock wait of the session would fail).
    // Sequentially consistent with docLockWait_ (DocumentLocks::acquire
    // publishes it, then checks the flag): either the sleeper sees the flag
    // or this sees the stripe and wakes it.
    locker_->interrupt();
    interrupted_.store(true);
    if (LockWaiters::Stripe* stripe = docLockWait_.load())
        stripe->wakeAll();
    engine_.prepared_.wakeAll();  // an implicit read waiting for a prepared transaction
}

Status Session::checkInterrupted() const {
    if (interrupted_.load(std::memory_order_acquire))
        return Status::Interrupted("the operation was interrupted (killOp)");
    return Status::OK();
}

namespace {
/// checkKey's and checkValue's error, out of line: the checks themselves
/// stay small enough to inline into every read and write.
[[gnu::noinline, gnu::cold]] Status tooLarge(std::string_view what, size_t bytes, size_t limit,
                                             std::string_view option) {
    return Status::InvalidArgument(
        fmt::format("{} is {} bytes; the limit is {} ({})", what, bytes, limit, option));
}
}  // namespace

Status Session::checkKey(std::string_view key) const {
    if (key.size() > engine_.options_.maxKeyBytes) [[unlikely]]
        return tooLarge("key", key.size(), engine_.options_.maxKeyBytes, "maxKeyBytes");
    return Status::OK();
}

Status Session::checkValue(std::string_view value) const {
    if (value.size() > engine_.options_.maxValueBytes) [[unlikely]]
        return tooLarge("value", value.size(), engine_.options_.maxValueBytes, "maxValueBytes");
    return Status::OK();
}

const std::shared_ptr<Collection>* Session::cachedCollection(std::string_view ns) const {
    auto it = collectionCache_.find(ns);
    return it == collectionCache_.end() ? nullptr : &it->second;
}

const std::shared_ptr<Collection>& Session::cacheCollection(std::string_view ns,
                                                            std::shared_ptr<Collection> coll) {
    constexpr size_t kMaxCached = 256;  // forget everything rather than grow without bound
    auto it = collectionCache_.find(ns);
    if (it != collectionCache_.end()) {
        it->second = std::move(coll);
        return it->second;
    }
    if (collectionCache_.size() >= kMaxCached)
        collectionCache_.clear();
    return collectionCache_.emplace(std::string(ns), std::move(coll)).first->second;
}

void Session::dropStaleCache() {
    uint64_t current = engine_.catalog_.generation();
    if (current != cacheGeneration_) {
        collectionCache_.clear();
        cacheGeneration_ = current;
    }
}

void Session::forgetCollection(std::string_view ns) {
    if (auto it = collectionCache_.find(ns); it != collectionCache_.end())
        collectionCache_.erase(it);
}

Status Session::lockForTransaction(const lockmgr::LockNamespace& ns, LockMode mode,
                                   const Deadline& deadline) {
    auto held = std::find_if(txnLockModes_.begin(), txnLockModes_.end(),
                             [&](const HeldLock& h) { return h.ns == ns.ns(); });
    if (held != txnLockModes_.end() && (held->mode == mode || held->mode == LockMode::kIX))
        return Status::OK();
    lockmgr::AutoGetCollection locks(*locker_, ns, mode, deadline);
    if (!locks.status().ok())
        return locks.status();
    txnLocks_.push_back(std::move(locks));
    if (held != txnLockModes_.end())
        held->mode = mode;  // IS -> IX: a conversion, both grants kept until the end
    else
        txnLockModes_.push_back({ns.ns(), mode});
    return Status::OK();
}

void Session::keepForTransaction(const std::shared_ptr<Collection>& coll) {
    if (std::find(txnCollections_.begin(), txnCollections_.end(), coll) == txnCollections_.end())
        txnCollections_.push_back(coll);
}

// --- catalog ---

Status Session::checkCatalogChange(std::string_view db, std::string_view what) const {
    if (db == Namespace::kLocalDb)
        return Status::InvalidArgument(
            "database 'local' is reserved for the engine (the oplog lives there)");
    if (explicit_)
        return Status::IllegalOperation(
            fmt::format("cannot {} inside a transaction; commit or abort it first", what));
    if (engine_.secondary() && clientOp())
        return secondaryWriteRefused();
    return Status::OK();
}

Status Session::secondaryWriteRefused() {
    return Status::NotWritablePrimary(
        "this engine is a replica's secondary: it takes writes from its primary's oplog only, "
        "so that it stays a copy of the primary; write to the primary");
}

Status Session::createCollection(std::string_view ns, const CollectionOptions& options) {
    OpScope op(*this, {CurOpType::kCommand, "create", ns});
    return op.finish([&]() -> Status {
        auto parsed = Namespace::parse(ns);
        if (!parsed.ok())
            return parsed.status();
        if (Status s = validateCollectionOptions(options); !s.ok())
            return s;
        if (Status s = checkCatalogChange(parsed.value().db(), "create a collection"); !s.ok())
            return s;
        lockmgr::AutoGetCollection locks(*locker_, ns, LockMode::kX, lockDeadline());
        if (!locks.status().ok())
            return locks.status();
        return changeCatalog(ns, createCommand(options), [&] {
            return engine_.catalog_.create(parsed.value(), options).status();
        });
    }());
}

Status Session::dropCollection(std::string_view ns) {
    OpScope op(*this, {CurOpType::kCommand, "drop", ns});
    return op.finish([&]() -> Status {
        auto parsed = Namespace::parse(ns);
        if (!parsed.ok())
            return parsed.status();
        if (Status s = checkCatalogChange(parsed.value().db(), "drop a collection"); !s.ok())
            return s;
        lockmgr::AutoGetCollection locks(*locker_, ns, LockMode::kX, lockDeadline());
        if (!locks.status().ok())
            return locks.status();
        return changeCatalog(ns, "drop", [&] { return engine_.catalog_.drop(parsed.value()); });
    }());
}

Status Session::setExpireAfterSeconds(std::string_view ns, int64_t seconds) {
    OpScope op(*this, {CurOpType::kCommand, "collMod", ns});
    return op.finish([&]() -> Status {
        auto parsed = Namespace::parse(ns);
        if (!parsed.ok())
            return parsed.status();
        if (Status s = validateExpireAfterSeconds(seconds); !s.ok())
            return s;
        if (Status s = checkCatalogChange(parsed.value().db(), "change a collection's options");
            !s.ok())
            return s;
        lockmgr::AutoGetCollection locks(*locker_, ns, LockMode::kX, lockDeadline());
        if (!locks.status().ok())
            return locks.status();
        std::shared_ptr<Collection> coll = engine_.catalog_.lookup(ns);
        if (!coll)
            return Status::NamespaceNotFound(fmt::format("collection {} does not exist", ns));
        if (!coll->ttl())
            return Status::InvalidArgument(fmt::format(
                "{} is not a TTL collection: expireAfterSeconds can only be changed on a "
                "collection created with one",
                ns));
        return changeCatalog(ns, collModCommand(seconds), [&] {
            coll->setExpireAfterSeconds(seconds);
            return Status::OK();
        });
    }());
}

Status Session::dropDatabase(std::string_view db) {
    OpScope op(*this, {CurOpType::kCommand, "dropDatabase", db});
    return op.finish([&]() -> Status {
        if (Status s = Namespace::checkDbName(db); !s.ok())
            return s;
        if (Status s = checkCatalogChange(db, "drop a database"); !s.ok())
            return s;
        lockmgr::DBLock lock(*locker_, db, LockMode::kX, lockDeadline());
        if (!lock.status().ok())
            return lock.status();
        Status s = changeCatalog(db, "dropDatabase",
                                 [&] { return engine_.catalog_.dropDatabase(db).status(); });
        if (s.ok())
            engine_.profiler_->forgetDatabase(db);
        return s;
    }());
}

// --- transactions ---

Status Session::begin(const TxnOptions& options) {
    if (explicit_)
        return Status::IllegalOperation(
            "a transaction is already running in this session; commit or abort it first");
    mvcc::BeginOptions mvccOptions{options.readTs, options.roundUpReadTs};
    mvccOptions.pin = options.pin;
    if (Status rc = readConcernTs(options, &mvccOptions.readTs); !rc.ok())
        return rc;
    mvccOptions.ignorePrepare = options.ignorePrepare;
    mvccOptions.ownCommitTs = lastCommitTs_;
    Status s = engine_.txns_.begin(txn_, mvccOptions);
    if (s.ok()) {
        explicit_ = true;
        tally_.add(OpTally::kTxnStarted);
        txnDesc_.readTs.store(txn_.readTs(), std::memory_order_relaxed);
        txnDesc_.txnId.store(0, std::memory_order_relaxed);
        txnDesc_.startMicros.store(engine_.clock_.now(), std::memory_order_relaxed);
        txnDesc_.open.store(true, std::memory_order_release);
    }
    return s;
}

Status Session::timestampTransaction(mvcc::Timestamp commitTs) {
    if (!explicit_)
        return Status::IllegalOperation("no transaction is running: begin one first");
    return engine_.txns_.setCommitTimestamp(txn_, commitTs);
}

Status Session::commit(std::optional<mvcc::Timestamp> commitTs) {
    if (!explicit_)
        return Status::IllegalOperation("no transaction is running: nothing to commit");
    if (txn_.prepared()) {
        if (!commitTs)
            return Status::InvalidArgument(fmt::format(
                "the transaction is prepared (at timestamp {}): its commit needs a commit "
                "timestamp at or after it",
                txn_.prepareTs()));
        return commit(*commitTs, *commitTs);
    }
    OpScope op(*this, {CurOpType::kCommand, "commitTransaction"});
    Status s = commitTxn(commitTs);
    tally_.add(s.ok() ? OpTally::kTxnCommitted : OpTally::kTxnAborted);
    endExplicit();
    return op.finish(std::move(s));
}

Status Session::abort() {
    if (!explicit_)
        return Status::IllegalOperation("no transaction is running: nothing to abort");
    OpScope op(*this, {CurOpType::kCommand, "abortTransaction"});
    Status s;
    if (txn_.prepared())
        s = abortPreparedTxn(true);  // aborted even when its record failed
    else
        abortTxn();
    tally_.add(OpTally::kTxnAborted);
    endExplicit();
    return op.finish(std::move(s));
}

Status Session::withTransaction(const std::function<Status(Session&)>& body,
                                const TxnOptions& options) {
    if (explicit_)
        return Status::IllegalOperation(
            "a transaction is already running in this session; withTransaction starts its own");
    OpScope op(*this, {CurOpType::kCommand, "withTransaction"});
    inWithTransaction_ = true;
    Deadline deadline = Deadline::in(retryTimeout_);
    mvcc::RetryCounts counts;
    Status s = mvcc::writeConflictRetry(
        deadline, counts,
        [&]() -> Status {
            if (Status i = checkInterrupted(); !i.ok())
                return i;
            if (Status b = begin(options); !b.ok())
                return b;
            Status r = body(*this);
            if (!r.ok()) {
                if (explicit_)
                    abort().ignore();
                return r;
            }
            if (!explicit_)
                return Status::IllegalOperation(
                    "the transaction body ended the transaction itself; let withTransaction "
                    "commit it");
            return commit();
        },
        [] {});
    inWithTransaction_ = false;
    if (counts.attempts > 1)
        engine_.txns_.noteRetries(counts.attempts - 1);
    lastOpWriteConflicts_ = counts.writeConflicts;
    curOp_.add(curOp_.writeConflicts, counts.writeConflicts);
    return op.finish(std::move(s));
}

void Session::endExplicit() {
    if (explicit_)
        txnDesc_.open.store(false, std::memory_order_release);
    explicit_ = false;
    ++txnGeneration_;
    while (!txnLocks_.empty())
        txnLocks_.pop_back();  // newest first
    txnLockModes_.clear();
    txnCollections_.clear();
}

historystore::HistoryStore::Reader& Session::historyReader() {
    if (!historyReader_)
        historyReader_ = std::make_unique<historystore::HistoryStore::Reader>(engine_.history_);
    return *historyReader_;
}

Status Session::read(Collection& coll, std::string_view key, std::string* out,
                     std::optional<int64_t>* expiresAtMs) {
    if (failpoint::readIgnoresSnapshot.armed() && explicit_ && clientOp()) [[unlikely]] {
        if (failpoint::readIgnoresSnapshot.checkKey(key))
            return readIgnoringSnapshot(coll, key, out, expiresAtMs);
    }
    return readThrough(txn_, coll, key, out, expiresAtMs);
}

Status Session::readIgnoringSnapshot(Collection& coll, std::string_view key, std::string* out,
                                     std::optional<int64_t>* expiresAtMs) {
    mvcc::Transaction fresh;
    fresh.setOwner(id_);
    if (Status s = engine_.txns_.begin(fresh); !s.ok())
        return s;
    Status s = readThrough(fresh, coll, key, out, expiresAtMs);
    engine_.txns_.commit(fresh).ignore();  // read-only
    return s;
}

Status Session::readThrough(const mvcc::Transaction& txn, Collection& coll, std::string_view key,
                            std::string* out, std::optional<int64_t>* expiresAtMs) {
    std::string_view v;
    const mvcc::Update* prepared = nullptr;
    if (readVisibleValue(
            coll.newestVersion(key), txn, engine_.history_,
            [this]() -> historystore::HistoryStore::Reader& { return historyReader(); }, coll.id(),
            key, &v, &prepared)) {
        if (coll.ttl()) [[unlikely]] {
            TtlStamp stamp;
            const bool stamped = decodeTtlStamp(v, &stamp);
            if (stamped)
                v.remove_prefix(kTtlHeaderBytes);
            if (expiresAtMs && stamped)
                *expiresAtMs = stamp.expiresAtMs(coll.expireAfterSeconds());
            else if (expiresAtMs)
                expiresAtMs->reset();  // no header: never written by a client (not expected)
        } else if (expiresAtMs) {
            expiresAtMs->reset();
        }
        // resize + memcpy: cheaper than assign()'s general path for a small value.
        out->resize(v.size());
        std::memcpy(out->data(), v.data(), v.size());
        return Status::OK();
    }
    if (prepared) [[unlikely]] {
        curOp_.add(curOp_.prepareConflicts);
        return prepareConflict(coll, key, prepared);
    }
    return Status::NotFound(
        fmt::format("key '{}' not found in {}", printable(key), coll.ns().ns()));
}

Status Session::get(std::string_view ns, std::string_view key, std::string* value) {
    return getWithExpiry(ns, key, value, nullptr);
}

Status Session::getWithExpiry(std::string_view ns, std::string_view key, std::string* value,
                              std::optional<int64_t>* expiresAtMs) {
    OpScope scope(*this, {CurOpType::kQuery, "find", ns, key});
    if (Status s = checkKey(key); !s.ok())
        return scope.finish(std::move(s));
    OperationContext op(*this);
    if (Status s = op.lockCollection(ns, LockMode::kIS); !s.ok())
        return scope.finish(std::move(s));
    // One pin for the whole read; for an implicit one it also covers the
    // snapshot, so the reader may stay off the active list
    // (BeginOptions::unregistered).
    Status result;
    if (explicit_) {
        if (txn_.prepared()) [[unlikely]]
            return scope.finish(preparedReadRefused());
        auto pin = engine_.epochs_.pin();
        result = read(op.collection(), key, value, expiresAtMs);
    } else {
        // MongoDB retries an implicit read that met a prepared write until
        // the prepared transaction resolves.
        while (true) {
            const uint64_t seen = engine_.prepared_.resolvedCount();
            mvcc::BeginOptions begin = kImplicitBegin;
            if (readConcern_ != ReadConcern::kLocal) [[unlikely]] {
                auto concern = implicitReadBegin();
                if (!concern.ok())
                    return scope.finish(concern.status());
                begin = concern.value();
            }
            {
                auto pin = engine_.epochs_.pin();
                if (Status b = engine_.txns_.begin(txn_, begin); !b.ok())
                    return scope.finish(std::move(b));
                // (Not read(): its test-only failpoint acts on transactions.)
                result = readThrough(txn_, op.collection(), key, value, expiresAtMs);
                engine_.txns_.commit(txn_).ignore();  // read-only: cannot fail
            }
            if (result.code() != StatusCode::kPrepareConflict ||
                !waitPrepareResolved(seen, &result))
                break;
        }
    }
    scope.countPointRead(result.ok());
    return scope.finish(std::move(result));
}

StatusWith<std::string> Session::get(std::string_view ns, std::string_view key) {
    std::string value;
    if (Status s = get(ns, key, &value); !s.ok())
        return s;
    return value;
}

StatusWith<std::vector<KeyVersion>> Session::keyHistory(std::string_view ns,
                                                       std::string_view key) {
    OpScope scope(*this, {CurOpType::kQuery, "history", ns, key});
    if (Status s = checkKey(key); !s.ok())
        return scope.finish(std::move(s));
    OperationContext op(*this);
    if (Status s = op.lockCollection(ns, LockMode::kIS); !s.ok())
        return scope.finish(std::move(s));
    Collection& coll = op.collection();
    std::vector<KeyVersion> out;
    auto pin = engine_.epochs_.pin();
    // The chain, newest first: each committed version's stop is the start
    // of the committed one above it.
    mvcc::Timestamp above = mvcc::kNoTimestamp;
    for (const mvcc::Update* u = coll.newestVersion(key); u; u = u->next()) {
        KeyVersion v;
        v.value.assign(coll.userValue(u->value()));
        v.tombstone = u->isTombstone();
        v.txnId = u->txnId();
        switch (u->state()) {
            case mvcc::UpdateState::kCommitted:
                v.state = KeyVersion::State::kCommitted;
                v.startTs = u->startTs();
                v.stopTs = above;
                above = v.startTs;
                break;
            case mvcc::UpdateState::kAborted:
                v.state = KeyVersion::State::kAborted;
                break;
            case mvcc::UpdateState::kPrepared:
                v.state = KeyVersion::State::kPrepared;
                v.startTs = u->startTs();
                break;
            default:
                v.state = KeyVersion::State::kUncommitted;
                break;
        }
        out.push_back(std::move(v));
    }
    engine_.history_.forEachVersion(coll.id(), key, [&](const historystore::HistoryEntry& e) {
        KeyVersion v;
        v.value.assign(coll.userValue(e.value()));
        v.tombstone = e.tombstone;
        v.txnId = e.txnId;
        v.startTs = e.startTs;
        v.stopTs = e.stopTs;
        v.where = KeyVersion::Where::kHistoryStore;
        out.push_back(std::move(v));
    });
    return out;
}

Status Session::put(std::string_view ns, std::string_view key, std::string_view value) {
    return write(WriteOp::kPut, ns, key, value);
}
Status Session::insert(std::string_view ns, std::string_view key, std::string_view value) {
    return write(WriteOp::kInsert, ns, key, value);
}
Status Session::update(std::string_view ns, std::string_view key, std::string_view value) {
    return write(WriteOp::kUpdate, ns, key, value);
}
Status Session::remove(std::string_view ns, std::string_view key) {
    return write(WriteOp::kRemove, ns, key, {});
}
Status Session::put(std::string_view ns, std::string_view key, std::string_view value,
                    const WriteOptions& options) {
    return write(WriteOp::kPut, ns, key, value, &options);
}
Status Session::insert(std::string_view ns, std::string_view key, std::string_view value,
                       const WriteOptions& options) {
    return write(WriteOp::kInsert, ns, key, value, &options);
}
Status Session::update(std::string_view ns, std::string_view key, std::string_view value,
                       const WriteOptions& options) {
    return write(WriteOp::kUpdate, ns, key, value, &options);
}
Status Session::remove(std::string_view ns, std::string_view key, const WriteOptions& options) {
    return write(WriteOp::kRemove, ns, key, {}, &options);
}

char Session::oplogOp(WriteOp op) const {
    // What the write did, as MongoDB logs it: 'i' when the key had no live
    // value visible to this transaction (none, or a tombstone), 'u' when it
    // had one. insert and update checked that already; a put asks the
    // version it just replaced: this transaction's own earlier one, or else
    // the newest other version below it (the one its conflict check found
    // visible). A pointer or two down the chain, no lookup.
    switch (op) {
        case WriteOp::kInsert:
            return 'i';
        case WriteOp::kUpdate:
            return 'u';
        case WriteOp::kRemove:
            return 'd';
        case WriteOp::kPut:
            break;
    }
    const mvcc::WriteRecord& w = txn_.writes().back();
    const mvcc::Update* replaced =
        w.ownPrevious ? w.ownPrevious : mvcc::supersededVersion(w.update, txn_.id());
    return replaced && !replaced->isTombstone() ? 'u' : 'i';
}

Status Session::applyWrite(WriteOp op, Collection& coll, std::string_view key,
                           std::string_view value) {
    if (txn_.prepared() || txn_.ignoresPrepare()) [[unlikely]]
        return txn_.prepared()
                   ? Status::IllegalOperation(fmt::format(
                         "the transaction is prepared (at timestamp {}): it takes no more writes; "
                         "commit or abort it",
                         txn_.prepareTs()))
                   : Status::IllegalOperation(
                         "a transaction begun with ignore_prepare may not write (it reads as if "
                         "prepared writes were absent)");
    bool creates = op == WriteOp::kPut || op == WriteOp::kInsert;
    // Whenever the engine has an oplog, in memory too; a durable engine's
    // replay records them as well (log_ is there before the oplog opens): a
    // prepared transaction it rebuilds logs its commit later.
    const bool keepsOplogEntry = engine_.log_ || engine_.oplog_;
    KeySlot slot(coll.tree(), key);
    auto notFound = [&] {
        return Status::NotFound(
            fmt::format("key '{}' not found in {}", printable(key), coll.ns().ns()));
    };
    if (!creates && !slot.head())
        return notFound();
    auto& txns = engine_.txns_;
    // An upsert needs no existence check, and write() checks for conflicts
    // itself; the others must see a conflict before they judge existence.
    Status s = op == WriteOp::kPut ? Status::OK() : txns.checkWrite(txn_, slot);
    if (failpoint::writeConflictOnKey.armed() && clientOp() &&
        failpoint::writeConflictOnKey.checkKey(key)) [[unlikely]]
        s = Status::WriteConflict("forced by failpoint writeConflictOnKey");
    char logOp = 'u';
    if (s.ok()) {
        const mvcc::Update* visible = op == WriteOp::kPut ? nullptr : txn_.findVisible(slot);
        bool exists = visible && !visible->isTombstone();
        if (op == WriteOp::kInsert && exists)
            return Status::DuplicateKey(
                fmt::format("key '{}' already exists in {}", printable(key), coll.ns().ns()));
        if ((op == WriteOp::kUpdate || op == WriteOp::kRemove) && !exists)
            return notFound();
        auto kind = op == WriteOp::kRemove ? mvcc::WriteKind::kTombstone : mvcc::WriteKind::kValue;
        s = txns.write(txn_, slot, kind, value, coll.id());
        // Something for the next background pass to sweep (a chain, or a
        // deletion that may leave the tree); a lone new version is not.
        if (s.ok() && (kind == mvcc::WriteKind::kTombstone || slot.head()->next()))
            engine_.sweeper_.noteWork();
        if (s.ok() && keepsOplogEntry)
            logOp = oplogOp(op);  // before the sweep below trims the chain
        // A deep chain is swept now rather than at the next pass.
        if (s.ok() && HistorySweeper::wantsKeySweep(slot.head()->depth(),
                                                    engine_.options_.chainSweepBound))
            engine_.sweeper_.sweepKey(coll, key);
    }
    if (s.code() == StatusCode::kWriteConflict)
        return Status::WriteConflict(
            fmt::format("{} key '{}': {}", coll.ns().ns(), printable(key), s.message()));
    if (s.ok()) {
        PendingWrite& p = pending_.emplace_back();
        p.collection = &coll;
        p.keyBytes = static_cast<uint32_t>(key.size());
        if (keepsOplogEntry) {
            p.key.assign(key);
            p.op = logOp;
        } else if (coll.isLockCollection()) [[unlikely]] {
            p.key.assign(key);  // to wake its waiters
        }
    }
    return s;
}

namespace {
/// A write as currentOp shows it, by Session::WriteOp (put, insert,
/// update, remove): a put is an upsert.
constexpr CurOpType kWriteType[] = {CurOpType::kUpdate, CurOpType::kInsert, CurOpType::kUpdate,
                                    CurOpType::kRemove};
constexpr std::string_view kWriteCommand[] = {"put", "insert", "update", "delete"};
}  // namespace

Status Session::write(WriteOp op, std::string_view ns, std::string_view key,
                      std::string_view value, const WriteOptions* options) {
    static_assert(int(WriteOp::kPut) == 0 && int(WriteOp::kInsert) == 1 &&
                  int(WriteOp::kUpdate) == 2 && int(WriteOp::kRemove) == 3);
    CurOp::Description d(kWriteType[int(op)], kWriteCommand[int(op)], ns, key);
    d.hasValue = op != WriteOp::kRemove;
    d.value = value;
    OpScope scope(*this, d);
    if (options) [[unlikely]] {
        if (options->fence)
            return scope.finish(fencedWrite(op, ns, key, value, *options));
    }
    if (Status s = checkKey(key); !s.ok())
        return scope.finish(std::move(s));
    if (op != WriteOp::kRemove) {
        if (Status s = checkValue(value); !s.ok())
            return scope.finish(std::move(s));
    }
    OperationContext opCtx(*this);
    if (Status s = opCtx.lockCollection(ns, LockMode::kIX); !s.ok())
        return scope.finish(std::move(s));
    Collection& coll = opCtx.collection();
    if (coll.ttl() || (options && options->expireAtMs)) [[unlikely]] {
        if (Status s = stampTtlValue(op, coll, options, &value); !s.ok())
            return scope.finish(std::move(s));
    }
    return scope.finish(writeLocked(op, coll, key, value));
}

Status Session::stampTtlValue(WriteOp op, const Collection& coll, const WriteOptions* options,
                              std::string_view* value) {
    const std::optional<int64_t> expireAt = options ? options->expireAtMs : std::nullopt;
    if (expireAt) {
        if (!coll.ttl())
            return Status::InvalidArgument(fmt::format(
                "an explicit expiry needs a TTL collection; {} is not one (create it with "
                "expireAfterSeconds)",
                coll.ns().ns()));
        if (op == WriteOp::kRemove)
            return Status::InvalidArgument(
                "a remove takes no expiry: expireAtMs applies to a value written");
        if (*expireAt <= 0)
            return Status::InvalidArgument(fmt::format(
                "expireAtMs {} is not a time: give milliseconds since the Unix epoch (above 0)",
                *expireAt));
        if (applyingOplog_)
            return Status::InvalidArgument(
                "a session applying the oplog writes stored values as given: it takes no expiry");
    }
    // Replay, replicas and checkpoint loads write the stored form, header
    // included, as it was logged.
    if (op == WriteOp::kRemove || applyingOplog_)
        return Status::OK();
    const TtlStamp stamp = expireAt ? TtlStamp{TtlStamp::Kind::kExpiresAt, *expireAt}
                                    : TtlStamp{TtlStamp::Kind::kWrittenAt, engine_.wallClockMs()};
    encodeTtlValue(stamp, *value, &ttlValue_);
    *value = ttlValue_;
    return Status::OK();
}

Status Session::writeLocked(WriteOp op, Collection& coll, std::string_view key,
                            std::string_view value) {
    if (engine_.secondary() && clientOp()) [[unlikely]]
        return secondaryWriteRefused();
    if (coll.isProfile() && monitored_.load(std::memory_order_relaxed) && !applyingOplog_)
        [[unlikely]]
        return Status::IllegalOperation(fmt::format(
            "cannot write to '{}': the profiler writes it (read it, drop it, or set profiling "
            "level 0)",
            printable(coll.ns().ns())));
    if (CappedState* capped = coll.capped()) [[unlikely]] {
        if (!applyingOplog_)
            return writeCapped(op, coll, key, value);
        capped->markStale();
    }
    auto& txns = engine_.txns_;
    if (explicit_) {
        auto pin = engine_.epochs_.pin();
        Status s = applyWrite(op, coll, key, value);
        pin.release();
        if (s.code() == StatusCode::kWriteConflict) {
            txns.noteWriteConflict();
            curOp_.add(curOp_.writeConflicts);
            lastOpWriteConflicts_ = 1;
            abortTxn();
            tally_.add(OpTally::kTxnAborted);
            endExplicit();
            return Status::WriteConflict(
                s.message() + "; the transaction was aborted: retry it (withTransaction does)");
        }
        if (s.ok())
            curOp_.add(op == WriteOp::kRemove ? curOp_.keysDeleted : curOp_.keysInserted);
        return s;
    }
    Status s = implicitWrite([&] { return applyWrite(op, coll, key, value); });
    if (s.ok())
        curOp_.add(op == WriteOp::kRemove ? curOp_.keysDeleted : curOp_.keysInserted);
    return s;
}

StatusWith<std::unique_ptr<Cursor>> Session::openCursor(std::string_view ns) {
    OpScope scope(*this, {CurOpType::kQuery, "openCursor", ns});
    if (explicit_ && txn_.prepared()) [[unlikely]]
        return scope.finish(preparedReadRefused());
    OperationContext op(*this);
    if (Status s = op.lockCollection(ns, LockMode::kIS); !s.ok())
        return scope.finish(std::move(s));
    std::optional<mvcc::BeginOptions> own;
    if (!explicit_) {  // after the lock wait, as get and scan do
        auto begin = implicitReadBegin();
        if (!begin.ok())
            return scope.finish(begin.status());
        own = begin.value();
        own->unregistered = false;  // held while the cursor lives
    }
    std::unique_ptr<Cursor> cursor(new Cursor(*this, op.sharedCollection(), op.takeLocks()));
    if (own) {
        if (Status s = cursor->beginOwnTxn(*own); !s.ok())
            return scope.finish(std::move(s));
    }
    return cursor;
}

SessionInfo Session::info() const {
    SessionInfo out;
    out.id = id_;
    out.inTransaction = explicit_;
    if (explicit_) {
        out.txnId = txn_.id();
        out.readTs = txn_.readTs();
        out.commitTs = txn_.prepared() ? mvcc::kNoTimestamp : txn_.commitTs();
        out.prepared = txn_.prepared();
        out.prepareTs = txn_.prepareTs();
        out.writes = txn_.writes().size();
    }
    return out;
}

}  // namespace mvkv::engine
