// Workload "changestream": change streams and the in-memory oplog they read
// on an engine without a data directory.
//
// Cases (each at every --threads count, on in-memory engines):
//   commit_oplog    commits per second keeping the in-memory oplog (the default)
//   commit_nooplog  the same with inMemoryOplogCapBytes 0 (no oplog): the
//                   commit_oplog row's x_nooplog is the in-memory oplog's cost
//   events          --threads writers commit for the run's duration while one
//                   consumer reads a change stream on the collection; the
//                   row's ops are the events it read, its ops/s events per
//                   second from its first event until it has read the
//                   writers' last commit (metric writes_per_sec: the writers')
// A commit is one implicit put of a --value-size value to one of 10,000
// random keys.
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>

#include "harness.h"
#include "keys.h"
#include "workload.h"
#include "mvkv/engine.h"

namespace mvkv::bench {
namespace {

constexpr std::string_view kWorkload = "changestream";
constexpr std::string_view kNs = "bench.changes";
constexpr uint64_t kCommitKeys = 10000;
const char* const kCases[] = {"commit_oplog", "commit_nooplog", "events"};

std::shared_ptr<Engine> openInMemory(uint64_t oplogCap) {
    EngineOptions o;
    o.inMemoryOplogCapBytes = oplogCap;
    std::shared_ptr<Engine> e = mustValue(Engine::open(o), "open an in-memory engine");
    must(mustValue(e->openSession(), "open a session")->createCollection(kNs),
         "create the collection");
    return e;
}

Measurement commits(const BenchConfig& config, int threads, Engine& e) {
    return runParallel(threads, limitsFor(config), [&](int index) {
        auto rng = std::make_shared<std::mt19937_64>(config.seed + uint64_t(index) * 7919);
        KeyFormat keys(config.keySize);
        auto key = std::make_shared<std::string>(keys.size(), '\0');
        auto value = std::make_shared<std::string>(config.valueSize, 'c');
        std::shared_ptr<Session> s = mustValue(e.openSession(), "open a session");
        return [=]() mutable {
            keys.make(key->data(), (*rng)() % kCommitKeys);
            must(s->put(kNs, *key, *value), "put");
        };
    });
}

// The events row: the writers' measurement, then the consumer's figures.
ResultRow runEvents(const BenchConfig& config, int threads) {
    using Clock = std::chrono::steady_clock;
    auto e = openInMemory(uint64_t{1} << 30);  // the consumer never falls behind the cap
    ChangeStreamOptions o;
    o.ns = std::string(kNs);
    std::unique_ptr<ChangeStream> stream = mustValue(e->watch(o), "watch");
    std::atomic<Timestamp> target{UINT64_MAX};
    uint64_t events = 0;
    Clock::time_point first{}, last{};
    std::string error;
    std::thread consumer([&] {
        Timestamp seen = 0;
        while (seen < target.load()) {
            auto ev = stream->next(std::chrono::milliseconds(20));
            if (!ev.ok()) {
                error = ev.status().toString();
                return;
            }
            if (!ev.value())
                continue;
            if (events++ == 0)
                first = Clock::now();
            seen = ev.value()->clusterTime;
        }
        last = Clock::now();
    });
    Measurement writers;
    try {
        writers = commits(config, threads, *e);
    } catch (const std::exception& ex) {
        writers.error = ex.what();
    }
    target.store(e->refreshOplogVisibility());
    consumer.join();
    stream.reset();
    ResultRow row = toRow(kWorkload, "events", threads, writers);
    row.setMetric("writes_per_sec", writers.wallSeconds > 0
                                        ? double(writers.totalOps) / writers.wallSeconds
                                        : 0);
    row.ops = events;
    row.seconds = std::chrono::duration<double>(last - first).count();
    row.opsPerSec = row.seconds > 0 ? double(events) / row.seconds : 0;
    row.nsPerOp = events > 0 ? row.seconds * 1e9 / double(events) : 0;
    row.cpuPercent = -1;
    if (!error.empty() && row.error.empty())
        row.error = "consumer: " + error;
    return row;
}

WorkloadResult runChangeStreamWorkload(const BenchConfig& config) {
    WorkloadResult result;
    for (int threads : config.threads) {
        for (std::string_view c : kCases) {
            if (!config.wantCase(c))
                continue;
            if (c == "events") {
                result.rows.push_back(runEvents(config, threads));
                continue;
            }
            Measurement m;
            try {
                m = repeatRuns(config.repeat, [&] {
                    auto e = openInMemory(c == "commit_oplog" ? uint64_t{64} << 20 : 0);
                    return commits(config, threads, *e);
                });
            } catch (const std::exception& ex) {
                m.error = ex.what();
            }
            result.rows.push_back(toRow(kWorkload, c, threads, m));
        }
    }
    for (ResultRow& r : result.rows) {
        if (r.caseName != "commit_oplog" || r.opsPerSec <= 0)
            continue;
        const ResultRow* base = findRow(result.rows, "commit_nooplog", r.threads);
        if (base && base->opsPerSec > 0 && base->error.empty())
            r.setMetric("x_nooplog", r.opsPerSec / base->opsPerSec, "x");
    }
    result.notes.push_back(fmt::format(
        "in-memory engines; a commit is one implicit put of a {}-byte value to one of {} random "
        "keys; events: one change-stream consumer while the writers commit",
        config.valueSize, kCommitKeys));
    return result;
}

}  // namespace

void registerChangeStreamWorkload(WorkloadRegistry& registry) {
    Workload w;
    w.name = std::string(kWorkload);
    w.description =
        "change-stream events per second read by one consumer while writers commit, and the "
        "in-memory oplog's cost per commit (in-memory engines with and without it)";
    for (const char* c : kCases)
        w.caseNames.emplace_back(c);
    w.run = runChangeStreamWorkload;
    registry.add(std::move(w));
}

}  // namespace mvkv::bench
