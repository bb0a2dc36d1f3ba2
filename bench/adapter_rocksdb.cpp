// The RocksDB adapter (librocksdb-dev; Debian ships 7.8.3). Built only
// when meson finds the library; otherwise the factory says it is absent.
//
// Settings, and why they are the fair match for the other engines:
// - An OptimisticTransactionDB in StoreOptions::dir (the default column
//   family, the bytewise comparator: memcmp order). Optimistic, not
//   pessimistic, transactions: like WiredTiger and mvkv they take no locks and
//   detect conflicts by version; unlike them RocksDB detects a conflict only
//   at Commit(), as Busy.
// - No compression at any level (compression, bottommost_compression and
//   compression_per_level), as no other engine compresses.
// - An LRU block cache of max(256 MB, 2 x expectedKeys x (keySize +
//   valueSize)): the data set fits, as it fits in WiredTiger's cache and
//   in the page cache under LMDB's map. A 10-bit bloom filter per SST file,
//   RocksDB's usual point-lookup setting (it spares reads of SST files that
//   lack the key, which the B-tree engines never need to do).
// - Index and filter blocks stay out of the block cache
//   (cache_index_and_filter_blocks=false, RocksDB's default): each table
//   reader loads them when it opens its SST file and holds them until it
//   closes, and max_open_files=-1 (the default) keeps every reader open, so
//   they are pinned in memory and never evicted by data blocks. RocksDB's
//   tuning guide puts them in the cache (with L0 and top-level pinning) to
//   bound the memory of data sets larger than RAM; for one that fits, as
//   here, keeping them outside costs the same memory and skips a cache
//   lookup per index and filter probe.
// - settle(), run after the preload and before anything is timed, flushes
//   the memtable and compacts the whole key space (CompactRange waits for
//   it), as db_bench measures readrandom on a filled and compacted database:
//   otherwise reads would probe the memtable and a pile of L0 files the
//   background compactions have not reached yet, which measures the load's
//   leftovers rather than RocksDB's reads. It then reads every entry once
//   with fill_cache, so the block cache starts holding the data set as
//   WiredTiger's cache, LMDB's page cache and mvkv's memory already do after
//   their loads. Workloads without a preload (fillrandom, fillseq) measure
//   the write path and never settle.
// - Every scan creates its iterator (NewIterator, or the transaction's
//   GetIterator), RocksDB's ordinary use. Keeping one iterator per thread and
//   Refresh()ing it before each seek was measured (1M keys, 1 thread, after
//   settle, median of 3): seekrandom +25%, but ycsb-e -30%, so it is not
//   used: neither choice favours RocksDB on every workload.
// - IncreaseParallelism(2): flushes and compactions get background threads,
//   as the machine has 2 vCPUs. Memtables keep their defaults (64 MB).
// - The WAL is on in both sync modes. --sync none: WriteOptions::sync=false,
//   each write reaches the WAL file through the OS and is never synced (like
//   WiredTiger's unsynced log and LMDB's MDB_NOSYNC). --sync fsync:
//   sync=true, a write returns once the WAL is synced (group commit shares
//   the sync).
//
// Autocommit operations go to the base DB. They never conflict (a plain
// write is never checked), so conflicts() stays 0. remove() must report
// NotFound for an absent key, which RocksDB's Delete cannot tell (it writes a
// tombstone either way): it reads the key first, an extra point read per
// remove, and the two are not atomic (two threads removing one key may both
// see OK). Transactions read at the snapshot taken at begin (ReadOptions::
// snapshot; set_snapshot=true alone would only date the conflict check).
#include "store.h"

#if defined(MVKV_HAVE_ROCKSDB)
#include <fmt/format.h>
#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/optimistic_transaction_db.h>
#include <rocksdb/utilities/transaction.h>
#include <rocksdb/version.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#endif

namespace mvkv::bench {

#if !defined(MVKV_HAVE_ROCKSDB)
StoreFactory rocksDbStoreFactory() {
    StoreFactory f;
    f.name = "rocksdb";
    f.why = "not built: meson found no rocksdb (apt-get install librocksdb-dev, then reconfigure)";
    return f;
}
#else
namespace {

// Turns a rocksdb::Status into a Status; `what` names the call. Busy and
// TryAgain are how an optimistic transaction reports a conflict (TryAgain:
// the memtables no longer reach back to the snapshot, so it cannot tell).
Status rocksError(const rocksdb::Status& s, std::string_view what) {
    std::string message = fmt::format("rocksdb {}: {}", what, s.ToString());
    if (s.IsNotFound())
        return Status::NotFound(std::move(message));
    if (s.IsBusy() || s.IsTryAgain())
        return Status::WriteConflict(std::move(message));
    if (s.IsIOError())
        return Status::IOError(std::move(message));
    if (s.IsCorruption())
        return Status::Corruption(std::move(message));
    if (s.IsInvalidArgument())
        return Status::InvalidArgument(std::move(message));
    return Status::Internal(std::move(message));
}

rocksdb::Slice toSlice(std::string_view s) {
    return {s.data(), s.size()};
}

// RocksDB does not throw on its paths, but allocation can: no exception
// crosses the adapter. A try block costs nothing until something throws.
template <typename Fn>
auto guarded(std::string_view what, Fn&& fn) -> decltype(fn()) {
    try {
        return fn();
    } catch (const std::exception& e) {
        return Status::Internal(fmt::format("rocksdb {}: exception: {}", what, e.what()));
    }
}

class RocksDbThread final : public StoreThread {
  public:
    RocksDbThread(rocksdb::OptimisticTransactionDB* db, bool sync)
        : db_(db), base_(db->GetBaseDB()) {
        writeOptions_.sync = sync;
    }
    ~RocksDbThread() override {
        if (state_ != TxnState::kNone)
            txn_->Rollback().PermitUncheckedError();
    }
    RocksDbThread(const RocksDbThread&) = delete;
    RocksDbThread& operator=(const RocksDbThread&) = delete;

    Status get(std::string_view key, std::string* value) override {
        return guarded("get", [&] {
            rocksdb::Status s;
            if (inTxn()) {
                s = txn_->Get(txnRead_, toSlice(key), value);
            } else {
                s = base_->Get(autoRead_, base_->DefaultColumnFamily(), toSlice(key), &pinned_);
                if (s.ok())
                    value->assign(pinned_.data(), pinned_.size());
                pinned_.Reset();  // unpin the block (or release the memtable copy)
            }
            return s.ok() ? Status::OK() : rocksError(s, "get");
        });
    }

    Status put(std::string_view key, std::string_view value) override {
        return guarded("put", [&] {
            rocksdb::Status s = inTxn() ? txn_->Put(toSlice(key), toSlice(value))
                                        : base_->Put(writeOptions_, toSlice(key), toSlice(value));
            return s.ok() ? Status::OK() : rocksError(s, "put");
        });
    }

    Status remove(std::string_view key) override {
        return guarded("remove", [&] {
            // Delete writes a tombstone whether or not the key exists: read first.
            rocksdb::Status s;
            if (inTxn()) {
                s = txn_->Get(txnRead_, toSlice(key), &scratch_);
                if (s.ok())
                    s = txn_->Delete(toSlice(key));
            } else {
                s = base_->Get(autoRead_, base_->DefaultColumnFamily(), toSlice(key), &pinned_);
                pinned_.Reset();
                if (s.ok())
                    s = base_->Delete(writeOptions_, toSlice(key));
            }
            return s.ok() ? Status::OK() : rocksError(s, "remove");
        });
    }

    Status scan(std::string_view start, uint64_t limit, ScanResult* out) override {
        return guarded("scan", [&] {
            // In a transaction the iterator merges its own writes over its snapshot.
            std::unique_ptr<rocksdb::Iterator> it(inTxn() ? txn_->GetIterator(txnRead_)
                                                          : base_->NewIterator(autoRead_));
            uint64_t n = 0;
            for (it->Seek(toSlice(start)); n < limit && it->Valid(); it->Next(), ++n) {
                rocksdb::Slice k = it->key();
                rocksdb::Slice v = it->value();
                ++out->count;
                out->bytes += k.size() + v.size();
                if (out->collect != nullptr)
                    out->collect->emplace_back(k.ToStringView(), v.ToStringView());
            }
            rocksdb::Status s = it->status();
            return s.ok() ? Status::OK() : rocksError(s, "scan");
        });
    }

    Status begin(TxnKind /*kind*/) override {
        if (state_ != TxnState::kNone)
            return Status::IllegalOperation("rocksdb begin: a transaction is already open");
        return guarded("begin", [&] {
            rocksdb::OptimisticTransactionOptions txnOptions;
            txnOptions.set_snapshot = true;  // conflicts are checked against writes after begin
            // Reuses the previous transaction's object (no allocation per transaction).
            rocksdb::Transaction* txn =
                db_->BeginTransaction(writeOptions_, txnOptions, txn_.get());
            if (txn != txn_.get())
                txn_.reset(txn);
            txnRead_ = rocksdb::ReadOptions();
            txnRead_.snapshot = txn_->GetSnapshot();  // reads see the same snapshot
            state_ = TxnState::kOpen;
            return Status::OK();
        });
    }

    Status commit() override {
        if (state_ != TxnState::kOpen)
            return Status::IllegalOperation("rocksdb commit: no open transaction");
        return guarded("commit", [&] {
            rocksdb::Status s = txn_->Commit();
            if (!s.ok()) {
                // The contract leaves a failed transaction open until abort().
                state_ = TxnState::kFailed;
                return rocksError(s, "commit");
            }
            finish();
            return Status::OK();
        });
    }

    Status abort() override {
        if (state_ == TxnState::kNone)
            return Status::OK();  // nothing open (store.h: abort is then a no-op)
        return guarded("abort", [&] {
            rocksdb::Status s = txn_->Rollback();
            finish();
            return s.ok() ? Status::OK() : rocksError(s, "rollback");
        });
    }

  private:
    enum class TxnState { kNone, kOpen, kFailed };

    bool inTxn() const { return state_ != TxnState::kNone; }

    // Releases the snapshot now: a reused transaction object would otherwise
    // hold it until the next begin and keep compaction from dropping versions.
    void finish() {
        txn_->ClearSnapshot();
        txnRead_.snapshot = nullptr;
        state_ = TxnState::kNone;
    }

    rocksdb::OptimisticTransactionDB* db_;
    rocksdb::DB* base_;
    rocksdb::WriteOptions writeOptions_;
    const rocksdb::ReadOptions autoRead_;  // autocommit reads: the latest committed data
    rocksdb::PinnableSlice pinned_;  // autocommit get: pins the block instead of copying twice
    std::string scratch_;            // the value read by remove() in a transaction
    std::unique_ptr<rocksdb::Transaction> txn_;
    rocksdb::ReadOptions txnRead_;
    TxnState state_ = TxnState::kNone;
};

class RocksDbStore final : public Store {
  public:
    RocksDbStore(std::unique_ptr<rocksdb::OptimisticTransactionDB> db, bool sync)
        : db_(std::move(db)), sync_(sync) {}
    ~RocksDbStore() override { db_->Close().PermitUncheckedError(); }
    RocksDbStore(const RocksDbStore&) = delete;
    RocksDbStore& operator=(const RocksDbStore&) = delete;

    StatusWith<std::unique_ptr<StoreThread>> thread() override {
        return guarded("thread", [&]() -> StatusWith<std::unique_ptr<StoreThread>> {
            return std::unique_ptr<StoreThread>(std::make_unique<RocksDbThread>(db_.get(), sync_));
        });
    }

    // The header comment says why: flush, compact everything, warm the block cache.
    Status settle() override {
        return guarded("settle", [&]() -> Status {
            rocksdb::FlushOptions flush;
            flush.wait = true;
            rocksdb::Status s = db_->Flush(flush);
            if (!s.ok())
                return rocksError(s, "flush");
            rocksdb::CompactRangeOptions compact;
            compact.exclusive_manual_compaction = true;  // no automatic compaction alongside
            s = db_->CompactRange(compact, nullptr, nullptr);  // the whole key space; waits
            if (!s.ok())
                return rocksError(s, "compact range");
            rocksdb::ReadOptions warm;
            warm.fill_cache = true;
            std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(warm));
            for (it->SeekToFirst(); it->Valid(); it->Next()) {
            }
            s = it->status();
            return s.ok() ? Status::OK() : rocksError(s, "warm the block cache");
        });
    }

    // Cheap in-memory properties: what the caches hold and how far the LSM tree has grown.
    std::vector<std::pair<std::string, double>> engineMetrics() override {
        std::vector<std::pair<std::string, double>> metrics;
        const std::pair<const char*, const std::string*> properties[] = {
            {"block_cache_bytes", &rocksdb::DB::Properties::kBlockCacheUsage},
            {"memtable_bytes", &rocksdb::DB::Properties::kCurSizeAllMemTables},
            {"sst_bytes", &rocksdb::DB::Properties::kLiveSstFilesSize},
        };
        for (const auto& [name, property] : properties) {
            uint64_t value = 0;
            if (db_->GetIntProperty(*property, &value))
                metrics.emplace_back(name, double(value));
        }
        std::string l0;
        if (db_->GetProperty(rocksdb::DB::Properties::kNumFilesAtLevelPrefix + "0", &l0))
            metrics.emplace_back("l0_files", std::strtod(l0.c_str(), nullptr));
        return metrics;
    }

  private:
    std::unique_ptr<rocksdb::OptimisticTransactionDB> db_;
    bool sync_;
};

rocksdb::Options rocksOptions(const StoreOptions& options) {
    rocksdb::Options o;
    o.create_if_missing = true;
    o.IncreaseParallelism(2);
    o.compression = rocksdb::kNoCompression;
    o.bottommost_compression = rocksdb::kNoCompression;
    o.compression_per_level.clear();  // kNoCompression everywhere

    const uint64_t dataBytes = options.expectedKeys * (options.keySize + options.valueSize);
    rocksdb::BlockBasedTableOptions table;
    table.block_cache = rocksdb::NewLRUCache(std::max<uint64_t>(256ull << 20, 2 * dataBytes));
    table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    table.cache_index_and_filter_blocks = false;  // held by the table readers (header comment)
    o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
    return o;
}

StatusWith<std::unique_ptr<Store>> openRocksDb(const StoreOptions& options) {
    if (options.dir.empty())
        return Status::InvalidArgument("rocksdb: StoreOptions::dir is empty");
    try {
        rocksdb::OptimisticTransactionDB* raw = nullptr;
        rocksdb::Status s =
            rocksdb::OptimisticTransactionDB::Open(rocksOptions(options), options.dir, &raw);
        if (!s.ok())
            return rocksError(s, fmt::format("open({})", options.dir));
        std::unique_ptr<rocksdb::OptimisticTransactionDB> db(raw);
        return std::unique_ptr<Store>(
            std::make_unique<RocksDbStore>(std::move(db), options.sync == SyncMode::kFsync));
    } catch (const std::exception& e) {
        return Status::Internal(
            fmt::format("rocksdb open({}): exception: {}", options.dir, e.what()));
    }
}

}  // namespace

StoreFactory rocksDbStoreFactory() {
    return availableStore("rocksdb",
                          fmt::format("{}.{}.{}", ROCKSDB_MAJOR, ROCKSDB_MINOR, ROCKSDB_PATCH),
                          {SyncMode::kNone, SyncMode::kFsync}, openRocksDb);
}
#endif

}  // namespace mvkv::bench
