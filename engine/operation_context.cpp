#include "engine/operation_context.h"

#include <fmt/format.h>

#include "engine/engine.h"
#include "engine/session.h"
#include "util/printable.h"

namespace mvkv::engine {

OperationContext::OperationContext(Session& session)
    : session_(session), lockDeadline_(session.lockDeadline()) {}

Status OperationContext::lockCollection(std::string_view ns, lockmgr::LockMode mode) {
    auto parsed = Namespace::parse(ns);
    if (!parsed.ok())
        return parsed.status();
    if (session_.inTransaction()) {
        if (Status s = session_.lockForTransaction(ns, mode, lockDeadline_); !s.ok())
            return s;
    } else {
        locks_.emplace(session_.locker_, ns, mode, lockDeadline_);
        if (!locks_->status().ok())
            return locks_->status();
    }
    collection_ = session_.engine_.catalog_.lookup(ns);
    if (!collection_)
        return Status::NamespaceNotFound(
            fmt::format("collection {} does not exist; create it first", printable(ns)));
    if (session_.inTransaction())
        session_.keepForTransaction(collection_);
    return Status::OK();
}

}  // namespace mvkv::engine
