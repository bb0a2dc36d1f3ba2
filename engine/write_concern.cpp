// Write and read concerns on the engine and its sessions (docs/replication.md):
// what a standalone engine does itself, and what it hands to its replica set.
#include "engine/write_concern.h"

#include <fmt/format.h>

#include "engine/engine.h"
#include "engine/implicit_write.h"
#include "engine/session.h"

namespace mvkv::engine {

std::string WriteConcern::describe() const {
    const std::string members = majority ? std::string("\"majority\"") : std::to_string(w);
    if (wtimeout)
        return fmt::format("{{w: {}, wtimeout: {}}}", members, wtimeout->count());
    return fmt::format("{{w: {}}}", members);
}

const char* readConcernName(ReadConcern rc) {
    switch (rc) {
        case ReadConcern::kLocal:
            return "local";
        case ReadConcern::kSnapshot:
            return "snapshot";
        case ReadConcern::kMajority:
            return "majority";
    }
    return "local";
}

void Engine::setReplicationCoordinator(std::shared_ptr<ReplicationCoordinator> coordinator) {
    std::lock_guard lock(replMutex_);
    repl_ = std::move(coordinator);
}

std::shared_ptr<ReplicationCoordinator> Engine::replicationCoordinator() const {
    std::lock_guard lock(replMutex_);
    return repl_;
}

Status Engine::checkWriteConcern(const WriteConcern& wc) const {
    if (!wc.majority && wc.w < 1)
        return Status::InvalidArgument(
            fmt::format("write concern {} asks for fewer than one member; use w >= 1",
                        wc.describe()));
    if (wc.wtimeout && wc.wtimeout->count() < 0)
        return Status::InvalidArgument("wtimeout must be >= 0 ms");
    if (auto coordinator = replicationCoordinator())
        return coordinator->checkSatisfiable(wc);
    if (!wc.majority && wc.w > 1)
        return Status::InvalidArgument(fmt::format(
            "write concern {} needs {} members but this engine is standalone (a set of one); "
            "use w=1 or w=majority, or start a replica set",
            wc.describe(), wc.w));
    return Status::OK();
}

Status Engine::awaitWriteConcern(mvcc::Timestamp ts, const WriteConcern& wc) {
    if (ts == mvcc::kNoTimestamp)
        return Status::OK();
    if (auto coordinator = replicationCoordinator())
        return coordinator->awaitReplication(ts, wc);
    if (!wc.majority)
        return Status::OK();  // w: 1, checked before the commit
    // Standalone: a majority of one is the engine's own durable point, which
    // a logged commit reaches once the holes below it close. Without an
    // oplog there is nothing to wait on: the commit is all the engine has.
    if (oplog() == nullptr)
        return Status::OK();
    const auto deadline = wc.wtimeout ? std::chrono::steady_clock::now() + *wc.wtimeout
                                      : std::chrono::steady_clock::now() + std::chrono::hours(24);
    const mvcc::Timestamp reached = waitMajorityCommitAfter(ts - 1, deadline);
    if (reached >= ts)
        return Status::OK();
    return Status(StatusCode::kWriteConcernTimeout,
                  fmt::format("the write IS committed at timestamp {}, but write concern {} was "
                              "not met in time: the engine's durable point is {}",
                              ts, wc.describe(), reached));
}

Status Session::readConcernTs(const TxnOptions& options, mvcc::Timestamp* readTs) const {
    switch (options.readConcern) {
        case ReadConcern::kLocal:
            return Status::OK();
        case ReadConcern::kSnapshot:
            if (*readTs == mvcc::kNoTimestamp)
                *readTs = engine_.txns_.allDurable();
            return Status::OK();
        case ReadConcern::kMajority: {
            if (*readTs != mvcc::kNoTimestamp)
                return Status::InvalidArgument(
                    "read concern majority reads at the majority commit point; give no read "
                    "timestamp with it (use read concern snapshot to read at a timestamp)");
            const mvcc::Timestamp point = engine_.majorityCommitTs();
            if (point == mvcc::kNoTimestamp)
                return Status::Busy(
                    "no timestamp is majority-committed yet, so a majority read has no snapshot; "
                    "retry once a majority of the members applied a write");
            *readTs = point;
            return Status::OK();
        }
    }
    return Status::InvalidArgument("unknown read concern");
}

StatusWith<mvcc::BeginOptions> Session::implicitReadBegin() const {
    if (readConcern_ == ReadConcern::kLocal) {
        mvcc::BeginOptions begin = kImplicitBegin;
        begin.ownCommitTs = lastCommitTs_;  // read-your-writes above the read point
        return begin;
    }
    TxnOptions o;
    o.readConcern = readConcern_;
    mvcc::Timestamp readTs = mvcc::kNoTimestamp;
    if (Status s = readConcernTs(o, &readTs); !s.ok())
        return s;
    mvcc::BeginOptions begin;
    begin.readTs = readTs;
    return begin;
}

Status Session::commit(const WriteConcern& wc, std::optional<mvcc::Timestamp> commitTs) {
    if (!explicit_)
        return Status::IllegalOperation("no transaction is running: nothing to commit");
    if (Status s = engine_.checkWriteConcern(wc); !s.ok())
        return Status(s.code(), s.message() + "; nothing was committed, the transaction is open");
    const bool wrote = !txn_.writes().empty();
    if (Status s = commit(commitTs); !s.ok())
        return s;
    // The transaction's locks are released: waiting holds nothing up.
    const mvcc::Timestamp ts = wrote ? lastCommitTs_ : mvcc::kNoTimestamp;
    return engine_.awaitWriteConcern(ts, wc);
}

}  // namespace mvkv::engine
