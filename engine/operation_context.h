// OperationContext: what one Session operation holds while it runs — its
// lock deadline, its ticket and intent locks, and the collection it resolved.
//
// lockCollection() takes the ticket and the locks top-down through the lock
// manager (Global, Database, Collection; reads IS, writes IX) and then looks
// the collection up, so a concurrent drop (X on the collection) can neither
// run under the operation nor leave it holding a dropped collection. Outside a
// transaction the locks are the operation's and are released when the
// context is destroyed; inside one they belong to the transaction and are
// kept until it ends.
//
// Thread safety: lives on the stack of the session's thread.
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "engine/collection.h"
#include "lockmgr/raii_locks.h"
#include "util/deadline.h"
#include "util/status.h"

namespace mvkv::engine {

class Session;

class OperationContext {
  public:
    explicit OperationContext(Session& session);
    OperationContext(const OperationContext&) = delete;
    OperationContext& operator=(const OperationContext&) = delete;

    /// LockTimeout / Interrupted / Deadlock from the lock manager,
    /// InvalidArgument for a bad name, NamespaceNotFound when absent.
    Status lockCollection(std::string_view ns, lockmgr::LockMode mode);

    /// Valid after lockCollection() succeeded, for the operation's life.
    Collection& collection() const { return **shared_; }
    const std::shared_ptr<Collection>& sharedCollection() const { return *shared_; }
    /// The operation's own locks (none inside a transaction), handed to a
    /// cursor that outlives the operation.
    std::optional<lockmgr::AutoGetCollection> takeLocks() { return std::move(locks_); }

    const Deadline& lockDeadline() const { return lockDeadline_; }
    /// The mode lockCollection() was asked for.
    lockmgr::LockMode mode() const { return mode_; }
    /// Outside a transaction: lets the operation's locks (and ticket) go, so
    /// that lockCollection() can take them again after a yield.
    void releaseLocks() {
        locks_.reset();
        shared_ = nullptr;
    }

  private:
    Session& session_;
    Deadline lockDeadline_;
    std::optional<lockmgr::AutoGetCollection> locks_;
    lockmgr::LockMode mode_ = lockmgr::LockMode::kNone;
    // Points into the session's collection cache, which keeps the collection
    // alive: an operation costs no reference-count traffic on a shared line.
    const std::shared_ptr<Collection>* shared_ = nullptr;
};

}  // namespace mvkv::engine
