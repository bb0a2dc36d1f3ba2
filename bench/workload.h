// mvkv-bench workloads: the registry, the run configuration and result rows.
//
// A workload is a named function that runs its cases (one case = one thing
// measured, e.g. "autoget_is") at each requested thread count and returns one
// ResultRow per (case, thread count). main.cpp prints the rows as a table and
// writes them to --json; it knows nothing about any particular workload.
//
// Adding a workload (e.g. "fillseq" against mvkv/LMDB/WiredTiger):
//   1. Create bench/workload_<name>.cpp defining
//        void register<Name>Workload(WorkloadRegistry& registry)
//      that calls registry.add({name, description, caseNames, runFunction}).
//      Time with runParallel()/repeatRuns() from harness.h so every workload
//      shares the start barrier, duration/--ops handling and --repeat
//      (limitsFor(config) gives the limits; toRow() makes a Measurement a row).
//   2. Declare it below and call it from registerBuiltinWorkloads()
//      (workload.cpp). Registration is explicit, not by static initializers,
//      so the order is fixed and nothing depends on link order.
//   3. Add the file to bench_lib in bench/meson.build: it sees the public
//      API (include/mvkv/) alone. Only a component benchmark, one timing an
//      internal component the public API does not reach, goes into
//      bench_components_lib instead (bench/meson.build says which and why).
// Workload-specific numbers (ratios, MB/s, latency percentiles) go into
// ResultRow::metrics; the table grows one column per metric name.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mvkv::bench {

/// What the command line asked for; shared by every workload.
struct BenchConfig {
    std::vector<int> threads{1, 2};  // ascending, no duplicates
    double durationSeconds = 0.2;    // per case and thread count
    uint64_t opsPerThread = 0;       // > 0: run exactly this many ops per thread instead
    int repeat = 1;                  // runs per case; the median (by ops/s) is reported
    std::vector<std::string> cases;  // empty: every case of the selected workloads
    // Data set of the storage workloads: keys loaded before timing.
    uint64_t keys = 50000;
    size_t keySize = 16;     // bytes per key (>= 8)
    size_t valueSize = 100;  // bytes per value
    // Storage workloads (storage_workload.h).
    std::vector<std::string> engines;  // empty: every engine built in
    bool syncFsync = false;            // --sync fsync (default none)
    int profileLevel = 0;              // --profile-level: mvkv's profiler on the bench database
    std::string distribution;          // "uniform" / "zipfian"; empty: each workload's default
    uint64_t seed = 42;
    std::string dir;  // parent of the engines' directories; empty: $TMPDIR (or /tmp)
    bool fork = true;  // each storage case in a child process (--no-fork: in this one, to profile)

    /// True when `caseName` was not filtered out by --cases.
    bool wantCase(std::string_view caseName) const;
};

/// A workload-specific number shown as an extra column, e.g. {"ratio", 5.1, "x"}.
struct Metric {
    std::string name;
    double value = 0;
    std::string unit;  // appended to the printed value ("x", "MB/s"...)
};

struct ResultRow {
    std::string workload;
    std::string caseName;
    int threads = 1;
    uint64_t ops = 0;        // total over all threads
    double seconds = 0;      // wall time: first thread started to last thread finished
    double opsPerSec = 0;    // ops / seconds (all threads together)
    double nsPerOp = 0;      // per thread: mean over threads of elapsed / own ops
    double cpuPercent = -1;  // thread CPU time / thread wall time (-1: not measured)
    std::vector<Metric> metrics;
    std::string error;    // non-empty: the case failed; the numbers are not valid
    std::string skipped;  // non-empty: the case was not run, for this reason (not a failure)

    void setMetric(std::string name, double value, std::string unit = {});
    std::optional<double> metric(std::string_view name) const;
};

struct WorkloadResult {
    std::vector<ResultRow> rows;
    std::vector<std::string> notes;  // printed under the table (e.g. target checks)
    std::string caseColumn = "case";  // the first column's header ("engine" for storage)
};

using WorkloadFn = std::function<WorkloadResult(const BenchConfig&)>;

struct Workload {
    std::string name;
    std::string description;
    std::vector<std::string> caseNames;  // for --list and --cases validation
    WorkloadFn run;
};

class WorkloadRegistry {
  public:
    /// Throws std::invalid_argument on an empty or duplicate name.
    void add(Workload workload);
    const Workload* find(std::string_view name) const;
    /// In registration order.
    const std::vector<Workload>& all() const { return workloads_; }

  private:
    std::vector<Workload> workloads_;
};

// ---- Helpers for workloads ----

/// Where workloads make their directories: --dir, else $TMPDIR (or /tmp).
std::filesystem::path baseDirectory(const BenchConfig& config);

/// Sets metric `name` on every row to nsPerOp / nsPerOp of the `baselineCase`
/// row with the same thread count (rows without a baseline are left alone).
void addRatioToBaseline(std::vector<ResultRow>& rows, std::string_view baselineCase,
                        const std::string& name = "ratio");
/// Sets metric `name` on every row with threads > 1 to opsPerSec / opsPerSec
/// of the same case at 1 thread (when 1 thread was measured).
void addScaling(std::vector<ResultRow>& rows, const std::string& name = "scaling");
/// The row of `caseName` at `threads`, or nullptr.
const ResultRow* findRow(const std::vector<ResultRow>& rows, std::string_view caseName,
                         int threads);

// ---- Registration ----

void registerLockmgrWorkload(WorkloadRegistry& registry);
void registerBTreeWorkload(WorkloadRegistry& registry);
/// mvkv's history store: old-snapshot reads and memory over time.
void registerHistoryWorkload(WorkloadRegistry& registry);
/// The oplog's log writer: appends per second in each sync mode (group commit).
void registerOplogWorkload(WorkloadRegistry& registry);
void registerRecoveryWorkload(WorkloadRegistry& registry);
/// One mvkv checkpoint: its seconds and file size, and overwrite latency beside it.
void registerCheckpointWorkload(WorkloadRegistry& registry);
/// Change streams: events per second; the in-memory oplog's commit cost.
void registerChangeStreamWorkload(WorkloadRegistry& registry);
/// Document locks: acquire + release against insert + delete; contention.
void registerDoclockWorkload(WorkloadRegistry& registry);
/// A replica set's primary: commits per second with {w: 1} and {w: "majority"}.
void registerReplsetWorkload(WorkloadRegistry& registry);
/// mvkv under list-append transactions, its history checked (docs/checker.md).
void registerListAppendWorkload(WorkloadRegistry& registry);
/// fillseq ... longsnapshot on every engine (storage_workload.h).
void registerStorageWorkloads(WorkloadRegistry& registry);
/// Registers every workload above, in the default run order.
void registerBuiltinWorkloads(WorkloadRegistry& registry);

}  // namespace mvkv::bench
