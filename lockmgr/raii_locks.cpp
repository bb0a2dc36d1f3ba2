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

StatusWith<LockNamespace> LockNamespace::parse(std::string_view ns) {
    auto parts = splitNamespace(ns);
    if (!parts.ok())
        return parts.status();
    LockNamespace out;
    out.ns_ = std::string(ns);
    out.dot_ = parts.value().first.size();
    out.dbId_ = ResourceId::database(parts.value().first);
    out.collId_ = ResourceId::collection(ns);
    return out;
}

Status HeldLock::acquireSlow(Locker& locker, ResourceId id, LockMode mode,
                            const Deadline& deadline, std::string_view name) {
    LockRequest* request = nullptr;
    Status s = locker.lockAndGetSlow(id, mode, deadline, name, request);
    if (s.ok())
        set(locker, request, id);
    return s;
}

DBLock::DBLock(Locker& locker, std::string_view db, LockMode mode, const Deadline& deadline) {
    if (db.empty() || db.find('.') != std::string_view::npos) {
        status_ = Status::InvalidArgument(
            fmt::format("invalid database name '{}': it must be non-empty and have no '.'", db));
        return;
    }
    if (!global_.acquire(locker, ResourceId::global(), intentModeFor(mode), deadline, "global")
             .ok()) {
        status_ = global_.status();
        return;
    }
    if (!db_.acquire(locker, ResourceId::database(db), mode, deadline, db).ok()) {
        status_ = db_.status();
        global_.release();
    }
}

CollectionLock::CollectionLock(Locker& locker, std::string_view ns, LockMode mode,
                               const Deadline& deadline) {
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
    lock_.acquire(locker, ResourceId::collection(ns), mode, deadline, ns).ignore();
}

AutoGetCollection::AutoGetCollection(Locker& locker, std::string_view ns, LockMode mode,
                                     const Deadline& deadline) {
    // The locker's memo compares the whole string: a hit is exactly what
    // splitting and hashing would give.
    ResourceId dbId;
    ResourceId collId;
    size_t dot;
    if (const NamespaceMemo::Ids* hit = locker.nsMemo_.find(ns)) [[likely]] {
        dbId = hit->db;
        collId = hit->coll;
        dot = hit->dot;
    } else if (!resolve(locker, ns, dbId, collId, dot)) {
        return;  // status_ says why
    }
    if (tryAcquireFast(locker, dbId, collId, mode, deadline)) [[likely]]
        return;
    acquire(locker, ns, ns.substr(0, dot), dbId, collId, mode, deadline);
}

bool AutoGetCollection::resolve(Locker& locker, std::string_view ns, ResourceId& dbId,
                                ResourceId& collId, size_t& dot) {
    auto parts = splitNamespace(ns);
    if (!parts.ok()) {
        status_ = parts.status();
        return false;
    }
    NamespaceMemo::Ids ids;
    ids.db = dbId = ResourceId::database(parts.value().first);
    ids.coll = collId = ResourceId::collection(ns);
    dot = parts.value().first.size();
    ids.dot = uint32_t(dot);
    locker.nsMemo_.remember(ns, ids);
    return true;
}

void AutoGetCollection::acquireNs(Locker& locker, const LockNamespace& ns, LockMode mode,
                                  const Deadline& deadline) {
    if (!ns.dbId().isValid()) {
        status_ = Status::InvalidArgument("AutoGetCollection on an empty LockNamespace");
        return;
    }
    acquire(locker, ns.ns(), ns.db(), ns.dbId(), ns.collectionId(), mode, deadline);
}

void AutoGetCollection::acquire(Locker& locker, std::string_view ns, std::string_view db,
                                ResourceId dbId, ResourceId collId, LockMode mode,
                                const Deadline& deadline) {
    LockMode intent = intentModeFor(mode);
    if (Status s = global_.acquire(locker, ResourceId::global(), intent, deadline, "global");
        !s.ok()) {
        status_ = std::move(s);
        return;
    }
    if (Status s = db_.acquire(locker, dbId, intent, deadline, db); !s.ok()) {
        status_ = std::move(s);
        global_.release();
        return;
    }
    if (Status s = coll_.acquire(locker, collId, mode, deadline, ns); !s.ok()) {
        status_ = std::move(s);
        db_.release();
        global_.release();
    }
}

}  // namespace mvkv::lockmgr
