#include "lockmgr/raii_locks.h"

#include <fmt/format.h>

namespace mvkv::lockmgr {

StatusWith<std::pair<std::string_view, std::string_view>> splitNamespace(std::string_view ns) {
    size_t dot = ns.find('.');
    if (dot == std::string_view::npos || dot == 0 || dot + 1 == ns.size()) {
        return Status::InvalidArgument(fmt::format(
            "invalid namespace '{}': expected 'db.collection' with both parts non-empty", ns));
    }
    return std::pair{ns.substr(0, dot), ns.substr(dot + 1)};
}

ResourceLock::ResourceLock(Locker& locker, ResourceId id, LockMode mode, Deadline deadline,
                           std::string_view name)
    : id_(id) {
    status_ = locker.lock(id, mode, deadline, name);
    if (status_.ok()) locker_ = &locker;
}

ResourceLock& ResourceLock::operator=(ResourceLock&& other) noexcept {
    if (this != &other) {
        release();
        locker_ = std::exchange(other.locker_, nullptr);
        id_ = other.id_;
        status_ = std::move(other.status_);
    }
    return *this;
}

void ResourceLock::release() {
    if (locker_ == nullptr) return;
    // Cannot fail: we hold the lock, and a pending request never outlives
    // the constructor that placed it.
    locker_->unlock(id_).ignore();
    locker_ = nullptr;
}

DBLock::DBLock(Locker& locker, std::string_view db, LockMode mode, Deadline deadline) {
    if (db.empty() || db.find('.') != std::string_view::npos) {
        status_ = Status::InvalidArgument(
            fmt::format("invalid database name '{}': it must be non-empty and have no '.'", db));
        return;
    }
    global_.emplace(locker, intentModeFor(mode), deadline);
    if (!global_->isLocked()) {
        status_ = global_->status();
        global_.reset();
        return;
    }
    db_ = ResourceLock(locker, ResourceId::database(db), mode, deadline, db);
    status_ = db_.status();
    if (!status_.ok()) global_.reset();
}

CollectionLock::CollectionLock(Locker& locker, std::string_view ns, LockMode mode,
                               Deadline deadline) {
    auto parts = splitNamespace(ns);
    if (!parts.ok()) {
        lock_ = ResourceLock(parts.status());
        return;
    }
    LockMode needed = intentModeFor(mode);
    if (!locker.isLockHeldForMode(ResourceId::database(parts.value().first), needed)) {
        lock_ = ResourceLock(Status::InvalidArgument(fmt::format(
            "CollectionLock on '{}' in {} needs the database '{}' locked in {} first; use "
            "AutoGetCollection",
            ns, modeName(mode), parts.value().first, modeName(needed))));
        return;
    }
    lock_ = ResourceLock(locker, ResourceId::collection(ns), mode, deadline, ns);
}

AutoGetCollection::AutoGetCollection(Locker& locker, std::string_view ns, LockMode mode,
                                     Deadline deadline) {
    auto parts = splitNamespace(ns);
    if (!parts.ok()) {
        status_ = parts.status();
        return;
    }
    db_.emplace(locker, parts.value().first, intentModeFor(mode), deadline);
    if (!db_->isLocked()) {
        status_ = db_->status();
        db_.reset();
        return;
    }
    // The database lock was just taken in the right mode: no need for
    // CollectionLock's check.
    coll_ = ResourceLock(locker, ResourceId::collection(ns), mode, deadline, ns);
    status_ = coll_.status();
    if (!status_.ok()) db_.reset();
}

}  // namespace mvkv::lockmgr
