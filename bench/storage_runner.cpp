// Runs storage workloads on every selected engine, one child process per
// engine and thread count (storage_workload.h says why).
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "storage_workload.h"

namespace mvkv::bench {

void check(const Status& s, std::string_view what) {
    if (!s.ok())
        throw std::runtime_error(fmt::format("{}: {}", what, s.toString()));
}

namespace {

/// Bytes allocated on disk under `dir` (st_blocks, so sparse maps count what
/// they use).
uint64_t diskBytes(const std::filesystem::path& dir) {
    uint64_t total = 0;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        struct stat st {};
        if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode))
            total += uint64_t(st.st_blocks) * 512;
    }
    return total;
}

}  // namespace

std::filesystem::path baseDirectory(const BenchConfig& config) {
    if (!config.dir.empty())
        return config.dir;
    std::error_code ec;
    std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
    return ec ? std::filesystem::path("/tmp") : tmp;
}

Distribution StorageContext::distribution(Distribution fallback) const {
    if (config.distribution == "uniform")
        return Distribution::kUniform;
    if (config.distribution == "zipfian")
        return Distribution::kZipfian;
    return fallback;
}

double StorageContext::diskMb() const {
    return double(diskBytes(dir)) / (1024.0 * 1024.0);
}

std::unique_ptr<StoreThread> StorageContext::openThread() const {
    auto handle = store.thread();
    check(handle.status(), "open a thread handle");
    return std::move(handle).value();
}

BackgroundThread::BackgroundThread(StorageContext& ctx, Steps steps) {
    thread_ = std::thread([this, &ctx, steps = std::move(steps)] { run(ctx, steps); });
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return ready_; });
    if (!error_.empty()) {
        lock.unlock();
        thread_.join();
        throw std::runtime_error(error_);
    }
}

BackgroundThread::~BackgroundThread() {
    if (thread_.joinable()) {
        stop_.store(true);
        thread_.join();
    }
}

void BackgroundThread::run(StorageContext& ctx, Steps steps) {
    std::unique_ptr<StoreThread> handle;
    auto fail = [&](const std::string& what) {
        std::lock_guard lock(mutex_);
        if (error_.empty())
            error_ = what;
        ready_ = true;
        cv_.notify_all();
    };
    try {
        handle = ctx.openThread();
        if (steps.setup)
            steps.setup(*handle);
    } catch (const std::exception& e) {
        fail(e.what());
        return;
    }
    {
        std::lock_guard lock(mutex_);
        ready_ = true;
    }
    cv_.notify_all();
    auto begin = std::chrono::steady_clock::now();
    try {
        while (!stop_.load(std::memory_order_relaxed)) {
            steps.step(*handle);
            ++result_.steps;
        }
        result_.seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
        if (steps.teardown)
            steps.teardown(*handle);
    } catch (const std::exception& e) {
        fail(e.what());
    }
}

BackgroundThread::Result BackgroundThread::stop() {
    stop_.store(true);
    if (thread_.joinable())
        thread_.join();
    if (!error_.empty())
        throw std::runtime_error(error_);
    return result_;
}

namespace {

constexpr uint64_t kLoadBatch = 1000;

/// This process's peak resident set, in MB.
double peakRssMb() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return double(ru.ru_maxrss) / 1024.0;  // Linux reports KiB
}

void load(StorageContext& ctx) {
    auto handle = ctx.openThread();
    std::string key(ctx.keys.size(), '\0');
    std::string value;
    for (uint64_t begin = 0; begin < ctx.config.keys; begin += kLoadBatch) {
        uint64_t end = std::min(ctx.config.keys, begin + kLoadBatch);
        check(handle->begin(TxnKind::kReadWrite), "load: begin");
        for (uint64_t i = begin; i < end; ++i) {
            ctx.keys.make(key.data(), i);
            ctx.values.make(value, i);
            check(handle->put(key, value), "load: put");
        }
        check(handle->commit(), "load: commit");
    }
    ctx.loadedKeys = ctx.config.keys;
}

// ---- the child's report, as JSON over a pipe ----

nlohmann::json toWire(const ResultRow& row) {
    nlohmann::json metrics = nlohmann::json::array();
    for (const Metric& m : row.metrics)
        metrics.push_back({m.name, m.value, m.unit});
    return {{"ops", row.ops},         {"seconds", row.seconds}, {"ops_per_sec", row.opsPerSec},
            {"ns_per_op", row.nsPerOp}, {"cpu", row.cpuPercent}, {"metrics", metrics},
            {"error", row.error}};
}

void fromWire(const nlohmann::json& j, ResultRow& row) {
    row.ops = j.at("ops").get<uint64_t>();
    row.seconds = j.at("seconds").get<double>();
    row.opsPerSec = j.at("ops_per_sec").get<double>();
    row.nsPerOp = j.at("ns_per_op").get<double>();
    row.cpuPercent = j.at("cpu").get<double>();
    for (const auto& m : j.at("metrics"))
        row.setMetric(m.at(0).get<std::string>(), m.at(1).get<double>(), m.at(2).get<std::string>());
    row.error = j.at("error").get<std::string>();
}

/// The child's work: open, load, run, measure. Returns the row (error set on failure).
/// (With --no-fork it runs in the driver's process; peak RSS is then the process's.)
ResultRow runInChild(const StorageSpec& spec, const StoreFactory& factory,
                     const BenchConfig& config, int threads, const std::filesystem::path& dir) {
    ResultRow row = toRow(spec.name, factory.name, threads, Measurement{});
    try {
        StoreOptions options;
        options.dir = dir.string();
        options.sync = config.syncFsync ? SyncMode::kFsync : SyncMode::kNone;
        options.profileLevel = config.profileLevel;
        options.expectedKeys = config.keys;
        options.keySize = config.keySize;
        options.valueSize = config.valueSize;
        options.maxThreads = threads + 2;  // the timed threads and a background one
        auto opened = factory.open(options);
        check(opened.status(), fmt::format("open {}", factory.name));
        std::unique_ptr<Store> store = std::move(opened).value();
        {
            RunLimits limits = limitsFor(config);
            limits.recordLatency = true;
            StorageContext ctx{config,
                               *store,
                               spec.name,
                               factory.name,
                               dir.string(),
                               KeyFormat(config.keySize),
                               ValueFormat(config.valueSize),
                               0,
                               limits};
            if (spec.preload) {
                load(ctx);
                check(store->settle(), fmt::format("settle {} after the load", factory.name));
            }
            StorageRun run = spec.run(ctx, threads);
            const Measurement& m = run.measurement;
            row = toRow(spec.name, factory.name, threads, m);
            if (m.error.empty()) {
                row.setMetric("p50_us", double(m.latency.percentile(50)) / 1e3);
                row.setMetric("p99_us", double(m.latency.percentile(99)) / 1e3);
                row.setMetric("p99.9_us", double(m.latency.percentile(99.9)) / 1e3);
                row.setMetric("rss_mb", peakRssMb());
                row.setMetric("disk_mb", ctx.diskMb());
                for (Metric& extra : run.metrics)
                    row.setMetric(extra.name, extra.value, extra.unit);
            }
        }
    } catch (const std::exception& e) {
        row.error = e.what();
    }
    return row;
}

/// Forks, runs the case in the child and reads its row back.
ResultRow runCase(const StorageSpec& spec, const StoreFactory& factory, const BenchConfig& config,
                  int threads, const std::filesystem::path& dir) {
    ResultRow row = toRow(spec.name, factory.name, threads, Measurement{});
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    std::filesystem::create_directories(dir, ec);
    if (ec) {
        row.error = fmt::format("cannot create {}: {}", dir.string(), ec.message());
        return row;
    }
    if (!config.fork) {
        row = runInChild(spec, factory, config, threads, dir);
        std::filesystem::remove_all(dir, ec);
        return row;
    }
    int fds[2];
    if (::pipe(fds) != 0) {
        row.error = fmt::format("pipe: {}", std::strerror(errno));
        return row;
    }
    std::fflush(stdout);
    std::fflush(stderr);
    pid_t pid = ::fork();
    if (pid < 0) {
        row.error = fmt::format("fork: {}", std::strerror(errno));
        ::close(fds[0]);
        ::close(fds[1]);
        return row;
    }
    if (pid == 0) {
        ::close(fds[0]);
        ResultRow result = runInChild(spec, factory, config, threads, dir);
        std::string wire = toWire(result).dump();
        size_t done = 0;
        while (done < wire.size()) {
            ssize_t n = ::write(fds[1], wire.data() + done, wire.size() - done);
            if (n <= 0)
                break;
            done += size_t(n);
        }
        ::close(fds[1]);
        std::fflush(stdout);
        ::_exit(0);  // no atexit handlers or static destructors of the parent's state
    }
    ::close(fds[1]);
    std::string wire;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
        if (n > 0)
            wire.append(buf, size_t(n));
    }
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    std::filesystem::remove_all(dir, ec);
    if (WIFSIGNALED(status)) {
        row.error = fmt::format("the {} child died of signal {} ({})", factory.name,
                                WTERMSIG(status), strsignal(WTERMSIG(status)));
        return row;
    }
    try {
        fromWire(nlohmann::json::parse(wire), row);
    } catch (const std::exception& e) {
        row.error = fmt::format("the {} child's report was unreadable ({}): '{}'", factory.name,
                                e.what(), wire.substr(0, 200));
    }
    return row;
}

/// The engines of this run: --engines (each must be known), or every one.
std::vector<const StoreFactory*> selectedEngines(const BenchConfig& config) {
    std::vector<const StoreFactory*> out;
    for (const StoreFactory& f : storeFactories()) {
        bool named = std::find(config.engines.begin(), config.engines.end(), f.name) !=
                     config.engines.end();
        if ((config.engines.empty() || named) && config.wantCase(f.name))
            out.push_back(&f);
    }
    return out;
}

WorkloadResult runStorageWorkload(const StorageSpec& spec, const BenchConfig& config) {
    WorkloadResult result;
    result.caseColumn = "engine";
    SyncMode sync = config.syncFsync ? SyncMode::kFsync : SyncMode::kNone;
    std::filesystem::path base = baseDirectory(config) / fmt::format("mvkv-bench-{}", ::getpid());
    for (int threads : config.threads) {
        for (const StoreFactory* f : selectedEngines(config)) {
            if (!f->available) {
                // Only rows for engines asked for by name; the header lists the rest.
                if (!config.engines.empty()) {
                    ResultRow row = toRow(spec.name, f->name, threads, Measurement{});
                    row.skipped = f->why;
                    result.rows.push_back(std::move(row));
                }
                continue;
            }
            if (std::find(f->syncModes.begin(), f->syncModes.end(), sync) == f->syncModes.end()) {
                ResultRow row = toRow(spec.name, f->name, threads, Measurement{});
                row.skipped = fmt::format("{} does not support --sync {} yet", f->name,
                                          syncModeName(sync));
                result.rows.push_back(std::move(row));
                continue;
            }
            if (isatty(STDERR_FILENO)) {
                fmt::print(stderr, "\r\033[K  {} on {} with {} thread{}...", spec.name, f->name,
                           threads, threads == 1 ? "" : "s");
            }
            std::filesystem::path dir =
                base / fmt::format("{}-{}-t{}", spec.name, f->name, threads);
            // --repeat: the median run by ops/s, each from a fresh store.
            result.rows.push_back(medianRun(
                config.repeat, [&] { return runCase(spec, *f, config, threads, dir); },
                [](const ResultRow& r) { return r.opsPerSec; }));
        }
    }
    if (isatty(STDERR_FILENO))
        fmt::print(stderr, "\r\033[K");
    std::error_code ec;
    std::filesystem::remove(base, ec);  // only if empty: another run may share it
    // Ratio to LMDB at the same thread count (> 1: faster than LMDB).
    for (ResultRow& r : result.rows) {
        const ResultRow* lmdb = findRow(result.rows, "lmdb", r.threads);
        if (lmdb != nullptr && lmdb->opsPerSec > 0 && r.error.empty() && r.skipped.empty())
            r.metrics.insert(r.metrics.begin(), {"vs_lmdb", r.opsPerSec / lmdb->opsPerSec, "x"});
    }
    return result;
}

}  // namespace

std::vector<StorageSpec> storageSpecs() {
    std::vector<StorageSpec> all = basicStorageSpecs();
    for (auto& s : ycsbStorageSpecs())
        all.push_back(std::move(s));
    for (auto& s : txnStorageSpecs())
        all.push_back(std::move(s));
    return all;
}

void registerStorageWorkloads(WorkloadRegistry& registry) {
    std::vector<std::string> engines;
    for (const StoreFactory& f : storeFactories())
        engines.push_back(f.name);
    for (StorageSpec& spec : storageSpecs()) {
        Workload w;
        w.name = spec.name;
        w.description = spec.description;
        w.caseNames = engines;
        w.run = [spec](const BenchConfig& config) { return runStorageWorkload(spec, config); };
        registry.add(std::move(w));
    }
}

}  // namespace mvkv::bench
