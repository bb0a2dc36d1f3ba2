// Storage workloads: the same operations run on every engine (store.h), one
// table per workload with a row per engine and thread count.
//
// How a case runs (storage_runner.cpp): for each selected engine and thread
// count the driver forks a child process, which
//   1. opens the engine in a fresh directory <dir>/<workload>-<engine>-t<N>
//      with the run's --sync mode and caches sized for the data set;
//   2. loads --keys keys (key(0) .. key(keys-1) in key order, values stamped
//      with their index, 1000 puts per transaction) unless the workload
//      starts empty (the fills);
//   3. runs the workload's timed part with N threads (the harness's start
//      barrier, --duration or --ops, per-op latency);
//   4. reports ops/s, latency percentiles, peak RSS (its own ru_maxrss: one
//      engine, one data set) and bytes on disk (blocks allocated under its
//      directory at the end of the run, before closing), and exits.
// So every case starts from the same state, and no engine's memory or files
// are charged to another. The directory is removed afterwards.
//
// Adding a workload: write its StorageSpec (a run function timing the
// operations with timeStoreOps()) and add it to storageSpecs().
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "keys.h"
#include "store.h"
#include "workload.h"

namespace mvkv::bench {

/// What a workload's run function sees, inside the child process.
struct StorageContext {
    const BenchConfig& config;
    Store& store;
    std::string workload;
    std::string engine;
    std::string dir;  // the engine's directory
    KeyFormat keys;
    ValueFormat values;
    uint64_t loadedKeys = 0;  // key(0) .. key(loadedKeys - 1) are present
    RunLimits limits;         // from --duration/--ops, with latency recording on

    /// The workload's key distribution: --distribution, or `fallback`.
    Distribution distribution(Distribution fallback) const;
    uint64_t seed(int thread) const { return threadSeed(config.seed, workload, thread); }
    /// Megabytes allocated on disk under dir (st_blocks: sparse maps count what they use).
    double diskMb() const;
    /// A handle for the calling thread; throws std::runtime_error on failure.
    std::unique_ptr<StoreThread> openThread() const;
};

struct StorageRun {
    Measurement measurement;
    std::vector<Metric> metrics;  // the workload's own columns
};

struct StorageSpec {
    std::string name;
    std::string description;
    bool preload = true;  // false: starts empty (fillseq, fillrandom)
    std::function<StorageRun(StorageContext&, int threads)> run;
};

/// Every storage workload in the default run order.
std::vector<StorageSpec> storageSpecs();
std::vector<StorageSpec> basicStorageSpecs();  // db_bench's: fills, reads, seeks, deletes
std::vector<StorageSpec> ycsbStorageSpecs();   // YCSB A-F
std::vector<StorageSpec> txnStorageSpecs();    // transfer, hotkey, longsnapshot

/// A count one thread keeps without writing shared memory per op, added to
/// `total` when the thread's op (the last copy of its shared_ptr) is
/// destroyed, which runParallel does before it returns.
class LocalTally {
  public:
    explicit LocalTally(std::shared_ptr<std::atomic<uint64_t>> total) : total_(std::move(total)) {}
    ~LocalTally() { total_->fetch_add(n_, std::memory_order_relaxed); }
    LocalTally(const LocalTally&) = delete;
    LocalTally& operator=(const LocalTally&) = delete;
    void add(uint64_t n = 1) { n_ += n; }

  private:
    std::shared_ptr<std::atomic<uint64_t>> total_;
    uint64_t n_ = 0;
};

/// Throws std::runtime_error("<what>: <status>") unless `s` is OK.
void check(const Status& s, std::string_view what);

/// Runs `threads` threads, each with its own StoreThread made on it, timing
/// makeOp(threadIndex, handle)'s op. The handle outlives the op.
template <class MakeOp>
Measurement timeStoreOps(StorageContext& ctx, int threads, MakeOp&& makeOp) {
    return runParallel(threads, ctx.limits, [&](int t) {
        auto handle = std::shared_ptr<StoreThread>(ctx.openThread());
        auto op = makeOp(t, *handle);
        return [handle, op]() mutable { op(); };
    });
}

/// A thread beside the timed ones (readwhilewriting's writer,
/// longsnapshot's snapshot holder): on its own StoreThread it calls
/// setup(), then step() until stop(), then teardown(). The constructor
/// returns once setup() is done, so the timed threads start after it.
class BackgroundThread {
  public:
    struct Steps {
        std::function<void(StoreThread&)> setup;     // optional
        std::function<void(StoreThread&)> step;      // one operation
        std::function<void(StoreThread&)> teardown;  // optional
    };
    /// Throws std::runtime_error when setup fails.
    BackgroundThread(StorageContext& ctx, Steps steps);
    ~BackgroundThread();  // stops if stop() was not called
    BackgroundThread(const BackgroundThread&) = delete;
    BackgroundThread& operator=(const BackgroundThread&) = delete;

    struct Result {
        uint64_t steps = 0;
        double seconds = 0;
        double stepsPerSec() const { return seconds > 0 ? double(steps) / seconds : 0; }
    };
    /// Stops and joins. Throws std::runtime_error if a step or teardown failed.
    Result stop();

  private:
    void run(StorageContext& ctx, Steps steps);

    std::atomic<bool> stop_{false};
    std::mutex mutex_;
    std::condition_variable cv_;
    bool ready_ = false;  // guarded by mutex_: setup finished (or failed)
    std::string error_;   // guarded by mutex_ until joined
    Result result_;
    std::thread thread_;
};

}  // namespace mvkv::bench
