// Workload "recovery": how long Engine::open takes to recover a data
// directory, and how fast a replica applies a primary's oplog.
//
// Cases (a data set of --keys oplog entries: one implicit put each, of a
// --value-size value to a random one of --keys / 4 keys; built once per
// case, with sync none, under --dir):
//   recover        open replays the whole oplog (no checkpoint)
//   recover_ckpt   a checkpoint after half the entries: open loads it and
//                  replays the other half
//   replica_wN     replication/replica.h with N = 1, 2, 4 workers: an in-memory
//                  secondary applies the whole oplog of the primary
// Rows report ops = entries replayed (or applied) and ops/s = entries per
// second of the open (or of the apply, from start to the last timestamp
// applied); --threads does not apply (the replica's rows carry their worker
// count as the thread count).
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>

#include "harness.h"
#include "keys.h"
#include "workload.h"
#include "engine/engine.h"
#include "replication/replica.h"
#include "engine/session.h"

namespace mvkv::bench {
namespace {

constexpr std::string_view kWorkload = "recovery";
constexpr std::string_view kNs = "bench.recovery";

struct Case {
    std::string_view name;
    int workers;  // 0: a recovery case
    bool checkpoint;
};

const Case kCases[] = {
    {"recover", 0, false},
    {"recover_ckpt", 0, true},
    {"replica_w1", 1, false},
    {"replica_w2", 2, false},
    {"replica_w4", 4, false},
};

void check(const Status& s) {
    if (!s.ok())
        throw std::runtime_error(s.toString());
}

engine::EngineOptions options(const std::filesystem::path& dir) {
    engine::EngineOptions o;
    o.path = dir.string();
    o.syncMode = oplog::SyncMode::kNone;
    o.checkpointInterval = std::chrono::milliseconds(0);
    return o;
}

std::unique_ptr<engine::Engine> open(const engine::EngineOptions& o) {
    auto opened = engine::Engine::open(o);
    check(opened.status());
    return std::move(opened).value();
}

// Fills `engine` with `entries` puts (a checkpoint half way if asked).
void load(engine::Engine& engine, const BenchConfig& config, uint64_t entries, bool checkpoint) {
    auto s = engine.openSession();
    check(s->createCollection(kNs));
    KeyFormat keys(config.keySize);
    std::string key(keys.size(), '\0');
    std::string value(config.valueSize, 'r');
    std::mt19937_64 rng(config.seed);
    const uint64_t keySpace = std::max<uint64_t>(1, config.keys / 4);
    for (uint64_t i = 0; i < entries; ++i) {
        keys.make(key.data(), rng() % keySpace);
        check(s->put(kNs, key, value));
        if (checkpoint && i == entries / 2)
            check(engine.checkpoint());
    }
}

ResultRow runCase(const Case& c, const BenchConfig& config) {
    const std::filesystem::path dir =
        baseDirectory(config) / fmt::format("mvkv-bench-recovery-{}", c.name);
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    const uint64_t entries = config.keys;
    Measurement m;
    std::vector<std::pair<std::string, double>> metrics;
    try {
        {
            auto primary = open(options(dir));
            load(*primary, config, entries, c.checkpoint);
        }
        m = repeatRuns(config.repeat, [&] {
            Measurement run;
            auto start = std::chrono::steady_clock::now();
            if (c.workers == 0) {
                auto engine = open(options(dir));
                run.wallSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
                const engine::RecoveryStats& r = engine->recovery();
                run.totalOps = r.entriesReplayed + r.checkpointEntries;
                metrics = {{"replayed", double(r.entriesReplayed)},
                           {"from_ckpt", double(r.checkpointEntries)},
                           {"open_ms", double(r.micros) / 1000.0}};
            } else {
                auto primary = open(options(dir));
                engine::EngineOptions so;
                so.historySweepInterval = std::chrono::milliseconds(0);
                auto secondary = open(so);
                primary->oplog()->refreshVisibility();
                const mvcc::Timestamp last = primary->oplog()->stats().lastTs;
                start = std::chrono::steady_clock::now();
                replication::ReplicaOptions ro;
                ro.workers = static_cast<size_t>(c.workers);
                auto applier = replication::ReplicaApplier::start(*primary, *secondary, ro);
                check(applier.status());
                check(applier.value()->waitApplied(last, std::chrono::minutes(10)));
                run.wallSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
                replication::ReplicaStats rs = applier.value()->stats();
                run.totalOps = rs.entriesApplied;
                applier.value()->stop();
                metrics = {{"batches", double(rs.batches)}, {"mean_batch", rs.meanBatch}};
            }
            return run;
        });
    } catch (const std::exception& e) {
        m.error = e.what();
    }
    std::filesystem::remove_all(dir, ec);
    ResultRow row = toRow(kWorkload, c.name, c.workers == 0 ? 1 : c.workers, m);
    for (auto& [name, value] : metrics)
        row.setMetric(name, value);
    return row;
}

WorkloadResult runRecoveryWorkload(const BenchConfig& config) {
    WorkloadResult result;
    for (const Case& c : kCases)
        if (config.wantCase(c.name))
            result.rows.push_back(runCase(c, config));
    result.notes.push_back(fmt::format(
        "{} oplog entries (implicit puts of {}-byte values over {} keys), sync none, under {}",
        config.keys, config.valueSize, std::max<uint64_t>(1, config.keys / 4),
        baseDirectory(config).string()));
    return result;
}

}  // namespace

void registerRecoveryWorkload(WorkloadRegistry& registry) {
    Workload w;
    w.name = std::string(kWorkload);
    w.description =
        "recovery time of Engine::open (whole oplog, or a checkpoint and half of it) and the "
        "replica's apply rate with 1, 2 and 4 workers, for --keys oplog entries";
    for (const Case& c : kCases)
        w.caseNames.emplace_back(c.name);
    w.run = runRecoveryWorkload;
    registry.add(std::move(w));
}

}  // namespace mvkv::bench
