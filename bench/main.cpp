// mvkv-bench: the benchmark driver of mvkv.
//
// Usage (build with --buildtype=release; the header warns otherwise):
//   mvkv-bench                               run every registered workload
//   mvkv-bench --workloads readrandom,ycsb-a run the named workloads (comma list)
//   mvkv-bench --engines mvkv,lmdb           storage workloads on these engines only
//   mvkv-bench --threads 1,2,4               thread counts per case (default 1,2)
//   mvkv-bench --duration 2.5                seconds per case (default 0.2)
//   mvkv-bench --ops 1000000                 fixed ops per thread instead of --duration
//   mvkv-bench --repeat 5                    runs per case, median reported (default 1)
//   mvkv-bench --cases autoget_is,mutex_pair only these cases (for storage: engines)
//   mvkv-bench --keys 1000000                keys loaded before timing (default 50000)
//   mvkv-bench --key-size 16 --value-size 100  key/value bytes
//   mvkv-bench --distribution uniform        key choice of YCSB, transfer (default zipfian)
//   mvkv-bench --sync fsync                  commit durability (default none)
//   mvkv-bench --seed 7                      seed of every random choice (default 42)
//   mvkv-bench --dir /mnt/fast               where the engines' directories go ($TMPDIR)
//   mvkv-bench --json out.json --csv out.csv also write the results as JSON / CSV
//   mvkv-bench --no-fork                     storage cases in this process (for profilers)
//   mvkv-bench --list                        list workloads and their cases
//   mvkv-bench --version                     version, git revision and build type
//
// Output: a header (date, CPU model, CPU count, kernel, compiler, build
// warnings, the engines and their versions), then per workload an aligned
// table with one line per case (for storage workloads: per engine) and
// thread count (ops/s over all threads, ns/op per thread, and the workload's
// own metrics such as latency percentiles and the ratio to LMDB), followed by
// the workload's notes. While a storage workload runs, a progress line on
// stderr (a terminal only) names the engine and thread count.
//
// The --json document:
//   {"tool":"mvkv-bench","version":...,"git_revision":...,"build_type":...,
//    "machine":{cpu_model,cpus,cpu_cache,kernel,compiler,optimized,assertions,date,
//    load_average,busy_cpus}, "engines":[{name,version,
//    available,why?}], "config":{threads,duration,ops_per_thread,repeat,cases,keys,key_size,
//    value_size,engines,sync,distribution,seed,dir,fork}, "command":argv joined,
//    "workloads":{name:{description,kind:"storage"|"micro"}}, "metric_units":{metric:unit},
//    "results":[{workload,case,threads,ops,seconds,ops_per_sec,ns_per_op,cpu_pct,<metric>...,
//    error?,skipped?}], "notes":{workload:[...]}}
// --csv has one line per result: the same fields, one column per metric name.
//
// Layout of bench/: main.cpp (flags, orchestration), workload.h/.cpp (the
// registry, BenchConfig, ResultRow), harness.h (threads, start barrier,
// timing), report.h/.cpp (table, JSON), sysinfo.h/.cpp (machine facts),
// workload_<name>.cpp (one per workload). To add a workload see workload.h.
//
// Exit status: 0 when every case ran, 1 when a case failed or the JSON file
// could not be written, 2 for bad flags or unknown workload/case names.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report.h"
#include "store.h"
#include "sysinfo.h"
#include "workload.h"
#include "mvkv/version.h"

namespace mvkv::bench {
namespace {

// Cases shorter than this are dominated by thread start skew and timer noise.
constexpr double kShortRunSeconds = 0.01;

std::string joinInts(const std::vector<int>& v) {
    std::string out;
    for (int x : v)
        out += (out.empty() ? "" : ",") + std::to_string(x);
    return out;
}

/// What --version prints and the header's first line.
std::string versionLine() {
    return fmt::format("mvkv-bench {}", buildStamp());
}

void printHeader(const MachineInfo& info, const BenchConfig& config) {
    fmt::print("{}\n", versionLine());
    fmt::print("Date:       {}\n", info.date);
    fmt::print("CPU:        {} * {}\n", info.cpus, info.cpuModel);
    if (!info.cpuCache.empty())
        fmt::print("CPUCache:   {}\n", info.cpuCache);
    fmt::print("Kernel:     {}\n", info.kernel);
    if (info.loadAverage >= 0) {
        fmt::print("Load:       {:.2f} (1 min average), {:.2f} CPUs busy just before the run\n",
                   info.loadAverage, info.busyCpus);
    }
    fmt::print("Compiler:   {}\n", info.compiler);
    fmt::print("Build:      {}, assertions {}\n", info.optimized ? "optimized" : "NOT optimized",
               info.assertions ? "ON" : "off");
    std::string limit = config.opsPerThread > 0
                            ? fmt::format("{} ops per thread", config.opsPerThread)
                            : fmt::format("{:.3f} s", config.durationSeconds);
    fmt::print("Run:        threads {}, {} per case, repeat {}{}\n", joinInts(config.threads),
               limit, config.repeat, config.repeat > 1 ? " (median)" : "");
    std::string engines;
    for (const StoreFactory& f : storeFactories()) {
        engines += fmt::format("{}{} {}", engines.empty() ? "" : ", ", f.name,
                               f.available ? f.version : "(absent: " + f.why + ")");
    }
    fmt::print("Engines:    {}\n", engines);
    fmt::print("Storage:    {} keys of {} bytes, values of {} bytes, --sync {}, keys chosen {}, "
               "seed {}\n",
               config.keys, config.keySize, config.valueSize, config.syncFsync ? "fsync" : "none",
               config.distribution.empty() ? "per workload" : config.distribution, config.seed);
    int maxThreads = config.threads.empty() ? 1 : config.threads.back();
    for (const std::string& w : runWarnings(info, maxThreads))
        fmt::print("{}\n", w);
    fmt::print("{}\n", std::string(72, '-'));
}

nlohmann::ordered_json enginesJson() {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const StoreFactory& f : storeFactories()) {
        nlohmann::ordered_json e = {{"name", f.name}, {"version", f.version}, {"available", f.available}};
        if (!f.available)
            e["why"] = f.why;
        out.push_back(e);
    }
    return out;
}

int run(int argc, char** argv) {
    WorkloadRegistry registry;
    registerBuiltinWorkloads(registry);

    BenchConfig config;
    std::vector<std::string> workloadNames;
    std::string jsonPath;
    std::string csvPath;
    std::string sync = "none";
    bool list = false;

    CLI::App app{"mvkv-bench: benchmark driver of mvkv (see bench/main.cpp for details)"};
    app.add_option("-w,--workloads", workloadNames,
                   "Workloads to run, comma-separated (default: all registered)")
        ->delimiter(',');
    app.add_option("-t,--threads", config.threads, "Thread counts, comma-separated")
        ->delimiter(',')
        ->check(CLI::Range(1, 1024))
        ->default_str("1,2");
    CLI::Option* duration =
        app.add_option("-d,--duration", config.durationSeconds, "Seconds per case")
            ->check(CLI::PositiveNumber)
            ->capture_default_str();
    CLI::Option* ops = app.add_option("--ops", config.opsPerThread,
                                      "Run exactly N ops per thread instead of --duration")
                           ->check(CLI::PositiveNumber);
    duration->excludes(ops);
    app.add_option("--repeat", config.repeat, "Runs per case; the median by ops/s is reported")
        ->check(CLI::Range(1, 1000))
        ->capture_default_str();
    app.add_option("--cases", config.cases, "Only these cases, comma-separated (default: all)")
        ->delimiter(',');
    app.add_option("--engines", config.engines,
                   "Engines of the storage workloads, comma-separated (default: every one built)")
        ->delimiter(',');
    app.add_option("--keys", config.keys, "Keys loaded before timing (the fills write them)")
        ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32))
        ->capture_default_str();
    app.add_option("--key-size", config.keySize, "Key bytes (>= 8)")
        ->check(CLI::Range(size_t{8}, size_t{511}))
        ->capture_default_str();
    app.add_option("--value-size", config.valueSize, "Value bytes")
        ->check(CLI::Range(size_t{8}, size_t{1} << 20))
        ->capture_default_str();
    app.add_option("--distribution", config.distribution,
                   "Key choice of YCSB and transfer: zipfian (theta 0.99) or uniform "
                   "(default: zipfian there; the db_bench workloads are always uniform)")
        ->check(CLI::IsMember({"zipfian", "uniform"}));
    app.add_option("--sync", sync, "Commit durability: none (left to the OS) or fsync")
        ->check(CLI::IsMember({"none", "fsync"}))
        ->capture_default_str();
    app.add_option("--seed", config.seed, "Seed of every random choice")->capture_default_str();
    app.add_option("--profile-level", config.profileLevel,
                   "mvkv only: its profiler's level on the benchmark database (0 off, 1 slow, "
                   "2 all; docs/operations.md), to measure what profiling costs")
        ->check(CLI::Range(0, 2))
        ->capture_default_str();
    app.add_option("--dir", config.dir,
                   "Directory for the engines' fresh directories (default: $TMPDIR or /tmp)")
        ->type_name("DIR");
    bool noFork = false;
    app.add_flag("--no-fork", noFork,
                 "Run storage cases in this process, not a child each (for profilers; peak RSS "
                 "is then the whole run's)");
    app.add_option("--json", jsonPath, "Also write the results to FILE as JSON")->type_name("FILE");
    app.add_option("--csv", csvPath, "Also write the results to FILE as CSV")->type_name("FILE");
    app.add_flag("--list", list, "List the workloads and their cases, then exit");
    app.set_version_flag("--version", versionLine(),
                         "Print the version, git revision and build type, then exit");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // --help exits 0; every usage error exits 2 (CLI11's own codes vary).
        return app.exit(e) == 0 ? 0 : 2;
    }

    config.syncFsync = sync == "fsync";
    config.fork = !noFork;
    for (const std::string& e : config.engines) {
        if (findStoreFactory(e) == nullptr) {
            std::string known;
            for (const StoreFactory& f : storeFactories())
                known += (known.empty() ? "" : ", ") + f.name;
            fmt::print(stderr, "mvkv-bench: unknown engine '{}' (known: {})\n", e, known);
            return 2;
        }
    }

    if (list) {
        for (const Workload& w : registry.all()) {
            std::string cases;
            for (const std::string& c : w.caseNames)
                cases += (cases.empty() ? "" : ",") + c;
            fmt::print("{:<12} {}\n{:<12} cases: {}\n", w.name, w.description, "", cases);
        }
        return 0;
    }

    std::vector<const Workload*> selected;
    if (workloadNames.empty()) {
        for (const Workload& w : registry.all())
            selected.push_back(&w);
    }
    for (const std::string& name : workloadNames) {
        const Workload* w = registry.find(name);
        if (w == nullptr) {
            std::string known;
            for (const Workload& k : registry.all())
                known += (known.empty() ? "" : ", ") + k.name;
            fmt::print(stderr, "mvkv-bench: unknown workload '{}' (known: {})\n", name, known);
            return 2;
        }
        if (std::find(selected.begin(), selected.end(), w) == selected.end())
            selected.push_back(w);
    }
    for (const std::string& c : config.cases) {
        bool known = std::any_of(selected.begin(), selected.end(), [&](const Workload* w) {
            return std::find(w->caseNames.begin(), w->caseNames.end(), c) != w->caseNames.end();
        });
        if (!known) {
            fmt::print(stderr, "mvkv-bench: no selected workload has a case '{}' (see --list)\n",
                       c);
            return 2;
        }
    }
    std::sort(config.threads.begin(), config.threads.end());
    config.threads.erase(std::unique(config.threads.begin(), config.threads.end()),
                         config.threads.end());

    // Open the JSON file now: a bad path should fail before a long run, not after.
    std::ofstream jsonOut;
    std::ofstream csvOut;
    for (auto [path, out] : {std::pair{&jsonPath, &jsonOut}, std::pair{&csvPath, &csvOut}}) {
        if (path->empty())
            continue;
        out->open(*path);
        if (!*out) {
            fmt::print(stderr, "mvkv-bench: cannot open '{}' for writing\n", *path);
            return 2;
        }
    }

    MachineInfo machine = collectMachineInfo();
    printHeader(machine, config);

    nlohmann::ordered_json results = nlohmann::ordered_json::array();
    nlohmann::ordered_json notes = nlohmann::ordered_json::object();
    nlohmann::ordered_json workloads = nlohmann::ordered_json::object();
    nlohmann::ordered_json units = nlohmann::ordered_json::object();
    std::vector<ResultRow> allRows;
    bool failed = false;
    for (const Workload* w : selected) {
        if (isatty(STDERR_FILENO))
            fmt::print(stderr, "running {}...\n", w->name);
        std::fflush(stdout);
        WorkloadResult r = w->run(config);
        fmt::print("{}: {}\n", w->name, w->description);
        resultTable(r.rows, r.caseColumn).print(stdout);
        std::vector<std::string> skipNotes;
        for (const ResultRow& row : r.rows) {
            results.push_back(toJson(row));
            allRows.push_back(row);
            std::string skip = fmt::format("  skipped {}: {}", row.caseName, row.skipped);
            if (!row.skipped.empty() &&
                std::find(skipNotes.begin(), skipNotes.end(), skip) == skipNotes.end()) {
                skipNotes.push_back(skip);
                fmt::print("{}\n", skip);
            }
            if (!row.error.empty()) {
                failed = true;
                fmt::print("  FAILED {} ({} threads): {}\n", row.caseName, row.threads, row.error);
            }
        }
        for (const std::string& n : r.notes)
            fmt::print("  {}\n", n);
        for (const ResultRow& row : r.rows) {
            if (row.error.empty() && row.skipped.empty() && row.seconds < kShortRunSeconds) {
                fmt::print(
                    "  WARNING: {} ({} threads) ran for only {:.3f} ms: too short to mean "
                    "much, raise --ops or --duration\n",
                    row.caseName, row.threads, row.seconds * 1e3);
            }
        }
        notes[w->name] = r.notes;
        workloads[w->name] = {{"description", w->description},
                              {"kind", r.caseColumn == "engine" ? "storage" : "micro"}};
        for (const ResultRow& row : r.rows) {
            for (const Metric& m : row.metrics)
                units[m.name] = m.unit;
        }
        fmt::print("\n");
        std::fflush(stdout);
    }

    if (!jsonPath.empty()) {
        std::string command;
        for (int i = 0; i < argc; ++i)
            command += (i > 0 ? " " : "") + std::string(argv[i]);
        nlohmann::ordered_json doc = {
            {"tool", "mvkv-bench"},
            {"version", std::string(versionString())},
            {"git_revision", std::string(gitRevision())},
            {"build_type", std::string(buildType())},
            {"command", command},
            {"machine", toJson(machine)},
            {"engines", enginesJson()},
            {"config",
             {{"threads", config.threads},
              {"duration", config.durationSeconds},
              {"ops_per_thread", config.opsPerThread},
              {"repeat", config.repeat},
              {"cases", config.cases},
              {"keys", config.keys},
              {"key_size", config.keySize},
              {"value_size", config.valueSize},
              {"engines", config.engines},
              {"sync", sync},
              {"distribution", config.distribution.empty() ? "default" : config.distribution},
              {"seed", config.seed},
              {"dir", config.dir.empty() ? "$TMPDIR" : config.dir},
              {"fork", config.fork}}},
            {"workloads", workloads},
            {"metric_units", units},
            {"results", results},
            {"notes", notes},
        };
        jsonOut << doc.dump(2) << '\n';
        jsonOut.close();
        if (!jsonOut) {
            fmt::print(stderr, "mvkv-bench: could not write '{}'\n", jsonPath);
            return 1;
        }
        fmt::print("results written to {}\n", jsonPath);
    }
    if (!csvPath.empty()) {
        csvOut << toCsv(allRows);
        csvOut.close();
        if (!csvOut) {
            fmt::print(stderr, "mvkv-bench: could not write '{}'\n", csvPath);
            return 1;
        }
        fmt::print("results written to {}\n", csvPath);
    }
    return failed ? 1 : 0;
}

}  // namespace
}  // namespace mvkv::bench

int main(int argc, char** argv) {
    return mvkv::bench::run(argc, argv);
}
