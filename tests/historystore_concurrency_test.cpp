// Writers, readers at random old timestamps, snapshot readers without a read
// timestamp, an oldest-timestamp mover and the background sweep (plus
// on-demand sweeps and the long-chain trigger), all at once. Every read at a
// timestamp is checked against a model of what was committed when; every
// snapshot reader checks that its snapshot never changes. Counts, not timing.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/engine_test_util.h"

using namespace mvkv;
using namespace mvkv::engine;
using namespace mvkv::engine::testing;

namespace {

constexpr int kWriters = 2;
constexpr int kKeysPerWriter = 12;
constexpr int kCommitsPerWriter = 1500;

struct Version {
    mvcc::Timestamp ts;
    bool deleted;
};

// The model: per key, the committed versions, appended by the key's only
// writer after each commit.
struct Model {
    std::mutex mutex;
    std::vector<std::vector<Version>> versions{size_t(kWriters * kKeysPerWriter)};

    void add(int key, Version v) {
        std::lock_guard lock(mutex);
        versions[size_t(key)].push_back(v);
    }
    // "<NotFound>" or the value the newest version at or before `at` wrote.
    std::string expected(int key, mvcc::Timestamp at) {
        std::lock_guard lock(mutex);
        std::string out = "<NotFound>";
        for (const Version& v : versions[size_t(key)]) {
            if (v.ts <= at)
                out = v.deleted ? "<NotFound>" : "v" + std::to_string(v.ts);
        }
        return out;
    }
};

std::string keyName(int k) {
    return "key" + std::to_string(100 + k);
}

}  // namespace

TEST_CASE("history concurrency: old-timestamp reads match the model while everything sweeps") {
    EngineOptions options;
    options.historySweepInterval = std::chrono::milliseconds(2);
    options.chainSweepBound = 4;
    auto engine = openEngine(options);
    {
        auto s = engine->openSession();
        mustOk(s->createCollection("db.c"));
    }
    Model model;
    std::atomic<mvcc::Timestamp> nextTs{10};
    // Each writer's newest timestamp whose fate is in the model: no commit at
    // or below the minimum of these is still unknown to the model.
    std::atomic<mvcc::Timestamp> settled[kWriters];
    for (auto& s : settled)
        s.store(9);
    auto settledFloor = [&] {
        mvcc::Timestamp m = settled[0].load();
        for (int w = 1; w < kWriters; ++w)
            m = std::min(m, settled[w].load());
        return m;
    };
    std::atomic<int> writersDone{0};
    std::atomic<int> wrong{0}, snapshotChanged{0}, checkedReads{0}, refused{0};
    std::vector<std::thread> threads;
    for (int w = 0; w < kWriters; ++w) {
        threads.emplace_back([&, w] {
            auto s = engine->openSession();
            std::mt19937 rng(static_cast<unsigned>(w + 1));
            for (int i = 0; i < kCommitsPerWriter; ++i) {
                int key = w * kKeysPerWriter + static_cast<int>(rng() % kKeysPerWriter);
                mvcc::Timestamp ts = nextTs.fetch_add(1);
                bool del = rng() % 8 == 0;
                mustOk(s->begin());
                Status op = del ? s->remove("db.c", keyName(key))
                                : s->put("db.c", keyName(key), "v" + std::to_string(ts));
                if (op.code() == StatusCode::kNotFound) {
                    mustOk(s->abort());  // deleting an absent key: nothing to do
                } else {
                    mustOk(op);
                    Status c = s->commit(ts);
                    if (c.ok())
                        model.add(key, {ts, del});
                    else
                        CHECK_MESSAGE(c.code() == StatusCode::kInvalidArgument, c.toString());
                }
                settled[w].store(ts);
            }
            settled[w].store(std::numeric_limits<mvcc::Timestamp>::max());
            writersDone.fetch_add(1);
        });
    }
    // Readers at random timestamps between oldest and the settled floor.
    for (int r = 0; r < 2; ++r) {
        threads.emplace_back([&, r] {
            auto s = engine->openSession();
            std::mt19937 rng(static_cast<unsigned>(100 + r));
            // Until the writers are done, and at least 20 checked rounds
            // whatever the scheduling (reads after the end are checked too).
            for (int rounds = 0; writersDone.load() < kWriters || rounds < 20;) {
                mvcc::Timestamp hi = std::min(settledFloor(), nextTs.load() - 1);
                mvcc::Timestamp lo = engine->timestamps().oldest;
                if (hi < 10 || hi < lo)
                    continue;
                lo = std::max<mvcc::Timestamp>(lo, 10);
                mvcc::Timestamp at = lo + rng() % (hi - lo + 1);
                Status b = s->begin({at});
                if (b.code() == StatusCode::kInvalidArgument) {
                    refused.fetch_add(1);  // oldest moved past it meanwhile
                    continue;
                }
                mustOk(b);
                for (int k = 0; k < kWriters * kKeysPerWriter; ++k) {
                    std::string got = getOr(*s, "db.c", keyName(k));
                    std::string want = model.expected(k, at);
                    if (got != want) {
                        wrong.fetch_add(1);
                        MESSAGE("key ", k, " at ", at, ": got ", got, ", want ", want);
                    }
                    checkedReads.fetch_add(1);
                }
                mustOk(s->commit());
                ++rounds;
            }
        });
    }
    // A snapshot reader without a read timestamp: its view never changes.
    threads.emplace_back([&] {
        auto s = engine->openSession();
        for (int rounds = 0; writersDone.load() < kWriters || rounds < 5; ++rounds) {
            mustOk(s->begin());
            std::string first = scanAll(*s, "db.c");
            std::this_thread::yield();
            engine->sweepHistory();  // on demand, besides the background thread
            if (scanAll(*s, "db.c") != first)
                snapshotChanged.fetch_add(1);
            mustOk(s->commit());
        }
    });
    // Oldest and stable follow the settled floor, a little behind.
    threads.emplace_back([&] {
        while (writersDone.load() < kWriters) {
            mvcc::Timestamp f = settledFloor();
            if (f > 40 && f != std::numeric_limits<mvcc::Timestamp>::max()) {
                Status st = engine->setStableTimestamp(f - 20);
                if (st.ok())
                    engine->setOldestTimestamp(f - 30).ignore();
            }
            std::this_thread::yield();
        }
    });
    for (auto& t : threads)
        t.join();
    EngineStats during = engine->stats();
    MESSAGE("checked reads ", checkedReads.load(), ", refused begins ", refused.load(),
            ", sweep passes ", during.history.sweepPasses, ", moved ",
            during.history.versionsMoved, ", freed ", during.history.versionsFreed);
    CHECK(wrong.load() == 0);
    CHECK(snapshotChanged.load() == 0);
    CHECK(checkedReads.load() > 0);
    EngineStats st = engine->stats();
    CHECK(st.history.sweepPasses > 0);
    CHECK(st.history.versionsMoved + st.history.versionsFreed > 0);
    // Quiet now: oldest at the end, one sweep, no history left.
    mvcc::Timestamp end = nextTs.load();
    mustOk(engine->setStableTimestamp(end));
    mustOk(engine->setOldestTimestamp(end));
    engine->sweepHistory();
    CHECK(engine->stats().history.entries == 0);
    auto s = engine->openSession();
    for (int k = 0; k < kWriters * kKeysPerWriter; ++k)
        CHECK(getOr(*s, "db.c", keyName(k)) == model.expected(k, end));
}
