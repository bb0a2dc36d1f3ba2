// The WiredTiger adapter (libwiredtiger-dev; Debian ships 3.2.1). Built only
// when meson finds the library; otherwise the factory says it is absent.
//
// Settings, and why they are the fair match for the other engines:
// - One connection in StoreOptions::dir and one table "table:bench" with
//   key_format=u,value_format=u: raw bytes compared with memcmp, the order
//   every Store promises. block_compressor=none (no engine compresses) and
//   WiredTiger's defaults for pages (prefix compression off by default).
// - cache_size = max(256 MB, 3 x expectedKeys x (keySize + valueSize + 64)):
//   the whole data set, its update chains and page overhead stay in cache,
//   as LMDB's map sits in the page cache and RocksDB's block cache holds it.
// - The log (journal) is on in both sync modes, as MongoDB runs it: every
//   commit writes a log record. --sync none:
//   transaction_sync=(enabled=true,method=none), the commit returns once its
//   log record has been written to the OS (WiredTiger's "write to OS"), never
//   synced: what RocksDB's WAL without sync and LMDB's MDB_NOSYNC give.
//   (transaction_sync=(enabled=false), MongoDB's j:false, would leave the
//   record in WiredTiger's in-process log buffer at commit, a weaker promise
//   than the other engines make.) --sync fsync:
//   transaction_sync=(enabled=true,method=fsync), a commit returns once its
//   log record is synced (group commit shares the sync).
// - checkpoint=(wait=60): MongoDB's checkpoint interval. A run shorter than a
//   minute therefore writes only the log; the table file is written at close.
// - statistics=(none), the library's default: statistics cost every operation
//   a counter update, so engineMetrics() reports nothing.
// - Each StoreThread has its own WT_SESSION (sessions are single-threaded)
//   with isolation=snapshot and two cached cursors: one with overwrite=true
//   for get/put/scan and one with overwrite=false for remove, so removing an
//   absent key reports WT_NOTFOUND in the same tree descent. The cursors are
//   opened once per thread and kept for its life: the reuse WiredTiger's
//   documentation recommends over opening a cursor per operation (its
//   session-level cache_cursors, on by default, only matters for cursors
//   that are closed and reopened, which these never are).
// - No settle() step after the load: the data set is in the cache as the
//   load left it, which is what a read finds with or without a checkpoint
//   (a checkpoint writes pages to the table file; reads still use the
//   in-memory pages).
//
// Autocommit operations are WiredTiger's implicit transactions. WiredTiger's
// cursor API already retries an implicit update that hits WT_ROLLBACK (a
// write conflict with another session's uncommitted update: the
// TXN_API_END_RETRY loop), so the operation waits the conflict out inside
// the library and conflicts() stays 0: 3.2.1 has no statistic counting those
// retries. A WT_ROLLBACK that still reaches the adapter is retried here and
// counted. Inside begin() / commit() a WT_ROLLBACK becomes WriteConflict and
// the caller aborts.
// Cursors are reset after every operation so they never pin a snapshot or a
// page between operations.
#include "store.h"

#if defined(MVKV_HAVE_WIREDTIGER)
#include <fmt/format.h>
#include <wiredtiger.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#endif

namespace mvkv::bench {

#if !defined(MVKV_HAVE_WIREDTIGER)
StoreFactory wiredTigerStoreFactory() {
    StoreFactory f;
    f.name = "wiredtiger";
    f.why =
        "not built: meson found no wiredtiger (apt-get install libwiredtiger-dev, then "
        "reconfigure)";
    return f;
}
#else
namespace {

constexpr const char* kTableUri = "table:bench";

// Turns a WiredTiger return code into a Status; `what` names the call.
Status wtError(int rc, std::string_view what) {
    if (rc == WT_NOTFOUND)
        return Status::NotFound(fmt::format("wiredtiger {}: key not found", what));
    if (rc == WT_ROLLBACK)
        return Status::WriteConflict(
            fmt::format("wiredtiger {}: {}", what, wiredtiger_strerror(rc)));
    if (rc == EBUSY)
        return Status(StatusCode::kBusy,
                      fmt::format("wiredtiger {}: {}", what, wiredtiger_strerror(rc)));
    return Status::Internal(fmt::format("wiredtiger {}: {}", what, wiredtiger_strerror(rc)));
}

WT_ITEM toItem(std::string_view s) {
    WT_ITEM item{};
    item.data = s.data();
    item.size = s.size();
    return item;
}

std::string_view toView(const WT_ITEM& item) {
    return {static_cast<const char*>(item.data), item.size};
}

// Calls cursor->reset and keeps the first error: a reset failure after a
// successful operation is still a failure.
int resetCursor(WT_CURSOR* cursor, int rc) {
    int resetRc = cursor->reset(cursor);
    return rc != 0 ? rc : resetRc;
}

class WiredTigerThread final : public StoreThread {
  public:
    WiredTigerThread(WT_SESSION* session, WT_CURSOR* cursor, WT_CURSOR* removeCursor)
        : session_(session), cursor_(cursor), removeCursor_(removeCursor) {}
    ~WiredTigerThread() override {
        // Closing the session rolls back an open transaction and closes its cursors.
        session_->close(session_, nullptr);
    }
    WiredTigerThread(const WiredTigerThread&) = delete;
    WiredTigerThread& operator=(const WiredTigerThread&) = delete;

    Status get(std::string_view key, std::string* value) override {
        return run("search", /*isWrite=*/false, [&] {
            WT_ITEM k = toItem(key);
            cursor_->set_key(cursor_, &k);
            int rc = cursor_->search(cursor_);
            if (rc == 0) {
                WT_ITEM v{};
                rc = cursor_->get_value(cursor_, &v);
                if (rc == 0)
                    value->assign(toView(v));  // valid only while positioned: copy before reset
            }
            return resetCursor(cursor_, rc);
        });
    }

    Status put(std::string_view key, std::string_view value) override {
        return run("insert", /*isWrite=*/true, [&] {
            WT_ITEM k = toItem(key);
            WT_ITEM v = toItem(value);
            cursor_->set_key(cursor_, &k);
            cursor_->set_value(cursor_, &v);
            return resetCursor(cursor_, cursor_->insert(cursor_));
        });
    }

    Status remove(std::string_view key) override {
        return run("remove", /*isWrite=*/true, [&] {
            WT_ITEM k = toItem(key);
            removeCursor_->set_key(removeCursor_, &k);
            return resetCursor(removeCursor_, removeCursor_->remove(removeCursor_));
        });
    }

    Status scan(std::string_view start, uint64_t limit, ScanResult* out) override {
        // A retried scan must not count the entries of the failed attempt twice.
        ScanResult before = *out;
        size_t collected = out->collect != nullptr ? out->collect->size() : 0;
        return run("scan", /*isWrite=*/false, [&] {
            *out = before;
            if (out->collect != nullptr)
                out->collect->resize(collected);
            return resetCursor(cursor_, scanOnce(start, limit, out));
        });
    }

    Status begin(TxnKind /*kind*/) override {
        if (txn_ != TxnState::kNone)
            return Status::IllegalOperation("wiredtiger begin: a transaction is already open");
        int rc = session_->begin_transaction(session_, "isolation=snapshot");
        if (rc != 0)
            return wtError(rc, "begin_transaction");
        txn_ = TxnState::kOpen;
        return Status::OK();
    }

    Status commit() override {
        if (txn_ != TxnState::kOpen)
            return Status::IllegalOperation("wiredtiger commit: no open transaction");
        int rc = session_->commit_transaction(session_, nullptr);
        if (rc == 0) {
            txn_ = TxnState::kNone;
            return Status::OK();
        }
        // A failed commit has already rolled the transaction back; the
        // caller's abort() then has nothing left to do.
        txn_ = TxnState::kRolledBack;
        return wtError(rc, "commit_transaction");
    }

    Status abort() override {
        if (txn_ == TxnState::kNone)
            return Status::OK();  // nothing open (store.h: abort is then a no-op)
        TxnState was = txn_;
        txn_ = TxnState::kNone;
        if (was == TxnState::kRolledBack)
            return Status::OK();
        int rc = session_->rollback_transaction(session_, nullptr);
        return rc == 0 ? Status::OK() : wtError(rc, "rollback_transaction");
    }

  private:
    enum class TxnState { kNone, kOpen, kRolledBack };

    // Runs one operation. Inside a transaction the result is returned as is
    // (WT_ROLLBACK becomes WriteConflict). Outside, the operation was an
    // implicit transaction that WiredTiger already rolled back on WT_ROLLBACK:
    // run it again, counting the retries of writes.
    template <typename Op>
    Status run(std::string_view what, bool isWrite, Op&& op) {
        for (int attempt = 0;; ++attempt) {
            int rc = op();
            if (rc == 0)
                return Status::OK();
            if (rc != WT_ROLLBACK || txn_ != TxnState::kNone)
                return wtError(rc, what);
            if (isWrite)
                ++conflicts_;
            // The conflicting writer is another thread's open transaction:
            // after a few quick retries give it the CPU to finish.
            if (attempt >= 3)
                std::this_thread::yield();
        }
    }

    int scanOnce(std::string_view start, uint64_t limit, ScanResult* out) {
        if (limit == 0)
            return 0;
        int rc = 0;
        if (start.empty()) {
            rc = cursor_->next(cursor_);
        } else {
            WT_ITEM k = toItem(start);
            cursor_->set_key(cursor_, &k);
            int exact = 0;
            rc = cursor_->search_near(cursor_, &exact);
            // search_near may land on the largest key below start.
            if (rc == 0 && exact < 0)
                rc = cursor_->next(cursor_);
        }
        for (uint64_t n = 0; rc == 0 && n < limit; ++n) {
            WT_ITEM k{};
            WT_ITEM v{};
            if ((rc = cursor_->get_key(cursor_, &k)) != 0 ||
                (rc = cursor_->get_value(cursor_, &v)) != 0)
                return rc;
            ++out->count;
            out->bytes += k.size + v.size;
            if (out->collect != nullptr)
                out->collect->emplace_back(toView(k), toView(v));
            if (n + 1 < limit)
                rc = cursor_->next(cursor_);
        }
        return rc == WT_NOTFOUND ? 0 : rc;  // the end of the table ends the scan
    }

    WT_SESSION* session_;
    WT_CURSOR* cursor_;        // overwrite=true: get, put (insert or overwrite), scan
    WT_CURSOR* removeCursor_;  // overwrite=false: remove of an absent key is WT_NOTFOUND
    TxnState txn_ = TxnState::kNone;
};

class WiredTigerStore final : public Store {
  public:
    explicit WiredTigerStore(WT_CONNECTION* conn) : conn_(conn) {}
    ~WiredTigerStore() override { conn_->close(conn_, nullptr); }
    WiredTigerStore(const WiredTigerStore&) = delete;
    WiredTigerStore& operator=(const WiredTigerStore&) = delete;

    StatusWith<std::unique_ptr<StoreThread>> thread() override {
        // WT_CONNECTION::open_session is thread-safe; the session is not.
        WT_SESSION* session = nullptr;
        int rc = conn_->open_session(conn_, nullptr, "isolation=snapshot", &session);
        if (rc != 0)
            return wtError(rc, "open_session");
        WT_CURSOR* cursor = nullptr;
        WT_CURSOR* removeCursor = nullptr;
        rc = session->open_cursor(session, kTableUri, nullptr, nullptr, &cursor);
        if (rc == 0)
            rc =
                session->open_cursor(session, kTableUri, nullptr, "overwrite=false", &removeCursor);
        if (rc != 0) {
            session->close(session, nullptr);
            return wtError(rc, "open_cursor");
        }
        return std::unique_ptr<StoreThread>(
            std::make_unique<WiredTigerThread>(session, cursor, removeCursor));
    }

  private:
    WT_CONNECTION* conn_;
};

std::string connectionConfig(const StoreOptions& options) {
    const uint64_t perKey = options.keySize + options.valueSize + 64;
    const uint64_t cacheBytes = std::max<uint64_t>(256ull << 20, 3 * options.expectedKeys * perKey);
    // Sessions: the bench threads, a few for the test or main thread, and
    // WiredTiger's own (log: 3, eviction, checkpoint, sweep).
    const int sessionMax = std::max(options.maxThreads, 1) + 32;
    const char* sync = options.sync == SyncMode::kFsync
                           ? "transaction_sync=(enabled=true,method=fsync)"
                           : "transaction_sync=(enabled=true,method=none)";
    return fmt::format(
        "create,cache_size={},session_max={},log=(enabled=true,archive=true),{},"
        "checkpoint=(wait=60),statistics=(none)",
        cacheBytes, sessionMax, sync);
}

constexpr const char* kTableConfig =
    "key_format=u,value_format=u,block_compressor=none,prefix_compression=false";

StatusWith<std::unique_ptr<Store>> openWiredTiger(const StoreOptions& options) {
    if (options.dir.empty())
        return Status::InvalidArgument("wiredtiger: StoreOptions::dir is empty");
    std::error_code ec;
    std::filesystem::create_directories(options.dir, ec);
    if (ec)
        return Status::IOError(
            fmt::format("wiredtiger: cannot create {}: {}", options.dir, ec.message()));

    WT_CONNECTION* conn = nullptr;
    const std::string config = connectionConfig(options);
    int rc = wiredtiger_open(options.dir.c_str(), nullptr, config.c_str(), &conn);
    if (rc != 0)
        return wtError(rc, fmt::format("wiredtiger_open({}, \"{}\")", options.dir, config));
    auto store = std::make_unique<WiredTigerStore>(conn);  // closes conn on every path below

    WT_SESSION* session = nullptr;
    rc = conn->open_session(conn, nullptr, nullptr, &session);
    if (rc != 0)
        return wtError(rc, "open_session");
    rc = session->create(session, kTableUri, kTableConfig);
    session->close(session, nullptr);
    if (rc != 0)
        return wtError(rc, fmt::format("create({}, \"{}\")", kTableUri, kTableConfig));
    return std::unique_ptr<Store>(std::move(store));
}

}  // namespace

StoreFactory wiredTigerStoreFactory() {
    int major = 0, minor = 0, patch = 0;
    wiredtiger_version(&major, &minor, &patch);
    return availableStore("wiredtiger", fmt::format("{}.{}.{}", major, minor, patch),
                          {SyncMode::kNone, SyncMode::kFsync}, openWiredTiger);
}
#endif

}  // namespace mvkv::bench
