// Workload "doclock": mvkv's document locks (docs/document-locks.md), in
// memory.
//
// Cases:
//   insert_delete     an insert of a key and its delete, two implicit writes
//                     (the baseline: what the seeds' pattern costs done by
//                     hand, one insert to lock and one delete to unlock).
//   acquire_release   DocumentLocks::acquire of a key and its release, no
//                     contention: each thread locks keys of its own (a
//                     transaction writing the lock entry and the owner index
//                     entry, then one removing both).
//                     ratio = ns/op over insert_delete at the same thread count.
//   contended_16      2 threads lock random keys of 16 shared ones without
//                     waiting: an acquisition that finds the key held gets
//                     DocumentLocked (locked_pct: their share of the
//                     acquisitions), one that gets it releases it at once.
//   contended_16_wait the same, but an acquisition waits for the key (woken
//                     by the other thread's release): every op ends holding
//                     the lock; waits_pct is the share that slept first.
// Keys cycle over --keys per thread. The contended cases always run 2
// threads (whatever --threads says).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.h"
#include "keys.h"
#include "workload.h"
#include "mvkv/document_locks.h"
#include "mvkv/engine.h"

namespace mvkv::bench {
namespace {

constexpr std::string_view kWorkload = "doclock";
constexpr std::string_view kNs = "bench.docs";
constexpr uint64_t kSharedKeys = 16;

std::unique_ptr<Engine> openEngine() {
    std::unique_ptr<Engine> e = mustValue(Engine::open({}), "open");
    must(mustValue(e->openSession(), "open a session")->createCollection(kNs), "create");
    return e;
}

/// One worker's session and its own key sequence.
struct Worker {
    std::shared_ptr<Session> session;
    std::string prefix;
    uint64_t next = 0;
    uint64_t keys = 1;
    std::string key;

    const std::string& nextKey() {
        key = prefix;
        key += std::to_string(next++ % keys);
        return key;
    }
};

Worker makeWorker(Engine& e, int index, uint64_t keys) {
    Worker w;
    w.session = mustValue(e.openSession(), "open a session");
    w.prefix = fmt::format("t{}-", index);
    w.keys = std::max<uint64_t>(keys, 1);
    return w;
}

Measurement runInsertDelete(Engine& e, const BenchConfig& config, int threads) {
    return repeatRuns(config.repeat, [&] {
        return runParallel(threads, limitsFor(config), [&](int index) {
            return [w = makeWorker(e, index, config.keys)]() mutable {
                const std::string& k = w.nextKey();
                must(w.session->insert(kNs, k, "locked"), "insert");
                must(w.session->remove(kNs, k), "delete");
            };
        });
    });
}

Measurement runAcquireRelease(Engine& e, const BenchConfig& config, int threads) {
    return repeatRuns(config.repeat, [&] {
        return runParallel(threads, limitsFor(config), [&](int index) {
            AcquireOptions o;
            o.owner = fmt::format("owner-{}", index);
            return [w = makeWorker(e, index, config.keys), o]() mutable {
                const std::string& k = w.nextKey();
                DocumentLocks locks(*w.session);
                must(locks.acquire(kNs, k, o).status(), "acquire");
                must(locks.release(kNs, k, *o.owner), "release");
            };
        });
    });
}

/// 2 threads on kSharedKeys keys, each op an acquisition (waiting or not)
/// and, when it got the lock, its release.
Measurement runContended(Engine& e, const BenchConfig& config, bool wait) {
    return repeatRuns(config.repeat, [&] {
        return runParallel(2, limitsFor(config), [&](int index) {
            AcquireOptions o;
            o.owner = fmt::format("owner-{}", index);
            if (wait)
                o.wait = std::chrono::seconds(10);
            std::shared_ptr<Session> opened = mustValue(e.openSession(), "open a session");
            return [session = std::move(opened), o, wait,
                    rng = Rng(config.seed + 31 * uint64_t(index)), key = std::string()]() mutable {
                key = "shared-" + std::to_string(rng.below(kSharedKeys));
                DocumentLocks locks(*session);
                auto got = locks.acquire(kNs, key, o);
                if (!wait && got.status().code() == StatusCode::kDocumentLocked)
                    return;  // counted by the engine (denied)
                must(got.status(), "acquire");
                must(locks.release(kNs, key, *o.owner), "release");
            };
        });
    });
}

/// The engine's document lock counters (serverStatus "documentLocks"), to
/// take differences of.
struct LockCounts {
    uint64_t acquired = 0, denied = 0, waits = 0;
    static LockCounts of(Engine& e) {
        const std::string text =
            mustValue(e.serverStatus("documentLocks"), "serverStatus documentLocks");
        const nlohmann::json c = nlohmann::json::parse(text).at("documentLocks");
        return {c.at("acquired").get<uint64_t>(), c.at("denied").get<uint64_t>(),
                c.at("waits").get<uint64_t>()};
    }
};

WorkloadResult runDoclockWorkload(const BenchConfig& config) {
    WorkloadResult result;
    auto engine = openEngine();
    for (int threads : config.threads) {
        if (config.wantCase("insert_delete"))
            result.rows.push_back(toRow(kWorkload, "insert_delete", threads,
                                        runInsertDelete(*engine, config, threads)));
        if (config.wantCase("acquire_release"))
            result.rows.push_back(toRow(kWorkload, "acquire_release", threads,
                                        runAcquireRelease(*engine, config, threads)));
    }
    addRatioToBaseline(result.rows, "insert_delete");
    addScaling(result.rows);
    // Shares over every acquisition of the case (warm-up and --repeat runs
    // included), from the engine's own counters.
    auto pct = [](uint64_t part, uint64_t whole) {
        return whole == 0 ? 0.0 : 100.0 * double(part) / double(whole);
    };
    for (bool wait : {false, true}) {
        const std::string_view name = wait ? "contended_16_wait" : "contended_16";
        if (!config.wantCase(name))
            continue;
        const LockCounts before = LockCounts::of(*engine);
        ResultRow row = toRow(kWorkload, name, 2, runContended(*engine, config, wait));
        const LockCounts after = LockCounts::of(*engine);
        const uint64_t acquired = after.acquired - before.acquired;
        const uint64_t denied = after.denied - before.denied;
        if (wait)
            row.setMetric("waits_pct", pct(after.waits - before.waits, acquired), "%");
        else
            row.setMetric("locked_pct", pct(denied, acquired + denied), "%");
        result.rows.push_back(std::move(row));
    }
    result.notes.push_back(
        "in memory; acquire_release = DocumentLocks::acquire + release (a transaction writing "
        "<ns>.lock and <ns>.lock.owners, then one removing both); insert_delete = two implicit "
        "writes of one key; ratio = ns/op over insert_delete");
    result.notes.push_back(
        "contended_16: 2 threads, 16 shared keys, no wait: locked_pct = DocumentLocked outcomes "
        "/ ops; contended_16_wait: the same with a wait (woken by the other's release)");
    return result;
}

}  // namespace

void registerDoclockWorkload(WorkloadRegistry& registry) {
    Workload w;
    w.name = std::string(kWorkload);
    w.description =
        "mvkv's document locks: uncontended acquire + release pairs against insert + delete "
        "pairs; 2 threads contending on 16 keys, without and with waiting";
    w.caseNames = {"insert_delete", "acquire_release", "contended_16", "contended_16_wait"};
    w.run = runDoclockWorkload;
    registry.add(std::move(w));
}

}  // namespace mvkv::bench
