#include "engine/operation_context.h"

#include <fmt/format.h>

#include "engine/engine.h"
#include "engine/session.h"
#include "util/printable.h"

namespace mvkv::engine {

OperationContext::OperationContext(Session& session)
    : session_(session), lockDeadline_(session.lockDeadline()) {}

Status OperationContext::lockCollection(std::string_view ns, lockmgr::LockMode mode) {
    mode_ = mode;
    // The session's cache gives the collection and its pre-hashed lock names
    // without parsing the namespace or touching the catalog. It is only a
    // hint until the locks are held: then a collection that is not dropped
    // is the one `ns` names (drop and create need X on it).
    session_.dropStaleCache();
    const std::shared_ptr<Collection>* cached = session_.cachedCollection(ns);
    lockmgr::LockNamespace parsedLockNs;
    const lockmgr::LockNamespace* lockNs = nullptr;
    if (cached) {
        lockNs = &(*cached)->lockNs();
    } else {
        auto parsed = Namespace::parse(ns);
        if (!parsed.ok())
            return parsed.status();
        auto lns = lockmgr::LockNamespace::parse(ns);
        if (!lns.ok())
            return lns.status();
        parsedLockNs = std::move(lns).value();
        lockNs = &parsedLockNs;
    }
    if (session_.inTransaction()) {
        if (Status s = session_.lockForTransaction(*lockNs, mode, lockDeadline_); !s.ok())
            return s;
    } else {
        locks_.emplace(*session_.locker_, *lockNs, mode, lockDeadline_);
        if (!locks_->status().ok())
            return locks_->status();
    }
    // A kill that came before the locks (granted at once, with no wait to
    // notice it) stops the operation here, before it reads or writes.
    if (Status s = session_.checkInterrupted(); !s.ok()) [[unlikely]]
        return s;
    if (cached && !(*cached)->dropped()) {
        shared_ = cached;
    } else {
        std::shared_ptr<Collection> fresh = session_.engine_.catalog_.lookup(ns);
        if (!fresh) {
            session_.forgetCollection(ns);
            return Status::NamespaceNotFound(
                fmt::format("collection {} does not exist; create it first", printable(ns)));
        }
        shared_ = &session_.cacheCollection(ns, std::move(fresh));
    }
    if (session_.inTransaction())
        session_.keepForTransaction(*shared_);
    return Status::OK();
}

}  // namespace mvkv::engine
