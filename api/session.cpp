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
    return readTs != kNoTimestamp ? readTs : impl_->allDurableAtBegin;
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
uint64_t Session::lastOpWriteConflicts() const {
    return impl_->session->lastOpWriteConflicts();
}
uint64_t Session::id() const {
    return impl_->session->id();
}

}  // namespace mvkv
