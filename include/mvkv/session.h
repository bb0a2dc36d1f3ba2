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
#include <vector>

#include "mvkv/cursor.h"
#include "mvkv/options.h"
#include "mvkv/status.h"
#include "mvkv/timestamp.h"

namespace mvkv {

/// A range (scan, count, removeRange): both ends inclusive; an absent end
/// is open. The views must stay valid for the call.
struct KeyRange {
    std::optional<std::string_view> from;
    std::optional<std::string_view> to;
};

struct ScanOptions {
    KeyRange range;
    uint64_t limit = 0;  // 0: no limit
    bool reverse = false;
};

/// One version of a key as the engine holds it (keyHistory): for
/// inspection, whatever its visibility.
struct KeyVersion {
    enum class State : uint8_t { kCommitted, kUncommitted, kAborted, kPrepared };
    enum class Where : uint8_t { kChain, kHistoryStore };
    std::string value;
    bool tombstone = false;  // a delete
    TxnId txnId = kNoTxnId;
    Timestamp startTs = kNoTimestamp;  // its commit (kPrepared: prepare) timestamp
    Timestamp stopTs = kNoTimestamp;   // when a newer version replaced it (0: newest)
    State state = State::kCommitted;
    Where where = Where::kChain;
};

/// What a session is doing (Session::info), for shells and tests.
struct SessionInfo {
    uint64_t id = 0;
    bool inTransaction = false;
    TxnId txnId = kNoTxnId;          // 0 until the transaction writes
    Timestamp readTs = kNoTimestamp;  // the read timestamp it was begun with, if any
    Timestamp commitTs = kNoTimestamp;  // once fixed (timestampTransaction)
    bool prepared = false;
    Timestamp prepareTs = kNoTimestamp;  // once prepared
    uint64_t writes = 0;                 // the running transaction's
};

class Session {
  public:
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // --- the catalog (each takes an exclusive lock: waits for users) ---
    /// NamespaceExists when it exists; IllegalOperation in a transaction.
    Status createCollection(std::string_view ns);
    /// With options: a capped or a TTL collection (options.h).
    /// InvalidArgument for options out of range or capped with a TTL.
    Status createCollection(std::string_view ns, const CollectionOptions& options);
    /// MongoDB's collMod of a TTL index: TTL collection `ns` now expires its
    /// entries `seconds` after their write (those already there too, but
    /// not those written with an explicit expiry). InvalidArgument for
    /// seconds outside 0..kMaxExpireAfterSeconds or a collection that is not
    /// a TTL collection; IllegalOperation in a transaction.
    Status setExpireAfterSeconds(std::string_view ns, int64_t seconds);
    /// NamespaceNotFound when it does not exist.
    Status dropCollection(std::string_view ns);
    Status dropDatabase(std::string_view db);

    // --- transactions ---
    /// IllegalOperation when one is running; InvalidArgument for a readTs
    /// below oldest (without roundUpReadTs) or with read concern majority.
    Status begin(const TxnOptions& options = {});
    /// The running transaction's snapshot point: its read timestamp, or,
    /// begun without one on an engine with an oplog (durable, or in memory
    /// with an oplog cap), its read point: exactly the commits at or below
    /// it are visible, and every one of them had finished when the snapshot
    /// was taken (docs/mvcc.md, "Untimestamped snapshots"). On an engine
    /// without an oplog: all_durable just before it began, a lower bound,
    /// not an exact cut (commits that finished with later timestamps are
    /// visible too, and later commits may take older timestamps, which the
    /// snapshot does not see); kNoTimestamp there inside withTransaction's
    /// body. kNoTimestamp with no transaction.
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
    /// The same, then waits for write concern `wc` (when it wrote): checked
    /// first (InvalidArgument, still prepared, for one never met);
    /// WriteConcernTimeout after the commit when not met in time.
    StatusWith<Timestamp> commit(Timestamp commitTs, Timestamp durableTs, const WriteConcern& wc);
    bool prepared() const;

    // --- data ---
    /// NotFound when the key has no visible value.
    StatusWith<std::string> get(std::string_view ns, std::string_view key);
    Status get(std::string_view ns, std::string_view key, std::string* value);
    /// The same, and when the entry expires (a TTL collection): its explicit
    /// expiry or its write time plus expireAfterSeconds, in ms since the
    /// Unix epoch (an expired entry reads until a TTL pass deletes it);
    /// nullopt in any other collection. Both unchanged on failure.
    Status get(std::string_view ns, std::string_view key, std::string* value,
               std::optional<int64_t>* expiresAtMs);
    /// Insert or replace.
    Status put(std::string_view ns, std::string_view key, std::string_view value);
    /// DuplicateKey when it exists.
    Status insert(std::string_view ns, std::string_view key, std::string_view value);
    /// NotFound when it does not exist.
    Status update(std::string_view ns, std::string_view key, std::string_view value);
    /// NotFound when it does not exist.
    Status remove(std::string_view ns, std::string_view key);
    /// The same with options (options.h): an explicit expiry (InvalidArgument
    /// on a collection that is not a TTL collection, with a remove, or at or
    /// below 0), a document-lock fence (LockLost, nothing written, when the
    /// lock does not hold for that owner and token; InvalidArgument for an
    /// empty owner or token 0). The fence check and the write are one
    /// transaction.
    Status put(std::string_view ns, std::string_view key, std::string_view value,
               const WriteOptions& options);
    Status insert(std::string_view ns, std::string_view key, std::string_view value,
                  const WriteOptions& options);
    Status update(std::string_view ns, std::string_view key, std::string_view value,
                  const WriteOptions& options);
    Status remove(std::string_view ns, std::string_view key, const WriteOptions& options);
    /// Every live key of `options.range` in order (or reverse), to `visit`
    /// (false stops it). Outside a transaction the scan yields its locks and
    /// snapshot now and then (docs/operations.md): not one point in time, but
    /// no key twice; inside one it reads the transaction's snapshot.
    /// QueryPlanKilled when the collection was dropped while it yielded.
    /// The views are valid during `visit` only; `visit` must not use this
    /// session.
    Status scan(std::string_view ns, const ScanOptions& options,
                const std::function<bool(std::string_view key, std::string_view value)>& visit);
    /// How many live keys `range` holds (yielding as scan does).
    StatusWith<uint64_t> count(std::string_view ns, const KeyRange& range = {});
    /// Removes every live key of `range`; returns how many. Outside a
    /// transaction each key is its own write (not atomic: an error part-way
    /// leaves those removed removed); inside one it is atomic.
    StatusWith<uint64_t> removeRange(std::string_view ns, const KeyRange& range);
    /// Every version of `key` the engine still holds, newest first (update
    /// chain, then history store), visible or not. NamespaceNotFound; empty
    /// when the key has none.
    StatusWith<std::vector<KeyVersion>> keyHistory(std::string_view ns, std::string_view key);
    /// A cursor in this session's snapshot (mvkv/cursor.h).
    StatusWith<std::unique_ptr<Cursor>> openCursor(std::string_view ns);

    // --- control ---
    /// The running or next operation ends with Interrupted at its next
    /// interrupt point (a lock wait, a prepare wait, a cursor's skip). Any thread.
    void interrupt();
    /// For this session's lock requests (none: the engine's).
    void setLockTimeout(std::optional<std::chrono::milliseconds> timeout);
    /// How long this session's implicit writes retry write conflicts
    /// (EngineOptions::writeConflictRetryTimeout until set).
    void setRetryTimeout(std::chrono::milliseconds timeout);
    /// Whether a read outside a transaction (get, scan, count, a cursor of
    /// its own) that meets a prepared transaction's write waits until that
    /// transaction commits or aborts (true, the default, as MongoDB's reads
    /// wait) or returns PrepareConflict at once (false). A caller that is
    /// itself the only one who could resolve it (one thread driving several
    /// sessions, as the shell) sets false: waiting would never end.
    void setPrepareConflictWait(bool wait);
    /// The read concern of reads outside a transaction (get, scan, count,
    /// openCursor), MongoDB's per-operation readConcern; local until set.
    /// majority reads at Engine::majorityCommitTs() (such a read is Busy
    /// while nothing is majority-committed, InvalidArgument when the point
    /// is below oldest); snapshot at the no-holes point. A transaction takes
    /// its own from TxnOptions.
    void setReadConcern(ReadConcern rc);
    ReadConcern readConcern() const;
    /// The name currentOp, the slow-op log and the profiler show ("conn<id>"
    /// until set).
    void setName(std::string name);
    /// Hands out now the opid of the next operation this session runs (so a
    /// caller can print it, or killOp it, before it starts).
    uint64_t reserveOpid();
    /// Forgets a reserved opid no operation took, so no later one takes it.
    void dropReservedOpid();
    /// Its locker's id in Engine::lockTable().
    uint64_t lockerId() const;
    /// The running transaction's figures (all zero outside one).
    SessionInfo info() const;
    /// Write conflicts the last implicit write retried (0 inside a transaction).
    uint64_t lastOpWriteConflicts() const;
    /// Its id in currentOp and serverStatus.
    uint64_t id() const;

    struct Impl;  // the engine's side (opaque)
    explicit Session(std::unique_ptr<Impl> impl);

  private:
    friend class DocumentLocks;  // runs its operations in this session
    std::unique_ptr<Impl> impl_;
};

}  // namespace mvkv
