// mvkv::DocumentLocks over engine::DocumentLocks (include/mvkv/document_locks.h).
#include "api/impl.h"

namespace mvkv {

namespace {

DocumentLock toPublic(engine::LockInfo l) {
    DocumentLock out;
    out.ns = std::move(l.ns);
    out.key = std::move(l.key);
    out.owner = std::move(l.entry.owner);
    out.token = l.entry.token;
    out.acquiredAtMs = l.entry.acquiredAtMs;
    out.expiresAtMs = l.entry.expiresAtMs;
    out.remainingMs = l.remainingMs;
    out.expired = l.expired;
    out.tookOver = l.tookOver;
    return out;
}

StatusWith<DocumentLock> toPublic(StatusWith<engine::LockInfo> l) {
    if (!l.ok())
        return l.status();
    return toPublic(std::move(l).value());
}

}  // namespace

DocumentLocks::DocumentLocks(Session& session)
    : impl_(std::make_unique<Impl>(*session.impl_->session)) {}
DocumentLocks::~DocumentLocks() = default;

StatusWith<DocumentLock> DocumentLocks::acquire(std::string_view ns, std::string_view key,
                                                const AcquireOptions& options) {
    engine::AcquireOptions o;
    o.owner = options.owner;
    o.ttl = options.ttl;
    o.wait = options.wait;
    return toPublic(impl_->locks.acquire(ns, key, o));
}
Status DocumentLocks::release(std::string_view ns, std::string_view key, std::string_view owner) {
    return impl_->locks.release(ns, key, owner);
}
StatusWith<uint64_t> DocumentLocks::releaseAll(std::string_view owner) {
    return impl_->locks.releaseAll(owner);
}
StatusWith<DocumentLock> DocumentLocks::refresh(std::string_view ns, std::string_view key,
                                                std::string_view owner,
                                                std::chrono::milliseconds ttl) {
    return toPublic(impl_->locks.refresh(ns, key, owner, ttl));
}
StatusWith<std::vector<DocumentLock>> DocumentLocks::list(std::string_view ns) {
    auto all = impl_->locks.list(ns);
    if (!all.ok())
        return all.status();
    std::vector<DocumentLock> out;
    out.reserve(all.value().size());
    for (engine::LockInfo& l : all.value())
        out.push_back(toPublic(std::move(l)));
    return out;
}

}  // namespace mvkv
