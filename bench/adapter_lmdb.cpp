// The LMDB adapter: the baseline every ratio is taken against.
//
// Settings: one environment in StoreOptions::dir, the unnamed database,
// MDB_NOTLS (read transactions are not bound to threads, so a thread may hold
// a reader and also write, as YCSB's mixed workloads do) and MDB_NORDAHEAD
// (random access: readahead only pollutes the page cache; lmdb.h says it
// helps once the file outgrows RAM, and it changes nothing while the file,
// just written, sits in the page cache).
// --sync none adds MDB_NOSYNC | MDB_NOMETASYNC (commits leave their pages in
// the file's page cache and never sync) and MDB_WRITEMAP: lmdb.h says a
// writable map "may be slightly faster for DBs that fit entirely in RAM",
// the case measured here. Commits then write their pages straight into the
// shared map, which is the page cache, instead of malloc'd copies written
// out with pwrite (measured: fillrandom, overwrite and ycsb-a 2-4x faster,
// reads unchanged); MDB_NOMEMINIT (skip zeroing those copies) has nothing
// left to skip. It gives up the read-only map's protection from wild
// pointer writes by the application, which a benchmark does not need.
// --sync fsync is LMDB's default synchronous commit, without MDB_WRITEMAP:
// with it each commit msyncs the whole map, measured 2-4x slower per commit.
// The map is sparse and sized far above the data set (copy-on-write and
// readers that pin old pages make the file grow); disk MB counts the blocks
// the file uses, not its sparse length.
//
// Reads outside a transaction use one read-only txn per thread, reset after
// each operation and renewed before the next: LMDB's documented fast path.
// Writes outside a transaction are one write txn each; LMDB has a single
// writer, so concurrent writers queue on its mutex and never conflict.
#include <lmdb.h>

#include <algorithm>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "store.h"

namespace mvkv::bench {
namespace {

Status lmdbError(int rc, std::string_view what) {
    if (rc == MDB_NOTFOUND)
        return Status::NotFound(fmt::format("{}: key not found", what));
    return Status::Internal(fmt::format("lmdb {}: {}", what, mdb_strerror(rc)));
}

MDB_val toVal(std::string_view s) {
    return MDB_val{s.size(), const_cast<char*>(s.data())};
}

std::string_view toView(const MDB_val& v) {
    return {static_cast<const char*>(v.mv_data), v.mv_size};
}

class LmdbThread final : public StoreThread {
  public:
    LmdbThread(MDB_env* env, MDB_dbi dbi, MDB_txn* reader) : env_(env), dbi_(dbi), reader_(reader) {}
    ~LmdbThread() override {
        if (txn_ != nullptr && txn_ != reader_)
            mdb_txn_abort(txn_);
        mdb_txn_abort(reader_);
    }
    LmdbThread(const LmdbThread&) = delete;
    LmdbThread& operator=(const LmdbThread&) = delete;

    Status get(std::string_view key, std::string* value) override {
        return withReadTxn("mdb_get", [&](MDB_txn* txn) {
            MDB_val k = toVal(key);
            MDB_val v;
            int rc = mdb_get(txn, dbi_, &k, &v);
            if (rc == MDB_SUCCESS)
                value->assign(toView(v));
            return rc;
        });
    }
    Status put(std::string_view key, std::string_view value) override {
        return withWriteTxn("mdb_put", [&](MDB_txn* txn) {
            MDB_val k = toVal(key);
            MDB_val v = toVal(value);
            return mdb_put(txn, dbi_, &k, &v, 0);
        });
    }
    Status remove(std::string_view key) override {
        return withWriteTxn("mdb_del", [&](MDB_txn* txn) {
            MDB_val k = toVal(key);
            return mdb_del(txn, dbi_, &k, nullptr);
        });
    }
    Status scan(std::string_view start, uint64_t limit, ScanResult* out) override {
        return withReadTxn("scan", [&](MDB_txn* txn) {
            MDB_cursor* cursor = nullptr;
            int rc = mdb_cursor_open(txn, dbi_, &cursor);
            if (rc != MDB_SUCCESS)
                return rc;
            MDB_val k = toVal(start);
            MDB_val v;
            rc = mdb_cursor_get(cursor, &k, &v, start.empty() ? MDB_FIRST : MDB_SET_RANGE);
            for (uint64_t n = 0; rc == MDB_SUCCESS && n < limit; ++n) {
                ++out->count;
                out->bytes += k.mv_size + v.mv_size;
                if (out->collect != nullptr)
                    out->collect->emplace_back(toView(k), toView(v));
                rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT);
            }
            mdb_cursor_close(cursor);
            return rc == MDB_NOTFOUND ? MDB_SUCCESS : rc;  // the end of the data is no error
        });
    }

    Status begin(TxnKind kind) override {
        if (txn_ != nullptr)
            return Status::IllegalOperation("lmdb: a transaction is already running");
        if (kind == TxnKind::kReadOnly) {
            int rc = mdb_txn_renew(reader_);
            if (rc != MDB_SUCCESS)
                return lmdbError(rc, "mdb_txn_renew");
            txn_ = reader_;
            readOnly_ = true;
            return Status::OK();
        }
        int rc = mdb_txn_begin(env_, nullptr, 0, &txn_);
        if (rc != MDB_SUCCESS) {
            txn_ = nullptr;
            return lmdbError(rc, "mdb_txn_begin");
        }
        readOnly_ = false;
        return Status::OK();
    }
    Status commit() override {
        if (txn_ == nullptr)
            return Status::IllegalOperation("lmdb: no transaction to commit");
        MDB_txn* txn = std::exchange(txn_, nullptr);
        if (readOnly_) {
            mdb_txn_reset(txn);
            return Status::OK();
        }
        int rc = mdb_txn_commit(txn);  // frees the txn even when it fails
        return rc == MDB_SUCCESS ? Status::OK() : lmdbError(rc, "mdb_txn_commit");
    }
    Status abort() override {
        if (txn_ == nullptr)
            return Status::OK();
        MDB_txn* txn = std::exchange(txn_, nullptr);
        if (readOnly_)
            mdb_txn_reset(txn);
        else
            mdb_txn_abort(txn);
        return Status::OK();
    }

  private:
    // Runs `body` in the open transaction, or in the renewed reader.
    template <class Body>
    Status withReadTxn(std::string_view what, Body&& body) {
        if (txn_ != nullptr) {
            int rc = body(txn_);
            return rc == MDB_SUCCESS ? Status::OK() : lmdbError(rc, what);
        }
        int rc = mdb_txn_renew(reader_);
        if (rc != MDB_SUCCESS)
            return lmdbError(rc, "mdb_txn_renew");
        rc = body(reader_);
        mdb_txn_reset(reader_);
        return rc == MDB_SUCCESS ? Status::OK() : lmdbError(rc, what);
    }
    // Runs `body` in the open write transaction, or in one of its own.
    template <class Body>
    Status withWriteTxn(std::string_view what, Body&& body) {
        if (txn_ != nullptr) {
            if (readOnly_)
                return Status::IllegalOperation("lmdb: write in a read-only transaction");
            int rc = body(txn_);
            return rc == MDB_SUCCESS ? Status::OK() : lmdbError(rc, what);
        }
        MDB_txn* txn = nullptr;
        int rc = mdb_txn_begin(env_, nullptr, 0, &txn);
        if (rc != MDB_SUCCESS)
            return lmdbError(rc, "mdb_txn_begin");
        rc = body(txn);
        if (rc != MDB_SUCCESS) {
            mdb_txn_abort(txn);
            return lmdbError(rc, what);
        }
        rc = mdb_txn_commit(txn);
        return rc == MDB_SUCCESS ? Status::OK() : lmdbError(rc, "mdb_txn_commit");
    }

    MDB_env* env_;
    MDB_dbi dbi_;
    MDB_txn* reader_;         // this handle's read-only txn, reset between uses
    MDB_txn* txn_ = nullptr;  // the open transaction (reader_ when read-only)
    bool readOnly_ = false;
};

class LmdbStore final : public Store {
  public:
    LmdbStore(MDB_env* env, MDB_dbi dbi) : env_(env), dbi_(dbi) {}
    ~LmdbStore() override { mdb_env_close(env_); }
    LmdbStore(const LmdbStore&) = delete;
    LmdbStore& operator=(const LmdbStore&) = delete;

    StatusWith<std::unique_ptr<StoreThread>> thread() override {
        MDB_txn* reader = nullptr;
        int rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &reader);
        if (rc != MDB_SUCCESS)
            return lmdbError(rc, "mdb_txn_begin(MDB_RDONLY)");
        mdb_txn_reset(reader);
        return std::unique_ptr<StoreThread>(new LmdbThread(env_, dbi_, reader));
    }

  private:
    MDB_env* env_;
    MDB_dbi dbi_;
};

StatusWith<std::unique_ptr<Store>> openLmdb(const StoreOptions& options) {
    MDB_env* env = nullptr;
    int rc = mdb_env_create(&env);
    if (rc != MDB_SUCCESS)
        return lmdbError(rc, "mdb_env_create");
    auto fail = [&](int code, std::string_view what) -> Status {
        mdb_env_close(env);
        return lmdbError(code, what);
    };
    size_t perKey = options.keySize + options.valueSize + 64;
    size_t mapSize = std::max<size_t>(size_t{16} << 30, options.expectedKeys * perKey * 16);
    if ((rc = mdb_env_set_mapsize(env, mapSize)) != MDB_SUCCESS)
        return fail(rc, "mdb_env_set_mapsize");
    if ((rc = mdb_env_set_maxreaders(env, unsigned(std::max(126, 4 * options.maxThreads + 8)))) !=
        MDB_SUCCESS)
        return fail(rc, "mdb_env_set_maxreaders");
    unsigned flags = MDB_NOTLS | MDB_NORDAHEAD;
    if (options.sync == SyncMode::kNone)
        flags |= MDB_NOSYNC | MDB_NOMETASYNC | MDB_WRITEMAP;
    if ((rc = mdb_env_open(env, options.dir.c_str(), flags, 0644)) != MDB_SUCCESS)
        return fail(rc, "mdb_env_open");
    MDB_txn* txn = nullptr;
    if ((rc = mdb_txn_begin(env, nullptr, 0, &txn)) != MDB_SUCCESS)
        return fail(rc, "mdb_txn_begin");
    MDB_dbi dbi = 0;
    if ((rc = mdb_dbi_open(txn, nullptr, 0, &dbi)) != MDB_SUCCESS) {
        mdb_txn_abort(txn);
        return fail(rc, "mdb_dbi_open");
    }
    if ((rc = mdb_txn_commit(txn)) != MDB_SUCCESS)
        return fail(rc, "mdb_txn_commit");
    return std::unique_ptr<Store>(new LmdbStore(env, dbi));
}

}  // namespace

StoreFactory lmdbStoreFactory() {
    int major = 0, minor = 0, patch = 0;
    mdb_version(&major, &minor, &patch);
    return availableStore("lmdb", fmt::format("{}.{}.{}", major, minor, patch),
                          {SyncMode::kNone, SyncMode::kFsync}, openLmdb);
}

}  // namespace mvkv::bench
