// mvkv::Session over engine::Session (include/mvkv/session.h).
#include "api/convert.h"
#include "api/impl.h"

namespace mvkv {

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Session::~Session() {
    Engine::Impl* owner = impl_->owner;
    impl_->session.reset();  // aborts a running transaction
    owner->sessions.fetch_sub(1, std::memory_order_acq_rel);
}

Status Session::createCollection(std::string_view ns) {
    return impl_->session->createCollection(ns);
}
Status Session::createCollection(std::string_view ns, const CollectionOptions& options) {
    return impl_->session->createCollection(ns, api::toEngine(options));
}
Status Session::setExpireAfterSeconds(std::string_view ns, int64_t seconds) {
    return impl_->session->setExpireAfterSeconds(ns, seconds);
}
Status Session::dropCollection(std::string_view ns) {
    return impl_->session->dropCollection(ns);
}
Status Session::dropDatabase(std::string_view db) {
    return impl_->session->dropDatabase(db);
}

Status Session::begin(const TxnOptions& options) {
    // Before the snapshot is taken: every commit at or below it finished
    // first, so the snapshot sees it.
    const Timestamp allDurable =
        options.readTs == kNoTimestamp && options.readConcern == ReadConcern::kLocal
            ? impl_->session->engine().transactions().allDurable()
            : kNoTimestamp;
    Status s = impl_->session->begin(api::toEngine(options));
    if (s.ok())  // a refused begin leaves the running transaction's point alone
        impl_->allDurableAtBegin = allDurable;
    return s;
}

Timestamp Session::readTimestamp() const {
    if (!impl_->session->inTransaction())
        return kNoTimestamp;
    const Timestamp readTs = impl_->session->transactionReadTs();
    if (readTs != kNoTimestamp)
        return readTs;
    // An engine with an oplog: the snapshot's read point, exactly.
    const Timestamp bound = impl_->session->transactionReadBound();
    return bound != kMaxTimestamp ? bound : impl_->allDurableAtBegin;
}

Status Session::timestampTransaction(Timestamp commitTs) {
    return impl_->session->timestampTransaction(commitTs);
}

StatusWith<Timestamp> Session::commit(std::optional<Timestamp> commitTs) {
    const bool wrote = impl_->session->transactionWrote();
    if (Status s = impl_->session->commit(commitTs); !s.ok())
        return s;
    return wrote ? impl_->session->lastCommitTs() : kNoTimestamp;
}

StatusWith<Timestamp> Session::commit(const WriteConcern& wc, std::optional<Timestamp> commitTs) {
    const bool wrote = impl_->session->transactionWrote();
    Status s = impl_->session->commit(api::toEngine(wc), commitTs);
    if (!s.ok())
        return s;  // WriteConcernTimeout included: its message says it committed
    return wrote ? impl_->session->lastCommitTs() : kNoTimestamp;
}

StatusWith<Timestamp> Session::commit(Timestamp commitTs, Timestamp durableTs) {
    if (Status s = impl_->session->commit(commitTs, durableTs); !s.ok())
        return s;
    return commitTs;
}

StatusWith<Timestamp> Session::commit(Timestamp commitTs, Timestamp durableTs,
                                     const WriteConcern& wc) {
    const engine::WriteConcern concern = api::toEngine(wc);
    engine::Engine& e = impl_->session->engine();
    if (Status s = e.checkWriteConcern(concern); !s.ok())
        return s;
    const bool wrote = impl_->session->transactionWrote();
    if (Status s = impl_->session->commit(commitTs, durableTs); !s.ok())
        return s;
    if (wrote)  // a read-only transaction waits for nothing, as commit(wc)
        if (Status s = e.awaitWriteConcern(impl_->session->lastCommitTs(), concern); !s.ok())
            return s;
    return commitTs;
}

Status Session::abort() {
    return impl_->session->abort();
}
bool Session::inTransaction() const {
    return impl_->session->inTransaction();
}

Status Session::withTransaction(const std::function<Status(Session&)>& body,
                                const TxnOptions& options) {
    // The engine begins each attempt itself: its all_durable point is not
    // known here (readTimestamp() says kNoTimestamp then).
    return impl_->session->withTransaction(
        [&](engine::Session&) {
            impl_->allDurableAtBegin = kNoTimestamp;
            return body(*this);
        },
        api::toEngine(options));
}

Timestamp Session::lastCommitTimestamp() const {
    return impl_->session->lastCommitTs();
}

Status Session::prepare(Timestamp prepareTs) {
    return impl_->session->prepare(prepareTs);
}
bool Session::prepared() const {
    return impl_->session->prepared();
}

StatusWith<std::string> Session::get(std::string_view ns, std::string_view key) {
    return impl_->session->get(ns, key);
}
Status Session::get(std::string_view ns, std::string_view key, std::string* value) {
    return impl_->session->get(ns, key, value);
}
Status Session::get(std::string_view ns, std::string_view key, std::string* value,
                    std::optional<int64_t>* expiresAtMs) {
    return impl_->session->getWithExpiry(ns, key, value, expiresAtMs);
}
Status Session::put(std::string_view ns, std::string_view key, std::string_view value) {
    return impl_->session->put(ns, key, value);
}
Status Session::insert(std::string_view ns, std::string_view key, std::string_view value) {
    return impl_->session->insert(ns, key, value);
}
Status Session::update(std::string_view ns, std::string_view key, std::string_view value) {
    return impl_->session->update(ns, key, value);
}
Status Session::remove(std::string_view ns, std::string_view key) {
    return impl_->session->remove(ns, key);
}

Status Session::put(std::string_view ns, std::string_view key, std::string_view value,
                    const WriteOptions& options) {
    return impl_->session->put(ns, key, value, api::toEngine(options));
}
Status Session::insert(std::string_view ns, std::string_view key, std::string_view value,
                       const WriteOptions& options) {
    return impl_->session->insert(ns, key, value, api::toEngine(options));
}
Status Session::update(std::string_view ns, std::string_view key, std::string_view value,
                       const WriteOptions& options) {
    return impl_->session->update(ns, key, value, api::toEngine(options));
}
Status Session::remove(std::string_view ns, std::string_view key, const WriteOptions& options) {
    return impl_->session->remove(ns, key, api::toEngine(options));
}

Status Session::scan(std::string_view ns, const ScanOptions& options,
                     const std::function<bool(std::string_view, std::string_view)>& visit) {
    return impl_->session->scan(ns, api::toEngine(options), visit);
}
StatusWith<uint64_t> Session::count(std::string_view ns, const KeyRange& range) {
    return impl_->session->count(ns, api::toEngine(range));
}
StatusWith<uint64_t> Session::removeRange(std::string_view ns, const KeyRange& range) {
    return impl_->session->removeRange(ns, api::toEngine(range));
}

StatusWith<std::vector<KeyVersion>> Session::keyHistory(std::string_view ns,
                                                        std::string_view key) {
    auto versions = impl_->session->keyHistory(ns, key);
    if (!versions.ok())
        return versions.status();
    std::vector<KeyVersion> out;
    out.reserve(versions.value().size());
    for (engine::KeyVersion& v : versions.value()) {
        KeyVersion p;
        p.value = std::move(v.value);
        p.tombstone = v.tombstone;
        p.txnId = v.txnId;
        p.startTs = v.startTs;
        p.stopTs = v.stopTs;
        p.state = api::fromEngine(v.state);
        p.where = v.where == engine::KeyVersion::Where::kChain ? KeyVersion::Where::kChain
                                                               : KeyVersion::Where::kHistoryStore;
        out.push_back(std::move(p));
    }
    return out;
}

StatusWith<std::unique_ptr<Cursor>> Session::openCursor(std::string_view ns) {
    auto opened = impl_->session->openCursor(ns);
    if (!opened.ok())
        return opened.status();
    auto impl = std::make_unique<Cursor::Impl>();
    impl->cursor = std::move(opened).value();
    return std::make_unique<Cursor>(std::move(impl));
}

void Session::interrupt() {
    impl_->session->interrupt();
}
void Session::setLockTimeout(std::optional<std::chrono::milliseconds> timeout) {
    impl_->session->setLockTimeout(timeout);
}
void Session::setRetryTimeout(std::chrono::milliseconds timeout) {
    impl_->session->setRetryTimeout(timeout);
}
void Session::setPrepareConflictWait(bool wait) {
    impl_->session->setPrepareConflictWait(wait);
}
void Session::setReadConcern(ReadConcern rc) {
    impl_->session->setReadConcern(api::toEngine(rc));
}
ReadConcern Session::readConcern() const {
    return api::fromEngine(impl_->session->readConcern());
}
void Session::setName(std::string name) {
    impl_->session->setName(std::move(name));
}
uint64_t Session::reserveOpid() {
    return impl_->session->reserveOpid();
}
void Session::dropReservedOpid() {
    impl_->session->dropReservedOpid();
}
uint64_t Session::lockerId() const {
    return impl_->session->locker().id();
}
SessionInfo Session::info() const {
    const engine::SessionInfo i = impl_->session->info();
    SessionInfo out;
    out.id = i.id;
    out.inTransaction = i.inTransaction;
    out.txnId = i.txnId;
    out.readTs = i.readTs;
    out.commitTs = i.commitTs;
    out.prepared = i.prepared;
    out.prepareTs = i.prepareTs;
    out.writes = i.writes;
    return out;
}

uint64_t Session::lastOpWriteConflicts() const {
    return impl_->session->lastOpWriteConflicts();
}
uint64_t Session::id() const {
    return impl_->session->id();
}

}  // namespace mvkv
