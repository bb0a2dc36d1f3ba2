// Session: one client's connection to an Engine — its transaction, its locks
// (a Locker) and its operations.
//
// Outside begin()/commit() every operation is implicit: it runs in its own
// transaction, takes tickets and intent locks top-down (reads IS/IS/IS,
// writes IX/IX/IX) for that operation only, and a write that hits a write
// conflict retries with MongoDB's backoff until the session's retry timeout.
// Inside an explicit transaction, operations see one snapshot merged with
// the transaction's own writes, locks are held until commit or abort, and a
// write conflict aborts the transaction and returns WriteConflict (retry the
// whole transaction; withTransaction() does).
//
// Errors: every call returns a Status; on failure nothing is half-written.
// Thread safety: a Session is used by one thread at a time. Cursors belong to
// their session and must be destroyed before it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/collection.h"
#include "engine/curop.h"
#include "engine/lock_waiters.h"
#include "engine/op_registry.h"
#include "engine/write_concern.h"
#include "engine/write_options.h"
#include "historystore/history_store.h"
#include "lockmgr/locker.h"
#include "lockmgr/raii_locks.h"
#include "mvcc/transaction.h"
#include "mvcc/txn_manager.h"
#include "util/deadline.h"
#include "util/status.h"

namespace mvkv::engine {

class Engine;
class Cursor;
struct CursorSpare;

struct TxnOptions {
    mvcc::Timestamp readTs = mvcc::kNoTimestamp;  // none: read the newest commits
    bool roundUpReadTs = false;                   // a read ts below oldest becomes oldest
    /// A held pin at or below readTs (a checkpoint's: mvcc::TimestampPin):
    /// the read is allowed even though oldest moved past readTs since.
    const mvcc::TimestampPin* pin = nullptr;
    /// local: as readTs says; snapshot: at readTs, or at the newest commit
    /// when none is given (fixed, shown as the transaction's readTs);
    /// majority: at Engine::majorityCommitTs() (give no readTs with it).
    ReadConcern readConcern = ReadConcern::kLocal;
    /// WiredTiger's ignore_prepare: reads skip prepared versions (as if the
    /// prepared writes were not there) instead of returning
    /// PrepareConflict. Such a transaction may not write (IllegalOperation).
    bool ignorePrepare = false;
};

/// One version of a key, for inspection (Session::keyHistory).
struct KeyVersion {
    enum class State : uint8_t { kCommitted, kUncommitted, kAborted, kPrepared };
    enum class Where : uint8_t { kChain, kHistoryStore };
    std::string value;
    bool tombstone = false;
    mvcc::TxnId txnId = mvcc::kNoTxnId;
    mvcc::Timestamp startTs = mvcc::kNoTimestamp;  // its commit (kPrepared: prepare) timestamp
    mvcc::Timestamp stopTs = mvcc::kNoTimestamp;   // when a newer version replaced it (0: newest)
    State state = State::kCommitted;
    Where where = Where::kChain;
};

/// A range read or write (Session::scan, count, removeRange). Both ends are
/// inclusive, as the shell's scan; an absent end is open.
struct KeyRange {
    std::optional<std::string_view> from;
    std::optional<std::string_view> to;
};

struct ScanOptions {
    KeyRange range;
    uint64_t limit = 0;  // 0: no limit
    bool reverse = false;
};

/// What a session is doing, for shells and tests.
struct SessionInfo {
    uint64_t id = 0;
    bool inTransaction = false;
    mvcc::TxnId txnId = mvcc::kNoTxnId;  // 0 until the transaction writes
    mvcc::Timestamp readTs = mvcc::kNoTimestamp;
    mvcc::Timestamp commitTs = mvcc::kNoTimestamp;  // once set
    bool prepared = false;
    mvcc::Timestamp prepareTs = mvcc::kNoTimestamp;  // once prepared
    size_t writes = 0;
};

class Session {
  public:
    ~Session();  // aborts a running transaction
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // --- catalog (X on the collection, X on the database for dropDatabase) ---
    /// With `options` (engine/collection_options.h) a capped collection:
    /// InvalidArgument for bad options. Logged as one oplog command that
    /// carries them (createCommand).
    Status createCollection(std::string_view ns, const CollectionOptions& options = {});
    Status dropCollection(std::string_view ns);
    /// MongoDB's collMod of a TTL index: sets TTL collection `ns`'s
    /// expireAfterSeconds (docs/ttl.md). It applies to the entries already
    /// there (their expiry is their write time plus the current value) but
    /// not to those written with an explicit expiry. Logged as one oplog
    /// command (collModCommand), replayed and replicated like create.
    /// InvalidArgument for seconds outside 0..kMaxExpireAfterSeconds or a
    /// collection that is not a TTL collection; NamespaceNotFound;
    /// IllegalOperation inside a transaction; lock errors (X on `ns`).
    Status setExpireAfterSeconds(std::string_view ns, int64_t seconds);
    Status dropDatabase(std::string_view db);

    // --- transactions ---
    /// IllegalOperation when one is running. With read concern majority:
    /// InvalidArgument with a readTs, Busy while no timestamp is
    /// majority-committed yet (retry once the members applied something).
    Status begin(const TxnOptions& options = {});
    /// WiredTiger's timestamp_transaction: fixes the commit timestamp now.
    Status timestampTransaction(mvcc::Timestamp commitTs);
    /// Commits with `commitTs`, the one set earlier, or the clock's next. On
    /// a broken timestamp rule the transaction is rolled back (the message
    /// says so). IllegalOperation when none is running.
    Status commit(std::optional<mvcc::Timestamp> commitTs = std::nullopt);
    /// The same, then waits for write concern `wc` (engine/write_concern.h)
    /// outside the transaction's locks. Checked first: an unsatisfiable `wc`
    /// (Engine::checkWriteConcern) is InvalidArgument and the transaction
    /// stays open, nothing committed. After the commit: WriteConcernTimeout
    /// (the write IS committed; the message says so). A read-only
    /// transaction waits for nothing.
    Status commit(const WriteConcern& wc, std::optional<mvcc::Timestamp> commitTs = std::nullopt);
    /// Aborts; also a prepared transaction (logged, so recovery does not
    /// rebuild it). IllegalOperation when none is running.
    Status abort();
    bool inTransaction() const { return explicit_; }

    // --- prepared transactions (docs/mvcc.md, "Prepared transactions") ---
    /// WiredTiger's prepare_transaction on the running explicit
    /// transaction: its writes stay in place, marked prepared at
    /// `prepareTs`; from now on it takes no writes (IllegalOperation) and
    /// ends only by commit(commitTs, durableTs) (or commit(ts): durable =
    /// commit) or abort(). A reader that would see a prepared write gets
    /// PrepareConflict (implicit reads wait for the resolution); a writer of
    /// a prepared key gets WriteConflict. On a durable engine the prepare is
    /// logged (docs/oplog.md) and survives a crash as a prepared transaction
    /// (Engine::preparedTransactions). Errors: IllegalOperation with no
    /// transaction, or one already prepared; InvalidArgument for a
    /// timestamp the rules refuse (mvcc::TransactionManager::prepare), the
    /// transaction still running and unchanged; a log error rolls it back.
    Status prepare(mvcc::Timestamp prepareTs);
    /// Commits a prepared transaction at `commitTs` (>= its prepare
    /// timestamp), durable at `durableTs` (>= commitTs, after stable). A
    /// refused timestamp (InvalidArgument) leaves it prepared: commit again
    /// with valid ones, or abort. IllegalOperation when the transaction is
    /// not prepared (commit an unprepared one with commit(ts)).
    Status commit(mvcc::Timestamp commitTs, mvcc::Timestamp durableTs);
    bool prepared() const { return txn_.prepared(); }

    /// Runs `body` in a transaction and commits, retrying the whole
    /// transaction (with backoff) while it hits write conflicts, until the
    /// retry timeout. Any other error aborts and is returned.
    Status withTransaction(const std::function<Status(Session&)>& body,
                           const TxnOptions& options = {});

    // --- data ---
    /// NotFound when the key has no visible live version.
    StatusWith<std::string> get(std::string_view ns, std::string_view key);
    /// The same into `*value` (its capacity is reused: no allocation per read
    /// once it is large enough). `*value` is unchanged on failure.
    Status get(std::string_view ns, std::string_view key, std::string* value);
    /// The same, and when the entry expires: in a TTL collection (docs/ttl.md)
    /// *expiresAtMs is its explicit expiry or its write time plus the
    /// collection's expireAfterSeconds (ms since the Unix epoch; an expired
    /// entry stays readable until the TTL monitor deletes it); nullopt in
    /// any other collection. Both are unchanged on failure.
    Status getWithExpiry(std::string_view ns, std::string_view key, std::string* value,
                         std::optional<int64_t>* expiresAtMs);
    /// Upsert.
    Status put(std::string_view ns, std::string_view key, std::string_view value);
    /// DuplicateKey when the key exists.
    Status insert(std::string_view ns, std::string_view key, std::string_view value);
    /// NotFound when the key does not exist.
    Status update(std::string_view ns, std::string_view key, std::string_view value);
    /// NotFound when the key does not exist.
    Status remove(std::string_view ns, std::string_view key);
    /// The same with options (engine/write_options.h): an explicit expiry on
    /// a TTL collection, a document-lock fence. InvalidArgument for an
    /// expiry on a collection that is not a TTL collection, with a remove,
    /// or at or below 0 ms. A fenced write reads the lock on `key` in
    /// `<ns>.lock`, writes, and rewrites the lock entry unchanged (so that a
    /// concurrent take-over or release conflicts with it), all in one
    /// transaction: the write's own outside a transaction
    /// (retried on write conflicts), the open one inside. LockLost (saying
    /// whether the lock was released, expired, or is held by another owner
    /// or token) and nothing written when the lock does not hold for that
    /// owner and token; InvalidArgument for an empty or bad owner or token 0.
    Status put(std::string_view ns, std::string_view key, std::string_view value,
               const WriteOptions& options);
    Status insert(std::string_view ns, std::string_view key, std::string_view value,
                  const WriteOptions& options);
    Status update(std::string_view ns, std::string_view key, std::string_view value,
                  const WriteOptions& options);
    Status remove(std::string_view ns, std::string_view key, const WriteOptions& options);
    /// Every version of `key` the engine still holds, newest first: the
    /// update chain (uncommitted and aborted versions included), then the
    /// history store. Visibility does not apply: this is for inspection
    /// (the shell's history command). NamespaceNotFound; an empty list when
    /// the key has no version at all.
    StatusWith<std::vector<KeyVersion>> keyHistory(std::string_view ns, std::string_view key);
    /// Every live key in `range` in order (or reverse), to `visit` (which
    /// returns false to stop). Outside a transaction the scan yields
    /// (docs/operations.md): every EngineOptions::yieldIterations keys or
    /// yieldPeriod it releases its locks and its snapshot and takes new
    /// ones, so a long scan is not one point in time; a key is never
    /// visited twice. Inside a transaction it reads the transaction's
    /// snapshot and never yields. Errors: NamespaceNotFound, lock errors,
    /// Interrupted (killOp: checked every 128 keys and at each yield),
    /// QueryPlanKilled (the collection was dropped while it yielded; what
    /// was visited stands). The views passed to `visit` are valid during
    /// the call only; `visit` must not use this session.
    Status scan(std::string_view ns, const ScanOptions& options,
                const std::function<bool(std::string_view key, std::string_view value)>& visit);
    /// How many live keys `range` holds, yielding as scan does.
    StatusWith<uint64_t> count(std::string_view ns, const KeyRange& range = {});
    /// Removes every live key in `range` (both ends inclusive) and returns
    /// how many. Outside a transaction each key is its own write and the
    /// operation yields as scan does: not atomic, as MongoDB's multi-delete
    /// (an error part-way leaves the keys removed so far removed). Inside a
    /// transaction it is atomic and does not yield (a write conflict aborts
    /// the transaction).
    StatusWith<uint64_t> removeRange(std::string_view ns, const KeyRange& range);
    /// A cursor over `ns`. In a transaction it reads the transaction's
    /// snapshot and writes; otherwise it has a snapshot of its own (held, with
    /// IS locks, until the cursor is destroyed).
    StatusWith<std::unique_ptr<Cursor>> openCursor(std::string_view ns);

    // --- settings and introspection ---
    void setLockTimeout(std::optional<std::chrono::milliseconds> timeout) {
        lockTimeout_ = timeout;
    }
    void setRetryTimeout(std::chrono::milliseconds timeout) { retryTimeout_ = timeout; }
    /// Whether a read outside a transaction that meets a prepared version
    /// waits for it to resolve (true, the default, as MongoDB's reads do)
    /// or returns PrepareConflict at once.
    void setPrepareConflictWait(bool wait) { prepareConflictWait_ = wait; }
    /// The read concern of this session's reads outside a transaction (get,
    /// scan, count, openCursor; MongoDB's per-operation readConcern): local
    /// (the default) reads the newest commits; snapshot reads at all_durable;
    /// majority at Engine::majorityCommitTs(), so a {w:1} write is not seen
    /// until a majority made it durable. Such a read then returns Busy while
    /// nothing is majority-committed, and InvalidArgument when the point is
    /// below the oldest timestamp. A transaction takes its own (TxnOptions).
    void setReadConcern(ReadConcern rc) { readConcern_ = rc; }
    ReadConcern readConcern() const { return readConcern_; }
    /// While it lives, `session`'s reads outside a transaction read the
    /// newest commits (local) whatever its read concern: for the engine's
    /// reads that decide a write (fencing marks, a lock owner's index), which
    /// must not act on a majority point's older data.
    class LocalReads {
      public:
        explicit LocalReads(Session& session)
            : session_(session), was_(session.readConcern_) {
            session.readConcern_ = ReadConcern::kLocal;
        }
        ~LocalReads() { session_.readConcern_ = was_; }
        LocalReads(const LocalReads&) = delete;
        LocalReads& operator=(const LocalReads&) = delete;

      private:
        Session& session_;
        ReadConcern was_;
    };
    /// For oplog replay, replicas and checkpoint loads: writes to capped
    /// collections are applied as given, inside transactions too, without
    /// evicting (the log already holds the evictions); the collection's
    /// order is read again from the data by its next capped write. A TTL
    /// collection's values are stored as given, time header included
    /// (engine/ttl_value.h): every reader strips it either way.
    void setApplyingOplog(bool on) { applyingOplog_ = on; }
    /// For a durable replica: the next catalog command on this session is
    /// logged at `ts` (the primary's timestamp of it) instead of the clock's
    /// next; refused as a commit timestamp would be. One command only.
    void setNextCommandTimestamp(mvcc::Timestamp ts) { nextCommandTs_ = ts; }
    /// False for the engine's own sessions (checkpoints, replay, replica
    /// appliers): their operations are never slow-logged or profiled.
    void setMonitored(bool on) { monitored_ = on; }
    /// A client's operation: not recovery, replication apply or the engine's
    /// own reads. The transaction failpoints act on these alone.
    bool clientOp() const {
        return monitored_.load(std::memory_order_relaxed) && !applyingOplog_;
    }
    /// Any thread: interrupts the operation running in this session, like
    /// MongoDB's killOp. A lock wait returns Interrupted; an implicit write's
    /// (or withTransaction's) retry loop stops with Interrupted. An interrupt
    /// that arrives while no operation runs is forgotten when the next starts.
    void interrupt();
    /// The commit timestamp of this session's newest commit (explicit or
    /// implicit) that wrote something; 0 before the first.
    mvcc::Timestamp lastCommitTs() const { return lastCommitTs_; }
    /// The running transaction has written something (its commit will
    /// take a timestamp).
    bool transactionWrote() const { return !txn_.writes().empty(); }
    /// The running transaction's read timestamp (kNoTimestamp: none, it
    /// reads the commits finished when it began).
    mvcc::Timestamp transactionReadTs() const { return txn_.readTs(); }
    /// The running transaction's read bound (mvcc::Transaction::readBound).
    mvcc::Timestamp transactionReadBound() const { return txn_.readBound(); }
    /// Write conflicts met by the last operation (its retries, for implicit writes).
    uint64_t lastOpWriteConflicts() const { return lastOpWriteConflicts_; }
    SessionInfo info() const;
    /// The name currentOp and the logs show (MongoDB's appName / the log's
    /// ctx); "conn<id>" until set.
    void setName(std::string name);
    std::string name() const;
    uint64_t id() const { return id_; }
    /// Hands out an opid now for the next operation this session runs (the
    /// shell's `bg` prints it before the command starts).
    uint64_t reserveOpid();
    /// Forgets a reserved opid that no operation took (a `bg` command that
    /// failed before reaching the engine), so no later operation takes it.
    void dropReservedOpid() { reservedOpid_.store(0, std::memory_order_relaxed); }
    /// Any thread (Engine::killOp): when `opid` is reserved and not yet
    /// taken, marks it so that the operation that takes it starts killed.
    bool killReserved(uint64_t opid);
    lockmgr::Locker& locker() { return *locker_; }
    Engine& engine() { return engine_; }

  private:
    friend class Engine;
    friend class OpScope;
    friend class Profiler;
    friend class Cursor;
    friend class OperationContext;
    friend class TtlMonitor;  // its scan reads stored values (walkRange)
    friend class DocumentLocks;
    friend class PreparedTransactions;  // abandonPrepared at close
    enum class WriteOp : uint8_t { kPut, kInsert, kUpdate, kRemove };
    struct PendingWrite {
        Collection* collection = nullptr;
        uint32_t keyBytes = 0;
        int64_t keysDelta = 0;  // set by measureCommit()
        int64_t bytesDelta = 0;
        std::string key;  // only when the engine has a log
        char op = 'u';    // the oplog's op (oplogOp): 'i' created, 'u' replaced, 'd' removed
        /// A lock collection's entry removed or rewritten (measureCommit):
        /// the commit wakes the lock's waiters (engine/lock_waiters.h).
        bool wakesLockWaiters = false;
    };
    /// A durable engine: logs the committed transaction's writes (after
    /// commit, before it is acknowledged); an error is returned to the
    /// committer (the data is committed in memory but may not survive).
    Status logCommitted();
    /// The commit record of txn_ appended to the oplog: the oplog's (or
    /// the `local` lock's) error as is. A prepared transaction's ends with
    /// its durable timestamp (`preparedDurableTs`; oplog_entry.h).
    Status appendCommitRecord(mvcc::Timestamp preparedDurableTs = mvcc::kNoTimestamp);
    /// Runs `change` (a catalog change) and, on a durable engine, logs it
    /// as `command` on `ns`, both under the engine's catalog-log mutex.
    Status changeCatalog(std::string_view ns, std::string_view command,
                         const std::function<Status()>& change);
    struct HeldLock {
        std::string ns;
        lockmgr::LockMode mode;
    };

    Session(Engine& engine, uint64_t id);
    // ---- operations (engine/op_scope.h) ----
    // beginOp and endOp are the inline fast paths (op_scope.h); the rest
    // of an operation's life is out of line (session_ops.cpp).
    inline void beginOp(const CurOp::Description& d);
    /// beginOp's route when an interrupt is pending or an opid reserved.
    /// (By value: the caller's description never escapes, so the fast path
    /// keeps it in registers.)
    [[gnu::noinline]] void beginOpSlow(CurOp::Description d);
    /// After an operation's body: an Interrupted inside an explicit
    /// transaction aborts it.
    Status afterOp(Status s);
    /// `pointRead`: the counters of a point read, added only when the
    /// operation is reported (OpScope::countPointRead).
    inline void endOp(StatusCode code, CurOp::PointRead pointRead);
    /// endOp's slow path: the slow-op log and the profiler, for an
    /// operation that ran `nanos` (over Engine::reportNanos()).
    [[gnu::noinline]] void reportOp(int64_t nanos, StatusCode code);
    /// Keeps the transaction's description for currentOp up to date.
    void describeTxn();
    /// Releases the operation's locks and snapshot, lets waiters in, checks
    /// for killOp and takes them again (scan, count, removeRange).
    Status yieldLocks(class OperationContext& op, std::string_view ns);
    /// Hands every live key of `range` (in order, or reverse) and its value
    /// as stored (a TTL collection's with its header: Collection::userValue)
    /// to `onKey` with the locks held and no epoch pin, in batches, yielding between
    /// batches outside a transaction (docs/operations.md). `onKey` sets
    /// *stop to end the walk; an error it returns ends it too.
    using RangeVisitor = std::function<Status(Collection& coll, std::string_view key,
                                              std::string_view value, bool* stop)>;
    Status walkRange(std::string_view ns, lockmgr::LockMode mode, const KeyRange& range,
                     bool reverse, const RangeVisitor& onKey);
    /// One implicit write transaction running `apply` (its writes), retried
    /// on write conflicts (engine/implicit_write.h).
    template <typename Apply>
    Status implicitWrite(Apply&& apply);
    /// The write of one key under locks the caller holds (removeRange).
    Status writeLocked(WriteOp op, Collection& coll, std::string_view key, std::string_view value);
    Deadline lockDeadline() const;
    /// The read timestamp `options`' read concern asks for (engine/write_concern.cpp).
    Status readConcernTs(const TxnOptions& options, mvcc::Timestamp* readTs) const;
    /// How a read outside a transaction begins its snapshot under the
    /// session's read concern: kImplicitBegin for local, else at the
    /// concern's read timestamp (registered, so the sweep keeps its history).
    StatusWith<mvcc::BeginOptions> implicitReadBegin() const;
    Status checkInterrupted() const;
    /// A read in a prepared transaction (engine/session_prepare.cpp).
    static Status preparedReadRefused();
    /// A client's write on a replica's secondary (Engine::secondary()).
    static Status secondaryWriteRefused();
    Status checkKey(std::string_view key) const;
    Status checkValue(std::string_view value) const;
    /// Create and drop: refused in the reserved `local` database and inside
    /// a transaction (`what` names the command in the message).
    Status checkCatalogChange(std::string_view db, std::string_view what) const;
    /// Inside a transaction: takes `ns` in `mode` for the transaction unless
    /// it already holds a mode that covers it.
    Status lockForTransaction(const lockmgr::LockNamespace& ns, lockmgr::LockMode mode,
                              const Deadline& deadline);
    /// The session's cache of collections by namespace (a hint: see
    /// OperationContext::lockCollection). Null when not cached; the entry
    /// stays put until the next cacheCollection() or forgetCollection().
    const std::shared_ptr<Collection>* cachedCollection(std::string_view ns) const;
    const std::shared_ptr<Collection>& cacheCollection(std::string_view ns,
                                                       std::shared_ptr<Collection> coll);
    void forgetCollection(std::string_view ns);
    /// Clears the cache when the catalog changed since it was filled, so the
    /// cache never keeps a dropped collection alive for long.
    void dropStaleCache();
    void keepForTransaction(const std::shared_ptr<Collection>& coll);
    Status write(WriteOp op, std::string_view ns, std::string_view key, std::string_view value,
                 const WriteOptions* options = nullptr);
    /// A TTL collection's write: points *value at the stored form (header +
    /// value, engine/ttl_value.h) in ttlValue_. Checks an explicit expiry.
    Status stampTtlValue(WriteOp op, const Collection& coll, const WriteOptions* options,
                         std::string_view* value);
    /// write() under a document-lock fence (engine/fenced_write.cpp);
    /// `options` without its fence go to the write itself.
    Status fencedWrite(WriteOp op, std::string_view ns, std::string_view key,
                       std::string_view value, const WriteOptions& options);
    /// The fence check of a fenced write, inside the transaction.
    Status checkFence(std::string_view ns, std::string_view key, const WriteFence& fence,
                      struct LockEntry* lock);
    /// A write to a capped collection, with its evictions in the same
    /// transaction (engine/capped_write.cpp). The caller holds IX on it.
    Status writeCapped(WriteOp op, Collection& coll, std::string_view key,
                       std::string_view value);
    /// One attempt of a write inside txn_. The caller pins the engine's
    /// EpochManager around the call.
    Status applyWrite(WriteOp op, Collection& coll, std::string_view key, std::string_view value);
    /// The oplog op of the write applyWrite just made (txn_.writes().back()).
    char oplogOp(WriteOp op) const;
    /// Commits txn_ and updates the collections' accounting.
    Status commitTxn(std::optional<mvcc::Timestamp> commitTs);
    /// The commit of a prepared txn_ (engine/session_prepare.cpp).
    Status commitPreparedTxn(mvcc::Timestamp commitTs, mvcc::Timestamp durableTs);
    /// Prepares txn_; `log`: write the prepare record (recovery rebuilds
    /// from the one already in the log and writes none).
    Status prepareTxn(mvcc::Timestamp prepareTs, bool log);
    /// Aborts a prepared txn_ and logs the abort record when the engine logs.
    /// Its error: the abort record could not be written (rolled back in
    /// memory all the same; the next open rebuilds it as prepared).
    Status abortPreparedTxn(bool log);
    /// The message of a prepared commit whose record `s` stopped.
    std::string commitRecordError(const Status& s) const;
    /// Moves the prepared transaction, its locks and its accounting into
    /// `to` (a fresh session): the closing session keeps nothing of it.
    Status handOverPrepared(Session& to);
    /// At engine close, for a recovered transaction: rolled back in memory
    /// only, so the log keeps it prepared for the next open.
    void abandonPrepared();
    /// What a read met: waits (implicit reads) for a prepared transaction
    /// to resolve after `seen`; Interrupted on killOp. True: read again.
    bool waitPrepareResolved(uint64_t seen, Status* why);
    /// The oplog record of a prepare, or of a prepared transaction's abort.
    Status logPrepareRecord(bool abort);
    /// The PrepareConflict a reader of `key` gets for prepared version `u`.
    static Status prepareConflict(const Collection& coll, std::string_view key,
                                  const mvcc::Update* u);
    void abortTxn();
    /// Before commit: what each write changes in its collection's counts.
    /// Measured while our versions are uncommitted, so the history sweep
    /// has not cut what they replaced; applied once the commit succeeded.
    void measureCommit();
    void applyCommitCounts();
    void endExplicit();
    /// The caller pins the engine's EpochManager around the call. The value
    /// without a TTL header; *expiresAtMs (may be null) as getWithExpiry's.
    /// PrepareConflict when the key's version the transaction would read is
    /// prepared (the caller waits and reads again outside a transaction).
    Status read(Collection& coll, std::string_view key, std::string* out,
                std::optional<int64_t>* expiresAtMs = nullptr);
    /// read() through `txn`'s snapshot.
    Status readThrough(const mvcc::Transaction& txn, Collection& coll, std::string_view key,
                       std::string* out, std::optional<int64_t>* expiresAtMs);
    /// The test-only failpoint readIgnoresSnapshot: read() at a snapshot of
    /// its own, the newest commits, instead of the transaction's.
    Status readIgnoringSnapshot(Collection& coll, std::string_view key, std::string* out,
                                std::optional<int64_t>* expiresAtMs);

    Engine& engine_;
    const uint64_t id_;
    std::unique_ptr<lockmgr::Locker> locker_;  // a prepared transaction takes it when the session closes
    mvcc::Transaction txn_;
    bool explicit_ = false;
    uint64_t txnGeneration_ = 0;  // bumped when an explicit transaction ends
    struct StringHash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    std::unordered_map<std::string, std::shared_ptr<Collection>, StringHash, std::equal_to<>>
        collectionCache_;
    uint64_t cacheGeneration_ = 0;  // the catalog generation the cache was filled at
    std::vector<lockmgr::AutoGetCollection> txnLocks_;
    std::vector<HeldLock> txnLockModes_;
    std::vector<std::shared_ptr<Collection>> txnCollections_;  // kept alive until the end
    /// Lazily made: most sessions never read from the history store.
    historystore::HistoryStore::Reader& historyReader();
    std::unique_ptr<historystore::HistoryStore::Reader> historyReader_;
    std::vector<PendingWrite> pending_;
    std::string ttlValue_;    // a TTL write's stored value (reused)
    std::string logPayload_;  // the oplog record being built (reused: no allocation per commit)                        // parallel to txn_.writes()
    std::optional<std::chrono::milliseconds> lockTimeout_;
    std::chrono::milliseconds retryTimeout_;
    bool prepareConflictWait_ = true;
    ReadConcern readConcern_ = ReadConcern::kLocal;  // of reads outside a transaction
    uint64_t lastOpWriteConflicts_ = 0;
    mvcc::Timestamp lastCommitTs_ = mvcc::kNoTimestamp;
    std::atomic<bool> interrupted_{false};
    /// The stripe a document lock acquisition sleeps on (DocumentLocks),
    /// for interrupt() to wake it; null when none sleeps.
    std::atomic<LockWaiters::Stripe*> docLockWait_{nullptr};
    bool inWithTransaction_ = false;
    bool applyingOplog_ = false;
    mvcc::Timestamp nextCommandTs_ = mvcc::kNoTimestamp;  // setNextCommandTimestamp
    int openCursors_ = 0;
    // What the last closed Cursor left for the next (engine/cursor.h).
    std::unique_ptr<CursorSpare> cursorSpare_;

    CurOp curOp_;
    OpTally tally_;
    /// false: the profiler's own session (and the checkpointer's, replay's,
    /// a replica's), never profiled or slow-logged, its operations in no
    /// serverStatus figure (atomic: serverStatus reads it).
    std::atomic<bool> monitored_{true};
    /// The opid reserveOpid() handed out, with kReservedKilled when killOp
    /// named it before an operation took it.
    static constexpr uint64_t kReservedKilled = uint64_t{1} << 63;
    std::atomic<uint64_t> reservedOpid_{0};
    std::string name_;  // GUARDED_BY(engine_.ops_.mutex())
    /// The open explicit transaction, for currentOp from other threads.
    struct TxnDescription {
        std::atomic<bool> open{false};
        std::atomic<uint64_t> txnId{0};
        std::atomic<uint64_t> readTs{0};
        std::atomic<int64_t> startMicros{0};
        std::atomic<uint64_t> prepareTs{0};  // 0: not prepared
    };
    TxnDescription txnDesc_;
};

}  // namespace mvkv::engine
