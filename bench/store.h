// The engine adapter interface of mvkv-bench's storage workloads.
//
// Every engine the bench compares (mvkv, LMDB, WiredTiger, RocksDB) is a
// Store: one open database in its own fresh directory, with one key space of
// byte-string keys in memcmp order. Each benchmark thread makes its own
// StoreThread (on that thread: LMDB and WiredTiger bind handles to it) and
// uses only that.
//
// Operations outside a transaction are autocommit: one transaction each, as
// durable as StoreOptions::sync asks. Between begin() and commit()/abort()
// they belong to that transaction, which reads one snapshot (snapshot
// isolation; LMDB serialises write transactions instead, so it never reports
// a conflict).
//
// Errors are Status values; a Store never throws. The codes the workloads act
// on:
//   - NotFound: get/remove of an absent key;
//   - WriteConflict: inside a transaction, put/remove/commit found another
//     transaction's write. The transaction is then still open and the caller
//     must abort() it (and retry the whole transaction if it wants to);
//   - anything else: a failure; the workload stops and reports it.
// Autocommit writes never return WriteConflict: the adapter retries them (as
// mvkv's implicit writes and MongoDB's writeConflictRetry do) and counts each
// retry in conflicts().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mvkv/status.h"

namespace mvkv::bench {

enum class SyncMode {
    kNone,   // commit leaves durability to the OS (MDB_NOSYNC, no log sync, no WAL sync)
    kFsync,  // commit returns once its data is on stable storage
};
std::string_view syncModeName(SyncMode mode);

struct StoreOptions {
    std::string dir;  // a fresh empty directory the store may fill (unused by in-memory stores)
    SyncMode sync = SyncMode::kNone;
    int profileLevel = 0;  // mvkv only: the profiler level of its database (0 off)
    // Sizing hints: caches and maps are made large enough for this data set.
    uint64_t expectedKeys = 0;
    size_t keySize = 16;
    size_t valueSize = 100;
    int maxThreads = 2;
};

/// What scan() saw: the number of entries, the key and value bytes touched,
/// and (when the caller asks for them) the entries themselves.
struct ScanResult {
    uint64_t count = 0;
    uint64_t bytes = 0;
    std::vector<std::pair<std::string, std::string>>* collect = nullptr;  // optional
};

enum class TxnKind { kReadOnly, kReadWrite };

/// One thread's handle on a Store. Not thread-safe: one thread, the one that
/// made it. Destroy every StoreThread before its Store.
class StoreThread {
  public:
    virtual ~StoreThread() = default;

    /// Copies the value of `key` into `*value` (NotFound when absent).
    virtual Status get(std::string_view key, std::string* value) = 0;
    /// Inserts or overwrites.
    virtual Status put(std::string_view key, std::string_view value) = 0;
    /// Deletes `key` (NotFound when absent).
    virtual Status remove(std::string_view key) = 0;
    /// Visits up to `limit` entries from the first key >= `start` in key
    /// order (an empty start is the first key). Adds to `*out`.
    virtual Status scan(std::string_view start, uint64_t limit, ScanResult* out) = 0;

    /// Starts a transaction; kReadOnly promises it will only read (LMDB then
    /// takes a reader slot instead of the single writer lock).
    virtual Status begin(TxnKind kind) = 0;
    virtual Status commit() = 0;
    /// Rolls back the open transaction. OK when none is open (the engine may
    /// have rolled it back already on the conflict it reported).
    virtual Status abort() = 0;

    /// Write conflicts this thread retried internally (autocommit writes).
    uint64_t conflicts() const { return conflicts_; }

  protected:
    uint64_t conflicts_ = 0;
};

/// An open database. Thread-safe for thread(); everything else from one
/// thread at a time.
class Store {
  public:
    virtual ~Store() = default;
    /// A handle for the calling thread.
    virtual StatusWith<std::unique_ptr<StoreThread>> thread() = 0;
    /// Engine-specific figures shown by some workloads (e.g. mvkv's history
    /// and chain lengths), name -> value. Empty when the engine has none.
    virtual std::vector<std::pair<std::string, double>> engineMetrics() { return {}; }
    /// Brings a freshly loaded store to the state its engine's own
    /// benchmarks read from, before any timed operation: the runner calls it
    /// once after the preload. Returns when that state is reached. RocksDB
    /// flushes and compacts (db_bench reads a filled and compacted database);
    /// the B-tree engines and mvkv are already there, so the default does
    /// nothing.
    virtual Status settle() { return Status::OK(); }
};

/// One engine the bench knows about. `available` is false when the build did
/// not find its library (then `why` says so and `open` is empty).
struct StoreFactory {
    std::string name;     // "mvkv", "lmdb", "wiredtiger", "rocksdb"
    std::string version;  // the library's own version string
    bool available = false;
    std::string why;      // when not available
    /// Sync modes the engine supports today; others are reported as skipped.
    std::vector<SyncMode> syncModes;
    std::function<StatusWith<std::unique_ptr<Store>>(const StoreOptions&)> open;
};

/// An available engine's factory.
StoreFactory availableStore(std::string name, std::string version, std::vector<SyncMode> syncModes,
                            std::function<StatusWith<std::unique_ptr<Store>>(const StoreOptions&)> open);

/// Every engine, available or not, in the bench's fixed order (mvkv, lmdb,
/// wiredtiger, rocksdb).
const std::vector<StoreFactory>& storeFactories();
const StoreFactory* findStoreFactory(std::string_view name);

// The adapters (one file each); the optional ones return an unavailable
// factory when meson did not find their library.
StoreFactory mvkvStoreFactory();
StoreFactory lmdbStoreFactory();
StoreFactory wiredTigerStoreFactory();
StoreFactory rocksDbStoreFactory();

}  // namespace mvkv::bench
