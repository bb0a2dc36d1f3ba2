// The isolation checker driving mvkv (bench/listappend.h): threads run
// list-append transactions through the recorder and the history has no
// forbidden anomaly; a history made wrong on purpose (reads served by an
// older snapshot than the transaction's, or by the engine itself with the
// test-only failpoint readIgnoresSnapshot) is caught. Untimestamped and
// timestamped readers together, with sweeps and checkpoints, keep snapshot
// isolation (docs/mvcc.md, "Untimestamped snapshots").
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "bench/listappend.h"
#include "mvkv/check.h"
#include "mvkv/engine.h"
#include "mvkv/failpoint.h"
#include "tests/temp_dir.h"

using mvkv::check::MicroOp;

namespace {

constexpr std::string_view kNs = "test.listappend";

std::unique_ptr<mvkv::Session> openSession(mvkv::Engine& engine) {
    auto s = engine.openSession();
    REQUIRE(s.ok());
    return std::move(s).value();
}

std::unique_ptr<mvkv::Engine> openEngine() {
    mvkv::EngineOptions options;  // path empty: in memory
    options.historySweepInterval = std::chrono::milliseconds(0);
    auto e = mvkv::Engine::open(options);
    REQUIRE(e.ok());
    auto engine = std::move(e).value();
    REQUIRE(openSession(*engine)->createCollection(kNs).ok());
    return engine;
}

// Polls `done` (a condition another thread makes true), failing after a
// generous bound instead of hanging when it never comes.
template <typename Done>
void waitUntil(Done done) {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done()) {
        REQUIRE(std::chrono::steady_clock::now() < limit);
        std::this_thread::yield();
    }
}

// What threads of runListAppendThreads share: the history, the newest
// commit timestamp seen, the commits.
struct ThreadedRun {
    mvkv::check::HistoryRecorder recorder;
    std::atomic<int64_t> nextValue{1};
    std::atomic<uint64_t> newest{0}, committed{0};
};

// Four threads of `perThread` random list-append transactions over 6 keys,
// each begun with options(rng, newest commit seen); a write conflict is a
// failed transaction, any other error fails the test.
void runListAppendThreads(
    mvkv::Engine& engine, uint64_t seed, int perThread, ThreadedRun& run,
    const std::function<mvkv::TxnOptions(std::mt19937_64&, uint64_t)>& chooseOptions) {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            std::mt19937_64 rng(seed + uint64_t(t));
            auto session = openSession(engine);
            for (int i = 0; i < perThread; ++i) {
                std::vector<MicroOp> ops;
                for (int n = 1 + int(rng() % 4); n > 0; --n) {
                    int64_t key = int64_t(rng() % 6);
                    if (rng() % 2)
                        ops.push_back(MicroOp::readList(key));
                    else
                        ops.push_back(MicroOp::append(key, run.nextValue.fetch_add(1)));
                }
                const mvkv::TxnOptions options = chooseOptions(rng, run.newest.load());
                mvkv::Status s = mvkv::bench::runListAppendTxn(*session, kNs, run.recorder, t,
                                                                std::move(ops), options);
                if (s.code() == mvkv::StatusCode::kWriteConflict)
                    continue;
                REQUIRE_MESSAGE(s.ok(), s.toString());
                ++run.committed;
                uint64_t ts = session->lastCommitTimestamp(), seen = run.newest.load();
                while (ts > seen && !run.newest.compare_exchange_weak(seen, ts)) {
                }
            }
        });
    for (auto& th : threads)
        th.join();
}

std::string forbiddenText(const mvkv::StatusWith<mvkv::check::CheckReport>& outcome) {
    REQUIRE_MESSAGE(outcome.ok(), outcome.status().toString());
    return outcome.value().toText();
}

}  // namespace

TEST_CASE("mvkv from 4 threads through the recorder: no forbidden anomaly") {
    const uint64_t seed = std::random_device{}();
    MESSAGE("seed " << seed);
    auto engine = openEngine();
    ThreadedRun run;
    std::atomic<uint64_t>& newest = run.newest;
    std::atomic<bool> done{false};
    // Sweeps while the transactions run (oldest trails the newest commit).
    std::thread sweeper([&] {
        while (!done.load()) {
            uint64_t n = newest.load();
            if (n > 20)
                engine->setOldestTimestamp(n - 20).ignore();
            engine->sweepHistory().ignore();
            std::this_thread::yield();
        }
    });
    runListAppendThreads(*engine, seed, 500, run, [](std::mt19937_64& rng, uint64_t n) {
        mvkv::TxnOptions options;
        if (rng() % 4 == 0 && n > 10) {
            options.readTs = n - rng() % 10;
            options.roundUpReadTs = true;
        }
        return options;
    });
    done = true;
    sweeper.join();
    auto outcome = mvkv::check::checkHistory(run.recorder.text(),
                                             mvkv::check::Model::kSnapshotIsolation);
    INFO(forbiddenText(outcome));
    CHECK(outcome.value().transactions == 2000);
    CHECK(outcome.value().committed == run.committed.load());
    CHECK(run.committed.load() > 600);
    CHECK(outcome.value().valid());
}

TEST_CASE("reads from an older snapshot than the transaction's are caught") {
    auto engine = openEngine();
    mvkv::check::HistoryRecorder recorder;
    auto session = openSession(*engine);
    auto stale = openSession(*engine);
    mvkv::TxnOptions now;
    REQUIRE(mvkv::bench::runListAppendTxn(*session, kNs, recorder, 0,
                                          {MicroOp::append(1, 1), MicroOp::append(2, 1)}, now)
                .ok());
    REQUIRE(stale->begin().ok());  // its snapshot: keys 1 and 2 hold [1]
    std::vector<int64_t> list;
    std::string value;
    REQUIRE(stale->get(kNs, mvkv::bench::listKey(1), &value).ok());
    REQUIRE(mvkv::bench::runListAppendTxn(*session, kNs, recorder, 0,
                                          {MicroOp::append(1, 2), MicroOp::append(2, 2)}, now)
                .ok());
    // Reads served by the stale snapshot; the appends by the current one:
    // it reads [1] of key 1 yet appends after 2.
    REQUIRE(mvkv::bench::runListAppendTxn(*session, kNs, recorder, 1,
                                          {MicroOp::readList(1), MicroOp::append(1, 3)}, now,
                                          stale.get())
                .ok());
    REQUIRE(mvkv::bench::runListAppendTxn(*session, kNs, recorder, 0, {MicroOp::readList(1)}, now)
                .ok());
    REQUIRE(stale->commit().ok());
    auto outcome = mvkv::check::checkHistory(recorder.text(),
                                             mvkv::check::Model::kSnapshotIsolation);
    INFO(forbiddenText(outcome));
    CHECK_FALSE(outcome.value().valid());
    REQUIRE(outcome.value().anomalies.size() == 1);
    CHECK(outcome.value().anomalies[0].type == mvkv::check::AnomalyType::kGSingle);
}

TEST_CASE("the failpoint readIgnoresSnapshot breaks isolation, and the checker catches it") {
    auto engine = openEngine();
    mvkv::check::HistoryRecorder recorder;
    auto session = openSession(*engine);
    mvkv::TxnOptions now;
    REQUIRE(mvkv::bench::runListAppendTxn(*session, kNs, recorder, 0,
                                          {MicroOp::append(1, 1), MicroOp::append(2, 1)}, now)
                .ok());
    mvkv::TxnOptions before;
    before.readTs = session->lastCommitTimestamp();  // keys 1 and 2 hold [1]
    REQUIRE(mvkv::bench::runListAppendTxn(*session, kNs, recorder, 0,
                                          {MicroOp::append(1, 2), MicroOp::append(2, 2)}, now)
                .ok());
    // At its read timestamp both keys hold [1]; the failpoint serves key 2's
    // read from the newest commits: [1, 2]. Read skew.
    REQUIRE(mvkv::configureFailPoint("readIgnoresSnapshot",
                                     "alwaysOn key=" + mvkv::bench::listKey(2))
                .ok());
    mvkv::Status skewed = mvkv::bench::runListAppendTxn(
        *session, kNs, recorder, 1, {MicroOp::readList(1), MicroOp::readList(2)}, before);
    REQUIRE(mvkv::configureFailPoint("readIgnoresSnapshot", "off").ok());
    REQUIRE(skewed.ok());
    // A read of the final lists shows the checker each key's version order.
    REQUIRE(mvkv::bench::runListAppendTxn(*session, kNs, recorder, 0,
                                          {MicroOp::readList(1), MicroOp::readList(2)}, now)
                .ok());
    auto outcome = mvkv::check::checkHistory(recorder.text(),
                                             mvkv::check::Model::kSnapshotIsolation);
    INFO(forbiddenText(outcome));
    CHECK_FALSE(outcome.value().valid());
    REQUIRE(outcome.value().anomalies.size() == 1);
    CHECK(outcome.value().anomalies[0].type == mvkv::check::AnomalyType::kGSingle);
}

TEST_CASE("commits that finish out of timestamp order: an untimestamped and a timestamped "
          "reader still agree (no G-nonadjacent)") {
    // T1 appends to key 1 and is held after its oplog append, its commit
    // timestamp fixed but not visible; T2 appends to key 2 at a later
    // timestamp and finishes. Before read points an untimestamped reader
    // then saw T2 and not T1, and a reader at T1's timestamp T1 and not T2.
    auto engine = openEngine();
    mvkv::check::HistoryRecorder recorder;
    auto a = openSession(*engine), b = openSession(*engine), u = openSession(*engine),
         v = openSession(*engine), last = openSession(*engine);
    mvkv::TxnOptions now;
    const uint64_t waitsBefore = engine->stats().holeWaits;
    const uint64_t at = mvkv::configureFailPoint("hangAfterOplogAppend", "times 1").value();
    std::thread t1([&] {
        CHECK(mvkv::bench::runListAppendTxn(*a, kNs, recorder, 1, {MicroOp::append(1, 1)}, now)
                  .ok());
    });
    REQUIRE(mvkv::waitForFailPoint("hangAfterOplogAppend", at + 1, std::chrono::seconds(30)).ok());
    const mvkv::Timestamp t1Ts = engine->timestamps().readPoint + 1;  // the hole T1 holds
    std::atomic<bool> t2Done{false};
    std::thread t2([&] {
        CHECK(mvkv::bench::runListAppendTxn(*b, kNs, recorder, 2, {MicroOp::append(2, 1)}, now)
                  .ok());
        t2Done = true;
    });
    // T2 is visible by its id now, but its commit waits for T1's below it.
    waitUntil([&] { return engine->stats().holeWaits >= waitsBefore + 1; });
    CHECK_FALSE(t2Done.load());
    REQUIRE(mvkv::bench::runListAppendTxn(*u, kNs, recorder, 3,
                                          {MicroOp::readList(1), MicroOp::readList(2)}, now)
                .ok());
    std::string value;
    CHECK(u->get(kNs, mvkv::bench::listKey(2), &value).code() == mvkv::StatusCode::kNotFound);
    // A read at T1's timestamp, above the read point, waits for T1.
    std::atomic<bool> vDone{false};
    std::thread vt([&] {
        mvkv::TxnOptions atT1;
        atT1.readTs = t1Ts;
        CHECK(mvkv::bench::runListAppendTxn(*v, kNs, recorder, 4,
                                            {MicroOp::readList(1), MicroOp::readList(2)}, atT1)
                  .ok());
        vDone = true;
    });
    waitUntil([&] { return engine->stats().holeWaits >= waitsBefore + 2; });
    CHECK_FALSE(vDone.load());
    REQUIRE(mvkv::configureFailPoint("hangAfterOplogAppend", "off").ok());
    t1.join();
    t2.join();
    vt.join();
    CHECK(a->lastCommitTimestamp() == t1Ts);
    CHECK(b->lastCommitTimestamp() > t1Ts);
    REQUIRE(u->get(kNs, mvkv::bench::listKey(2), &value).ok());  // both visible now
    CHECK(value == "1");
    REQUIRE(mvkv::bench::runListAppendTxn(*last, kNs, recorder, 0,
                                          {MicroOp::readList(1), MicroOp::readList(2)}, now)
                .ok());
    auto outcome = mvkv::check::checkHistory(recorder.text(),
                                             mvkv::check::Model::kSnapshotIsolation);
    INFO(forbiddenText(outcome));
    CHECK(outcome.value().valid());
    CHECK(outcome.value().anomalies.empty());
}

TEST_CASE("a durable engine from 4 threads, readers with and without read timestamps, sweeps and "
          "checkpoints: snapshot isolation holds") {
    const uint64_t seed = std::random_device{}();
    MESSAGE("seed " << seed);
    mvkv::testing::TempDir dir("mvkv-check-durable");
    mvkv::EngineOptions options;
    options.path = dir.path;
    options.syncMode = mvkv::SyncMode::kNone;
    options.historySweepInterval = std::chrono::milliseconds(0);
    options.checkpointInterval = std::chrono::milliseconds(0);
    auto opened = mvkv::Engine::open(options);
    REQUIRE_MESSAGE(opened.ok(), opened.status().toString());
    auto engine = std::move(opened).value();
    REQUIRE(openSession(*engine)->createCollection(kNs).ok());
    ThreadedRun run;
    std::atomic<uint64_t>& newest = run.newest;
    std::atomic<bool> done{false};
    // Stable and oldest trail the newest commit; sweeps and checkpoints run
    // while the transactions do.
    std::thread background([&] {
        for (unsigned pass = 0; !done.load(); ++pass) {
            uint64_t n = newest.load();
            if (n > 20) {
                engine->setStableTimestamp(n - 10).ignore();
                engine->setOldestTimestamp(n - 20).ignore();
            }
            engine->sweepHistory().ignore();
            if (pass % 8 == 0)
                REQUIRE(engine->checkpoint().ok());
            std::this_thread::yield();
        }
    });
    runListAppendThreads(*engine, seed, 400, run, [](std::mt19937_64& rng, uint64_t n) {
        mvkv::TxnOptions txn;
        switch (rng() % 3) {
            case 0:  // untimestamped: at the read point
                break;
            case 1:  // a little in the past (rounded up past oldest)
                if (n > 10) {
                    txn.readTs = n - rng() % 10;
                    txn.roundUpReadTs = true;
                }
                break;
            default:  // the newest commit seen: often above the read point
                if (n > 0) {
                    txn.readTs = n;
                    txn.roundUpReadTs = true;
                }
                break;
        }
        return txn;
    });
    done = true;
    background.join();
    auto outcome = mvkv::check::checkHistory(run.recorder.text(),
                                             mvkv::check::Model::kSnapshotIsolation);
    INFO(forbiddenText(outcome));
    CHECK(outcome.value().transactions == 1600);
    CHECK(outcome.value().committed == run.committed.load());
    CHECK(run.committed.load() > 400);
    CHECK(outcome.value().valid());
}
