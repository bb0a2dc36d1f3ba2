// Session::fencedWrite: a write made only while a document lock holds for
// the writer (docs/document-locks.md, "Fencing").
#include <fmt/format.h>

#include "engine/document_lock_entry.h"
#include "engine/document_locks.h"
#include "engine/engine.h"
#include "engine/op_report.h"
#include "engine/session.h"
#include "util/printable.h"

namespace mvkv::engine {

Status Session::checkFence(std::string_view ns, std::string_view key, const WriteFence& fence,
                           LockEntry* lock) {
    if (!engine_.catalog_.lookup(ns))
        return Status::NamespaceNotFound(fmt::format("collection {} does not exist", ns));
    const std::string lockNs = lockCollectionName(ns);
    const std::string where = fmt::format("{} key '{}'", ns, printable(key));
    const std::string lost =
        fmt::format("the lock of owner {} with token {} on {} no longer holds: ", fence.owner,
                    fence.token, where);
    auto e = readLockEntry(*this, lockNs, key);
    if (!e.ok())
        return e.status();
    if (!e.value())
        return Status::LockLost(lost +
                                "the key is not locked (the lock was released, or expired and "
                                "was removed); nothing was written");
    *lock = *std::move(e).value();
    if (lock->owner != fence.owner)
        return Status::LockLost(lost + fmt::format("another owner holds it now (token {}); "
                                                   "nothing was written",
                                                   lock->token));
    if (lock->token != fence.token)
        return Status::LockLost(
            lost + fmt::format("a {} acquisition by this owner holds it now (token {}); nothing "
                               "was written",
                               lock->token > fence.token ? "later" : "different", lock->token));
    const int64_t now = engine_.wallClockMs();
    if (lock->expiresAtMs <= now)
        return Status::LockLost(lost +
                                fmt::format("it expired at {} ({} ms ago); nothing was written",
                                            isoDateMs(lock->expiresAtMs), now - lock->expiresAtMs));
    return Status::OK();
}

Status Session::fencedWrite(WriteOp op, std::string_view ns, std::string_view key,
                            std::string_view value, const WriteOptions& options) {
    const WriteFence& fence = *options.fence;
    if (Status s = checkOwner(fence.owner); !s.ok())
        return s;
    if (fence.token == 0)
        return Status::InvalidArgument(
            "fencing token 0 was never handed out (tokens start at 1); give the token your "
            "acquisition returned");
    WriteOptions rest = options;
    rest.fence.reset();
    const WriteOptions* restOptions = rest.expireAtMs ? &rest : nullptr;
    auto body = [&]() -> Status {
        LockEntry lock;
        if (Status s = checkFence(ns, key, fence, &lock); !s.ok())
            return s;
        if (Status s = write(op, ns, key, value, restOptions); !s.ok())
            return s;
        // Unchanged, but a write: a take-over or release of this lock that
        // commits meanwhile now conflicts with us (snapshot isolation alone
        // would let both commit).
        return put(lockCollectionName(ns), key, encodeLockEntry(lock), lockEntryWriteOptions(lock));
    };
    // Inside a transaction the check joins it; a failed check writes nothing.
    Status s = explicit_ ? body() : withTransaction([&](Session&) { return body(); });
    if (s.code() == StatusCode::kLockLost)
        engine_.docLockState().counters.add(engine_.docLockState().counters.lockLost);
    return s;
}

}  // namespace mvkv::engine
