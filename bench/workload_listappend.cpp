// Workload "listappend": mvkv checked for isolation anomalies while it runs
// (docs/checker.md, "The listappend workload").
//
// Cases (each at every --threads count):
//   memory  an in-memory engine
//   disk    a data directory (sync none), checkpoints written meanwhile
// Each thread runs random list-append transactions (1 to 4 micro-ops, reads
// and appends over a window of 8 keys that moves on as values are used); one in four begins at a random recent read
// timestamp (a snapshot a few commits old). A write conflict aborts the
// transaction (recorded as fail). Meanwhile a maintenance thread moves
// stable and oldest behind the newest commit, sweeps the history store and,
// on disk, writes checkpoints. At the end the recorded history is checked
// (snapshot isolation): the row's metrics count transactions and anomalies,
// and any forbidden anomaly fails the row with the checker's explanation.
#include <fmt/format.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <thread>

#include "harness.h"
#include "keys.h"
#include "listappend.h"
#include "workload.h"
#include "mvkv/check.h"
#include "mvkv/engine.h"

namespace mvkv::bench {
namespace {

constexpr std::string_view kWorkload = "listappend";
constexpr std::string_view kNs = "bench.listappend";
constexpr int64_t kKeys = 8;

struct Shared {
    std::atomic<uint64_t> newestCommit{0};
    std::atomic<int64_t> nextValue{1};
    check::HistoryRecorder recorder;
};

std::vector<check::MicroOp> randomTxn(Rng& rng, Shared& shared) {
    std::vector<check::MicroOp> ops;
    int n = 1 + int(rng.below(4));
    for (int i = 0; i < n; ++i) {
        // A window of kKeys keys that moves on every 64 * kKeys values, so
        // lists stay short (an append rewrites its whole list).
        int64_t key = shared.nextValue.load() / (64 * kKeys) + int64_t(rng.below(kKeys));
        if (rng.below(2) == 0)
            ops.push_back(check::MicroOp::readList(key));
        else
            ops.push_back(check::MicroOp::append(key, shared.nextValue.fetch_add(1)));
    }
    return ops;
}

ResultRow runCase(const BenchConfig& config, std::string_view caseName, int threads) {
    EngineOptions options;  // path empty: in memory
    std::filesystem::path dir;
    if (caseName == "disk") {
        dir = baseDirectory(config) / fmt::format("mvkv-listappend-{}", ::getpid());
        std::filesystem::remove_all(dir);
        options.path = dir.string();
        options.syncMode = SyncMode::kNone;
        options.checkpointInterval = std::chrono::milliseconds(0);  // the maintenance thread's
    }
    options.historySweepInterval = std::chrono::milliseconds(0);  // the maintenance thread's
    std::unique_ptr<Engine> engine = mustValue(Engine::open(options), "open");
    must(mustValue(engine->openSession(), "open a session")->createCollection(kNs), "create");

    Shared shared;
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> checkpoints{0}, sweeps{0};
    std::thread maintenance([&] {
        while (!stop.load()) {
            uint64_t newest = shared.newestCommit.load();
            if (newest > 20) {
                // Both may be refused (a concurrent commit's rules): advisory here.
                engine->setStableTimestamp(newest - 5).ignore();
                engine->setOldestTimestamp(newest - 20).ignore();
            }
            engine->sweepHistory().ignore();  // advisory too
            ++sweeps;
            if (!dir.empty() && engine->checkpoint().ok())
                ++checkpoints;
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
    });

    std::atomic<uint64_t> conflicts{0};
    Measurement m = runParallel(threads, limitsFor(config), [&](int index) {
        std::shared_ptr<Session> session = mustValue(engine->openSession(), "open a session");
        return [session, &shared, &conflicts, index,
                rng = Rng(config.seed + 977 * uint64_t(index) + 1)]() mutable {
            TxnOptions txnOptions;
            uint64_t newest = shared.newestCommit.load();
            if (rng.below(4) == 0 && newest > 10) {
                txnOptions.readTs = newest - rng.below(10);
                txnOptions.roundUpReadTs = true;
            }
            Status s = runListAppendTxn(*session, kNs, shared.recorder, index,
                                        randomTxn(rng, shared), txnOptions);
            if (s.code() == StatusCode::kWriteConflict) {
                ++conflicts;
                return;
            }
            must(s, "list-append transaction");
            uint64_t ts = session->lastCommitTimestamp();
            uint64_t seen = shared.newestCommit.load();
            while (ts > seen && !shared.newestCommit.compare_exchange_weak(seen, ts)) {
            }
        };
    });
    stop = true;
    maintenance.join();
    engine.reset();
    if (!dir.empty())
        std::filesystem::remove_all(dir);

    ResultRow row = toRow(kWorkload, caseName, threads, m);
    const auto checked =
        check::checkHistory(shared.recorder.text(), check::Model::kSnapshotIsolation);
    if (!checked.ok())
        throw std::runtime_error("the recorded history cannot be checked: " +
                                 checked.status().toString());
    const check::CheckReport& report = checked.value();
    size_t forbidden = 0;
    for (const check::Anomaly& a : report.anomalies)
        forbidden += a.forbidden;
    row.setMetric("txns", double(report.transactions));
    row.setMetric("conflicts", double(conflicts.load()));
    row.setMetric("anomalies", double(report.anomalies.size()));
    row.setMetric("forbidden", double(forbidden));
    row.setMetric("checkpoints", double(checkpoints.load()));
    if (forbidden > 0 && row.error.empty())
        row.error = "isolation anomalies: " + report.toText();
    return row;
}

WorkloadResult runListAppendWorkload(const BenchConfig& config) {
    WorkloadResult result;
    for (int threads : config.threads)
        for (std::string_view c : {"memory", "disk"})
            if (config.wantCase(c))
                result.rows.push_back(runCase(config, c, threads));
    result.notes.push_back(
        "listappend: each row's history checked for snapshot isolation (mvkv-check); "
        "forbidden > 0 fails the row");
    return result;
}

}  // namespace

void registerListAppendWorkload(WorkloadRegistry& registry) {
    Workload w;
    w.name = std::string(kWorkload);
    w.description =
        "mvkv under random list-append transactions (some at recent read timestamps) with "
        "sweeps and checkpoints, its history checked for isolation anomalies";
    w.caseNames = {"memory", "disk"};
    w.run = runListAppendWorkload;
    registry.add(std::move(w));
}

}  // namespace mvkv::bench
