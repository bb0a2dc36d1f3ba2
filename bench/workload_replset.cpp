// Workload "replset": commits per second on the primary of a replica set of
// three (mvkv/replica_set.h: a durable primary, sync none, and 2 in-memory
// secondaries, as Engine::startReplicaSet and addSecondary make them),
// acknowledged with {w: 1} and with {w: "majority"}.
//
// Cases (each at every --threads count; each in a fresh directory under --dir):
//   commit_w1         a transaction of one put, commit({w: 1}): the primary alone
//   commit_wmajority  the same, commit({w: "majority"}): until one secondary
//                     applied it and the primary synced its oplog (2 of 3),
//                     so it waits for a secondary's batch and an fdatasync
// Metric lag: the primary's newest oplog timestamp minus the majority commit
// point at the end of the run (commits not yet on a majority).
#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>

#include "harness.h"
#include "keys.h"
#include "workload.h"
#include "mvkv/engine.h"

namespace mvkv::bench {
namespace {

constexpr std::string_view kWorkload = "replset";
constexpr uint64_t kCommitKeys = 10000;

struct Case {
    std::string_view name;
    bool majority;
};

const Case kCases[] = {{"commit_w1", false}, {"commit_wmajority", true}};

void check(const Status& s) {
    if (!s.ok())
        throw std::runtime_error(s.toString());
}

Measurement runOnce(const Case& c, const BenchConfig& config, int threads,
                    const std::filesystem::path& dir, uint64_t* lag) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    std::filesystem::create_directories(dir, ec);
    if (ec)
        throw std::runtime_error(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
    EngineOptions o;
    o.path = dir.string();
    o.syncMode = SyncMode::kNone;
    o.checkpointInterval = std::chrono::milliseconds(0);
    std::shared_ptr<Engine> primary = mustValue(Engine::open(o), "open the primary");
    check(mustValue(primary->openSession(), "open a session")->createCollection("bench.commits"));
    std::unique_ptr<ReplicaSet> set = mustValue(primary->startReplicaSet(), "start the set");
    for (int i = 0; i < 2; ++i)
        check(set->addSecondary().status());
    WriteConcern wc;
    wc.majority = c.majority;
    if (c.majority)
        wc.wtimeout = std::chrono::seconds(30);
    Measurement m = runParallel(threads, limitsFor(config), [&](int index) {
        auto rng = std::make_shared<std::mt19937_64>(config.seed + uint64_t(index) * 7919);
        KeyFormat keys(config.keySize);
        auto key = std::make_shared<std::string>(keys.size(), '\0');
        auto value = std::make_shared<std::string>(config.valueSize, 'r');
        std::shared_ptr<Session> s = mustValue(primary->openSession(), "open a session");
        return [=]() mutable {
            keys.make(key->data(), (*rng)() % kCommitKeys);
            check(s->begin());
            if (Status p = s->put("bench.commits", *key, *value); !p.ok()) {
                s->abort().ignore();  // a write conflict: counted as an op, as a retry would be
                return;
            }
            check(s->commit(wc).status());
        };
    });
    const uint64_t last = primary->refreshOplogVisibility();  // every commit has finished
    const uint64_t point = set->majorityCommitTs();
    *lag = last > point ? last - point : 0;
    set.reset();  // before the primary
    return m;
}

WorkloadResult runReplsetWorkload(const BenchConfig& config) {
    WorkloadResult result;
    for (int threads : config.threads) {
        for (const Case& c : kCases) {
            if (!config.wantCase(c.name))
                continue;
            std::filesystem::path dir =
                baseDirectory(config) / fmt::format("mvkv-bench-replset-{}-t{}", c.name, threads);
            uint64_t lag = 0;
            Measurement m;
            try {
                m = repeatRuns(config.repeat, [&] { return runOnce(c, config, threads, dir, &lag); });
            } catch (const std::exception& e) {
                m.error = e.what();
            }
            std::error_code ec;
            std::filesystem::remove_all(dir, ec);
            ResultRow row = toRow(kWorkload, c.name, threads, m);
            row.setMetric("lag", double(lag));
            result.rows.push_back(std::move(row));
        }
    }
    addRatioToBaseline(result.rows, "commit_w1");
    result.notes.push_back(fmt::format(
        "a commit is a transaction of one put of a {}-byte value to one of {} random keys on a "
        "durable primary (sync none) with 2 in-memory secondaries; ratio: ns per commit over "
        "commit_w1's; lag: oplog timestamps above the majority point at the end",
        config.valueSize, kCommitKeys));
    return result;
}

}  // namespace

void registerReplsetWorkload(WorkloadRegistry& registry) {
    Workload w;
    w.name = std::string(kWorkload);
    w.description =
        "commits per second on a replica set's primary (2 in-memory secondaries) with write "
        "concern {w: 1} and {w: \"majority\"}";
    for (const Case& c : kCases)
        w.caseNames.emplace_back(c.name);
    w.run = runReplsetWorkload;
    registry.add(std::move(w));
}

}  // namespace mvkv::bench
