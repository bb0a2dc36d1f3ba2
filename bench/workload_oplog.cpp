// Workload "oplog": commits per second at each durability level, mvkv next
// to LMDB in the same run, and the oplog's log writer alone.
//
// Cases (each at every --threads count; each in a fresh directory under --dir):
//   commit_none    mvkv, sync none: the oplog buffered, left to the OS
//   commit_write   mvkv, sync write: write(2) before a commit returns
//   commit_fsync   mvkv, sync fsync: fdatasync before a commit returns
//   lmdb_nosync    LMDB with MDB_NOSYNC (written to the page cache, never synced)
//   lmdb_sync      LMDB's default synchronous commit
//   append_none / append_write / append_fsync   the log writer alone
// A commit is one implicit put (its own transaction) of a --value-size value
// to one of 10,000 keys chosen at random. Group commit makes concurrent
// committers share writes and syncs (metrics per_write, per_sync); mvkv
// rows carry x_lmdb_nosync / x_lmdb_sync: their ops/s over LMDB's at the same
// thread count. Recovery and replica apply: workload_recovery.cpp.
#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>

#include "harness.h"
#include "keys.h"
#include "store.h"
#include "workload.h"
#include "engine/engine.h"
#include "engine/session.h"
#include "oplog/log_writer.h"

namespace mvkv::bench {
namespace {

constexpr std::string_view kWorkload = "oplog";
constexpr uint64_t kCommitKeys = 10000;

enum class Target { kMvkv, kLmdb, kLogWriter };

struct Case {
    std::string_view name;
    Target target;
    oplog::SyncMode mode;  // kWrite is not an LMDB mode
};

const Case kCases[] = {
    {"commit_none", Target::kMvkv, oplog::SyncMode::kNone},
    {"commit_write", Target::kMvkv, oplog::SyncMode::kWrite},
    {"commit_fsync", Target::kMvkv, oplog::SyncMode::kFsync},
    {"lmdb_nosync", Target::kLmdb, oplog::SyncMode::kNone},
    {"lmdb_sync", Target::kLmdb, oplog::SyncMode::kFsync},
    {"append_none", Target::kLogWriter, oplog::SyncMode::kNone},
    {"append_write", Target::kLogWriter, oplog::SyncMode::kWrite},
    {"append_fsync", Target::kLogWriter, oplog::SyncMode::kFsync},
};

void freshDirectory(const std::filesystem::path& dir) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    std::filesystem::create_directories(dir, ec);
    if (ec)
        throw std::runtime_error(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
}

void check(const Status& s) {
    if (!s.ok())
        throw std::runtime_error(s.toString());
}

// A function making each thread's op: one commit of a random key.
template <class Put>
auto commitOps(const BenchConfig& config, Put put) {
    return [&config, put](int index) {
        auto rng = std::make_shared<std::mt19937_64>(config.seed + uint64_t(index) * 7919);
        KeyFormat keys(config.keySize);
        auto key = std::make_shared<std::string>(keys.size(), '\0');
        auto value = std::make_shared<std::string>(config.valueSize, 'c');
        auto thread = put();
        return [=]() mutable {
            keys.make(key->data(), (*rng)() % kCommitKeys);
            check(thread(*key, *value));
        };
    };
}

Measurement runMvkv(const Case& c, const BenchConfig& config, int threads,
                    const std::filesystem::path& dir, oplog::OplogStats* stats) {
    freshDirectory(dir);
    engine::EngineOptions o;
    o.path = dir.string();
    o.syncMode = c.mode;
    o.checkpointInterval = std::chrono::milliseconds(0);
    auto opened = engine::Engine::open(o);
    check(opened.status());
    std::shared_ptr<engine::Engine> engine = std::move(opened).value();
    check(engine->openSession()->createCollection("bench.commits"));
    Measurement m = runParallel(threads, limitsFor(config), commitOps(config, [engine] {
        std::shared_ptr<engine::Session> s = engine->openSession();
        return [s](std::string_view k, std::string_view v) { return s->put("bench.commits", k, v); };
    }));
    *stats = engine->oplog()->stats();
    return m;
}

Measurement runLmdb(const Case& c, const BenchConfig& config, int threads,
                    const std::filesystem::path& dir) {
    const StoreFactory* lmdb = findStoreFactory("lmdb");
    if (!lmdb || !lmdb->available)
        throw std::runtime_error("LMDB is not built in");
    freshDirectory(dir);
    StoreOptions so;
    so.dir = dir.string();
    so.sync = c.mode == oplog::SyncMode::kFsync ? SyncMode::kFsync : SyncMode::kNone;
    so.expectedKeys = kCommitKeys;
    so.keySize = config.keySize;
    so.valueSize = config.valueSize;
    so.maxThreads = threads;
    auto opened = lmdb->open(so);
    check(opened.status());
    std::shared_ptr<Store> store = std::move(opened).value();
    return runParallel(threads, limitsFor(config), commitOps(config, [store] {
        auto t = store->thread();
        check(t.status());
        std::shared_ptr<StoreThread> thread = std::move(t).value();
        return [thread](std::string_view k, std::string_view v) { return thread->put(k, v); };
    }));
}

Measurement runLogWriter(const Case& c, const BenchConfig& config, int threads,
                         const std::filesystem::path& dir, oplog::LogWriter::Stats* stats) {
    freshDirectory(dir);
    auto created = oplog::LogWriter::create({dir.string()}, 1);
    check(created.status());
    std::shared_ptr<oplog::LogWriter> writer = std::move(created).value();
    Measurement m = runParallel(threads, limitsFor(config), [&](int) {
        return [writer, mode = c.mode, payload = std::string(config.valueSize, 'r')] {
            check(writer->append(payload, mode));
        };
    });
    *stats = writer->stats();
    writer->close().ignore();
    return m;
}

ResultRow runCase(const Case& c, const BenchConfig& config, int threads) {
    std::filesystem::path dir =
        baseDirectory(config) / fmt::format("mvkv-bench-oplog-{}-t{}", c.name, threads);
    uint64_t records = 0, batches = 0, syncs = 0;
    Measurement m;
    try {
        m = repeatRuns(config.repeat, [&] {
            Measurement run;
            if (c.target == Target::kMvkv) {
                oplog::OplogStats s;
                run = runMvkv(c, config, threads, dir, &s);
                records = s.records, batches = s.batches, syncs = s.syncs;
            } else if (c.target == Target::kLmdb) {
                run = runLmdb(c, config, threads, dir);
            } else {
                oplog::LogWriter::Stats s;
                run = runLogWriter(c, config, threads, dir, &s);
                records = s.records, batches = s.batches, syncs = s.syncs;
            }
            return run;
        });
    } catch (const std::exception& e) {
        m.error = e.what();
    }
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    ResultRow row = toRow(kWorkload, c.name, threads, m);
    if (batches > 0 && c.mode != oplog::SyncMode::kNone)
        row.setMetric("per_write", double(records) / double(batches));
    if (c.mode == oplog::SyncMode::kFsync && syncs > 0)
        row.setMetric("per_sync", double(records) / double(syncs));
    return row;
}

// mvkv's commits over LMDB's at the same thread count.
void addLmdbRatios(std::vector<ResultRow>& rows) {
    for (ResultRow& r : rows) {
        if (r.caseName.rfind("commit_", 0) != 0 || r.opsPerSec <= 0)
            continue;
        for (std::string_view base : {"lmdb_nosync", "lmdb_sync"}) {
            const ResultRow* b = findRow(rows, base, r.threads);
            if (b && b->opsPerSec > 0 && b->error.empty())
                r.setMetric(fmt::format("x_{}", base), r.opsPerSec / b->opsPerSec, "x");
        }
    }
}

WorkloadResult runOplogWorkload(const BenchConfig& config) {
    WorkloadResult result;
    for (int threads : config.threads) {
        for (const Case& c : kCases) {
            if (config.wantCase(c.name))
                result.rows.push_back(runCase(c, config, threads));
        }
    }
    addScaling(result.rows);
    addLmdbRatios(result.rows);
    result.notes.push_back(fmt::format(
        "a commit is one implicit put of a {}-byte value to one of {} random keys; records of "
        "the log writer alone are {} bytes; directories under {}",
        config.valueSize, kCommitKeys, config.valueSize, baseDirectory(config).string()));
    return result;
}

}  // namespace

void registerOplogWorkload(WorkloadRegistry& registry) {
    Workload w;
    w.name = std::string(kWorkload);
    w.description =
        "commits per second with sync none, write and fsync, mvkv next to LMDB with and "
        "without MDB_NOSYNC, and the log writer alone (group commit shares writes and syncs)";
    for (const Case& c : kCases)
        w.caseNames.emplace_back(c.name);
    w.run = runOplogWorkload;
    registry.add(std::move(w));
}

}  // namespace mvkv::bench
