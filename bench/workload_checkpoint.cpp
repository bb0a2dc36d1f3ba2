// Workload "checkpoint": what one mvkv checkpoint of --keys keys costs, and
// what it does to the writes running beside it.
//
// An engine on a fresh directory under --dir (the oplog synced per --sync,
// no background checkpoints) is loaded with --keys keys (1000 puts per
// transaction, the storage workloads' keys and values); stable and oldest
// then follow the newest commit, as mongod moves them. One thread overwrites
// random keys with implicit puts (moving stable and oldest every 256 writes,
// as the mvkv adapter does), in two cases:
//   no_checkpoint  for --duration (or --ops puts): the overwrite latency
//                  with nothing else running
//   checkpoint     while Engine::checkpoint() runs on another thread, from
//                  just before it starts until it returns
// The checkpoint row's seconds are the checkpoint's; its ops are the
// overwrites that ran beside it. Both rows have p50/p99/p99.9 and max_us
// (the longest single put: a stall shows there). Metrics: ckpt_s (the checkpoint's
// seconds), ckpt_mb (the size of the checkpoint file it wrote, read from
// the directory), ckpt_entries (keys in it, EngineStats), p99_vs_idle (the
// overwrite p99 during the checkpoint over the no_checkpoint p99) and
// rss_mb (this process's resident memory after the checkpoint).
// --threads does not apply: one overwriter, one checkpoint.
// Public API only (include/mvkv/).
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>

#include "harness.h"
#include "keys.h"
#include "latency_histogram.h"
#include "sysinfo.h"
#include "workload.h"
#include "mvkv/engine.h"

namespace mvkv::bench {
namespace {

constexpr std::string_view kWorkload = "checkpoint";
constexpr std::string_view kNs = "bench.checkpoint";
constexpr uint64_t kLoadBatch = 1000;
constexpr uint64_t kTimestampEvery = 256;  // writes between moves of stable and oldest

using Clock = std::chrono::steady_clock;

void moveTimestamps(Engine& engine) {
    // The overwriter may have moved them already: a refusal is fine.
    const Timestamp clock = engine.timestamps().clock;
    engine.setStableTimestamp(clock).ignore();
    engine.setOldestTimestamp(clock).ignore();
}

void load(Engine& engine, const BenchConfig& config, const KeyFormat& keys,
          const ValueFormat& values) {
    auto session = mustValue(engine.openSession(), "open a session");
    must(session->createCollection(kNs), "create the collection");
    std::string key(keys.size(), '\0');
    std::string value;
    for (uint64_t begin = 0; begin < config.keys; begin += kLoadBatch) {
        must(session->begin(), "load: begin");
        for (uint64_t i = begin; i < std::min(config.keys, begin + kLoadBatch); ++i) {
            keys.make(key.data(), i);
            values.make(value, i);
            must(session->put(kNs, key, value), "load: put");
        }
        must(session->commit().status(), "load: commit");
    }
    moveTimestamps(engine);
}

/// One thread overwriting random keys until stop(), each put's latency in a
/// histogram (the clock read once per put, as the harness does).
class Overwriter {
  public:
    struct Result {
        uint64_t ops = 0;
        double seconds = 0;
        LatencyHistogram latency;
    };

    Overwriter(Engine& engine, const BenchConfig& config, uint64_t maxOps)
        : thread_([this, &engine, &config, maxOps] { run(engine, config, maxOps); }) {}
    ~Overwriter() {
        stop_.store(true);
        if (thread_.joinable())
            thread_.join();
    }
    Overwriter(const Overwriter&) = delete;
    Overwriter& operator=(const Overwriter&) = delete;

    /// Returns once the first put is done (or the thread failed).
    void waitStarted() const {
        while (!started_.load(std::memory_order_acquire))
            std::this_thread::yield();
    }
    /// Returns once `maxOps` puts are done (0: never; stop() instead).
    void waitFinished() {
        if (thread_.joinable())
            thread_.join();
    }
    Result stop() {
        stop_.store(true);
        if (thread_.joinable())
            thread_.join();
        if (!error_.empty())
            throw std::runtime_error(error_);
        return std::move(result_);
    }

  private:
    void run(Engine& engine, const BenchConfig& config, uint64_t maxOps) {
        try {
            auto session = mustValue(engine.openSession(), "open a session");
            KeyFormat keys(config.keySize);
            ValueFormat values(config.valueSize);
            Rng rng(threadSeed(config.seed, kWorkload, 0));
            std::string key(keys.size(), '\0');
            std::string value;
            const Clock::time_point begin = Clock::now();
            Clock::time_point prev = begin;
            do {
                const uint64_t i = rng.below(config.keys);
                keys.make(key.data(), i);
                values.make(value, i + config.keys * (result_.ops + 1));
                must(session->put(kNs, key, value), "overwrite");
                if (++result_.ops % kTimestampEvery == 0)
                    moveTimestamps(engine);
                const Clock::time_point now = Clock::now();
                result_.latency.record(uint64_t(
                    std::chrono::duration_cast<std::chrono::nanoseconds>(now - prev).count()));
                prev = now;
                started_.store(true, std::memory_order_release);
            } while (!stop_.load(std::memory_order_relaxed) &&
                     (maxOps == 0 || result_.ops < maxOps));
            result_.seconds = std::chrono::duration<double>(prev - begin).count();
        } catch (const std::exception& e) {
            error_ = e.what();
        }
        started_.store(true, std::memory_order_release);
    }

    std::atomic<bool> stop_{false};
    std::atomic<bool> started_{false};
    Result result_;
    std::string error_;
    std::thread thread_;  // last: started once every other member is built
};

ResultRow overwriteRow(std::string_view caseName, const Overwriter::Result& r) {
    Measurement m;
    m.threads = 1;
    m.totalOps = r.ops;
    m.wallSeconds = r.seconds;
    m.nsPerOpPerThread = r.ops > 0 ? r.seconds * 1e9 / double(r.ops) : 0;
    ResultRow row = toRow(kWorkload, caseName, 1, m);
    row.cpuPercent = -1;  // not measured
    row.setMetric("p50_us", double(r.latency.percentile(50)) / 1e3);
    row.setMetric("p99_us", double(r.latency.percentile(99)) / 1e3);
    row.setMetric("p99.9_us", double(r.latency.percentile(99.9)) / 1e3);
    row.setMetric("max_us", double(r.latency.max()) / 1e3);  // the longest stall
    return row;
}

std::set<std::filesystem::path> checkpointFiles(const std::filesystem::path& dir) {
    std::set<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        if (name.starts_with("checkpoint-") && name.ends_with(".mvkvckpt"))
            files.insert(entry.path());
    }
    return files;
}

/// Engine::checkpoint(), retried while it reports Busy (no checkpoint
/// timestamp could be taken at that moment).
void checkpointNow(Engine& engine) {
    for (;;) {
        Status s = engine.checkpoint();
        if (s.code() != StatusCode::kBusy) {
            must(s, "checkpoint");
            return;
        }
        std::this_thread::yield();
    }
}

void runCases(const BenchConfig& config, const std::filesystem::path& dir,
              WorkloadResult& result) {
    EngineOptions options;
    options.path = dir.string();
    options.syncMode = config.syncFsync ? mvkv::SyncMode::kFsync : mvkv::SyncMode::kNone;
    options.checkpointInterval = std::chrono::milliseconds(0);  // only the one measured
    auto engine = mustValue(Engine::open(options), "open");
    KeyFormat keys(config.keySize);
    ValueFormat values(config.valueSize);
    load(*engine, config, keys, values);

    std::optional<double> idleP99;
    if (config.wantCase("no_checkpoint")) {
        Overwriter::Result idle;
        {
            Overwriter writer(*engine, config, config.opsPerThread);
            if (config.opsPerThread > 0) {
                writer.waitFinished();
            } else {
                std::this_thread::sleep_for(std::chrono::duration<double>(config.durationSeconds));
            }
            idle = writer.stop();
        }
        result.rows.push_back(overwriteRow("no_checkpoint", idle));
        idleP99 = result.rows.back().metric("p99_us");
    }
    if (config.wantCase("checkpoint")) {
        const std::set<std::filesystem::path> before = checkpointFiles(dir);
        Overwriter writer(*engine, config, 0);
        writer.waitStarted();
        const Clock::time_point begin = Clock::now();
        checkpointNow(*engine);
        const double seconds = std::chrono::duration<double>(Clock::now() - begin).count();
        Overwriter::Result during = writer.stop();

        uint64_t fileBytes = 0;
        for (const auto& file : checkpointFiles(dir))
            if (!before.contains(file))
                fileBytes += std::filesystem::file_size(file);
        if (fileBytes == 0)
            throw std::runtime_error("the checkpoint wrote no checkpoint-*.mvkvckpt file");
        const EngineStats stats = engine->stats();
        ResultRow row = overwriteRow("checkpoint", during);
        row.seconds = seconds;  // the checkpoint's; ops/s stays the overwriter's rate
        row.setMetric("ckpt_s", seconds);
        row.setMetric("ckpt_mb", double(fileBytes) / (1024.0 * 1024.0));
        row.setMetric("ckpt_entries", double(stats.lastCheckpointEntries));
        if (idleP99.has_value() && *idleP99 > 0)
            row.setMetric("p99_vs_idle", row.metric("p99_us").value_or(0) / *idleP99, "x");
        row.setMetric("rss_mb", currentRssMb());
        result.rows.push_back(std::move(row));
    }
    must(engine->close(), "close");
}

WorkloadResult runCheckpointWorkload(const BenchConfig& config) {
    WorkloadResult result;
    const std::filesystem::path dir =
        baseDirectory(config) / fmt::format("mvkv-bench-checkpoint-{}", ::getpid());
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    try {
        runCases(config, dir, result);
    } catch (const std::exception& e) {
        ResultRow row = toRow(kWorkload, "checkpoint", 1, Measurement{});
        row.error = e.what();
        result.rows.push_back(std::move(row));
    }
    std::filesystem::remove_all(dir, ec);
    result.notes.push_back(fmt::format(
        "{} keys of {} + {} bytes loaded, then one thread overwrites random keys (sync {}); "
        "checkpoint: the overwrites while one Engine::checkpoint() runs, seconds = the "
        "checkpoint's",
        config.keys, config.keySize, config.valueSize, config.syncFsync ? "fsync" : "none"));
    return result;
}

}  // namespace

void registerCheckpointWorkload(WorkloadRegistry& registry) {
    Workload w;
    w.name = std::string(kWorkload);
    w.description =
        "one mvkv checkpoint of --keys keys: its seconds and file size, and the overwrite "
        "latency of one thread while it runs against without it";
    w.caseNames = {"no_checkpoint", "checkpoint"};
    w.run = runCheckpointWorkload;
    registry.add(std::move(w));
}

}  // namespace mvkv::bench
