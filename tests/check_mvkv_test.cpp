// The isolation checker driving mvkv (bench/listappend.h): threads run
// list-append transactions through the recorder and the history has no
// forbidden anomaly; a history made wrong on purpose (reads served by an
// older snapshot than the transaction's, or by the engine itself with the
// test-only failpoint readIgnoresSnapshot) is caught.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "bench/listappend.h"
#include "mvkv/check.h"
#include "mvkv/engine.h"
#include "mvkv/failpoint.h"

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

std::string forbiddenText(const mvkv::StatusWith<mvkv::check::CheckReport>& outcome) {
    REQUIRE_MESSAGE(outcome.ok(), outcome.status().toString());
    return outcome.value().toText();
}

}  // namespace

TEST_CASE("mvkv from 4 threads through the recorder: no forbidden anomaly") {
    const uint64_t seed = std::random_device{}();
    MESSAGE("seed " << seed);
    auto engine = openEngine();
    mvkv::check::HistoryRecorder recorder;
    std::atomic<int64_t> nextValue{1};
    std::atomic<uint64_t> newest{0}, committed{0};
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
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            std::mt19937_64 rng(seed + uint64_t(t));
            auto session = openSession(*engine);
            for (int i = 0; i < 500; ++i) {
                std::vector<MicroOp> ops;
                for (int n = 1 + int(rng() % 4); n > 0; --n) {
                    int64_t key = int64_t(rng() % 6);
                    if (rng() % 2)
                        ops.push_back(MicroOp::readList(key));
                    else
                        ops.push_back(MicroOp::append(key, nextValue.fetch_add(1)));
                }
                mvkv::TxnOptions options;
                uint64_t n = newest.load();
                if (rng() % 4 == 0 && n > 10) {
                    options.readTs = n - rng() % 10;
                    options.roundUpReadTs = true;
                }
                mvkv::Status s = mvkv::bench::runListAppendTxn(*session, kNs, recorder, t,
                                                                std::move(ops), options);
                if (s.code() == mvkv::StatusCode::kWriteConflict)
                    continue;
                REQUIRE_MESSAGE(s.ok(), s.toString());
                ++committed;
                uint64_t ts = session->lastCommitTimestamp(), seen = newest.load();
                while (ts > seen && !newest.compare_exchange_weak(seen, ts)) {
                }
            }
        });
    for (auto& th : threads)
        th.join();
    done = true;
    sweeper.join();
    auto outcome = mvkv::check::checkHistory(recorder.text(),
                                             mvkv::check::Model::kSnapshotIsolation);
    INFO(forbiddenText(outcome));
    CHECK(outcome.value().transactions == 2000);
    CHECK(outcome.value().committed == committed.load());
    CHECK(committed.load() > 600);
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
