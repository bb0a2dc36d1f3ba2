// mvkv/session.h: one client's reads, writes and transactions.
// Part of the public API (include/mvkv/); no stable ABI is promised yet.
//
// Collections are named "db.collection". Outside an explicit transaction
// every call is its own transaction (MongoDB's implicit one): a read sees
// the newest commits, a write commits at once at the clock's next timestamp
// and retries its write conflicts for EngineOptions::writeConflictRetryTimeout.
// Between begin() and commit() / abort() every call joins the transaction:
// it reads one snapshot (its own writes included) and its first conflicting
// write aborts it (WriteConflict; retry the whole transaction, as
// withTransaction does).
//
// Errors every data call may return: InvalidArgument (a bad namespace, a key
// or value over the engine's limits), NamespaceNotFound, WriteConflict,
// LockTimeout (EngineOptions::lockTimeout), Interrupted (interrupt(), or
// currentOp/killOp), PrepareConflict (a read in an explicit transaction
// meets a prepared, unresolved write; an implicit read waits instead),
// IOError (the oplog could not be written: the engine takes no more writes
// until it is reopened; the commit is not acknowledged). Each call says
// what else it returns.
//
// Ownership and lifetime: Engine::openSession() gives it; destroy it (and
// its cursors first) before the engine. Destroying it aborts a running
// transaction, a prepared one included.
//
// Thread safety: a session is one thread's at a time (use one per thread);
// interrupt() alone may be called from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "mvkv/cursor.h"
#include "mvkv/options.h"
#include "mvkv/status.h"
#include "mvkv/timestamp.h"

namespace mvkv {

class Session {
  public:
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // --- the catalog (each takes an exclusive lock: waits for users) ---
    /// NamespaceExists when it exists; IllegalOperation in a transaction.
    Status createCollection(std::string_view ns);
    /// NamespaceNotFound when it does not exist.
    Status dropCollection(std::string_view ns);
    Status dropDatabase(std::string_view db);

    // --- transactions ---
    /// IllegalOperation when one is running; InvalidArgument for a readTs
    /// below oldest (without roundUpReadTs) or with read concern majority.
    Status begin(const TxnOptions& options = {});
    /// The running transaction's snapshot point: its read timestamp, or,
    /// begun without one, all_durable just before it began: every commit
    /// at or below that point had finished then, and so is visible. It is
    /// a lower bound, not an exact cut: commits that finished before the
    /// transaction began with timestamps above it are visible too, and an
    /// in-memory engine accepts later commits at older timestamps, which
    /// the snapshot does not see (docs/mvcc.md). kNoTimestamp with no
    /// transaction, and inside withTransaction's body when it was begun
    /// without a read timestamp.
    Timestamp readTimestamp() const;
    /// Fixes the commit timestamp now (WiredTiger's timestamp_transaction).
    Status timestampTransaction(Timestamp commitTs);
    /// Commits at `commitTs`, the one fixed before, or the clock's next;
    /// returns the commit timestamp (kNoTimestamp for a read-only
    /// transaction). On a broken timestamp rule (InvalidArgument) the
    /// transaction is rolled back. IllegalOperation when none is running.
    StatusWith<Timestamp> commit(std::optional<Timestamp> commitTs = std::nullopt);
    /// The same, then waits for write concern `wc` outside the locks.
    /// InvalidArgument (nothing committed, the transaction still open) for
    /// a concern that can never be met; WriteConcernTimeout after the
    /// commit when it was not met in time (the write IS committed).
    StatusWith<Timestamp> commit(const WriteConcern& wc,
                                 std::optional<Timestamp> commitTs = std::nullopt);
    /// The commit timestamp of this session's newest commit that wrote
    /// (explicit or implicit; kNoTimestamp before the first): after a
    /// WriteConcernTimeout, the committed write's timestamp.
    Timestamp lastCommitTimestamp() const;
    /// IllegalOperation when none is running; aborts a prepared one too.
    Status abort();
    bool inTransaction() const;
    /// Runs `body` in a transaction and commits it, retrying the whole
    /// transaction while it meets write conflicts, up to the retry timeout;
    /// any other error aborts and is returned.
    Status withTransaction(const std::function<Status(Session&)>& body,
                           const TxnOptions& options = {});

    // --- prepared transactions (WiredTiger's prepare_transaction) ---
    /// Its writes stay in place, prepared at `prepareTs`; it takes no more
    /// writes and ends by commit(commitTs, durableTs) or abort(). Logged:
    /// it survives a crash as prepared. InvalidArgument for a timestamp the
    /// rules refuse (the transaction unchanged); IllegalOperation with no
    /// transaction or one already prepared.
    Status prepare(Timestamp prepareTs);
    /// Commits a prepared transaction (commitTs >= prepare, durableTs >=
    /// commitTs). A refused timestamp leaves it prepared.
    StatusWith<Timestamp> commit(Timestamp commitTs, Timestamp durableTs);
    bool prepared() const;

    // --- data ---
    /// NotFound when the key has no visible value.
    StatusWith<std::string> get(std::string_view ns, std::string_view key);
    Status get(std::string_view ns, std::string_view key, std::string* value);
    /// Insert or replace.
    Status put(std::string_view ns, std::string_view key, std::string_view value);
    /// DuplicateKey when it exists.
    Status insert(std::string_view ns, std::string_view key, std::string_view value);
    /// NotFound when it does not exist.
    Status update(std::string_view ns, std::string_view key, std::string_view value);
    /// NotFound when it does not exist.
    Status remove(std::string_view ns, std::string_view key);
    /// A cursor in this session's snapshot (mvkv/cursor.h).
    StatusWith<std::unique_ptr<Cursor>> openCursor(std::string_view ns);

    // --- control ---
    /// The running or next operation ends with Interrupted at its next
    /// interrupt point (a lock wait, a prepare wait, a cursor's skip). Any thread.
    void interrupt();
    /// For this session's lock requests (none: the engine's).
    void setLockTimeout(std::optional<std::chrono::milliseconds> timeout);
    /// Write conflicts the last implicit write retried (0 inside a transaction).
    uint64_t lastOpWriteConflicts() const;
    /// Its id in currentOp and serverStatus.
    uint64_t id() const;

    struct Impl;  // the engine's side (opaque)
    explicit Session(std::unique_ptr<Impl> impl);

  private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace mvkv
