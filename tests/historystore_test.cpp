// The history store and its sweep, through the engine: old snapshots keep
// reading their versions after the chains are swept (point reads and
// cursors, deleted keys included), reads at every timestamp >= oldest stay
// right and history empties once oldest passes it, a long-running reader
// pins history until it ends, chains stay bounded, conflicts survive a
// sweep, and the stats say who pins what. The background sweep is off here
// (sweeps run on demand) so counts are exact; the concurrency suite runs it.
#include <doctest/doctest.h>

#include <string>

#include "tests/engine_test_util.h"

using namespace mvkv;
using namespace mvkv::engine;
using namespace mvkv::engine::testing;

namespace {

EngineOptions manualSweep(unsigned bound = 8) {
    EngineOptions o;
    // No oplog: WiredTiger's timestamp rules (several commits at one
    // timestamp, one after another), which these cases use.
    o.inMemoryOplogCapBytes = 0;
    o.historySweepInterval = std::chrono::milliseconds(0);
    o.chainSweepBound = bound;
    return o;
}

void commitPut(Session& s, std::string_view ns, std::string_view key, std::string_view value,
               mvcc::Timestamp ts) {
    mustOk(s.begin());
    mustOk(s.put(ns, key, value));
    mustOk(s.commit(ts));
}

void commitRemove(Session& s, std::string_view ns, std::string_view key, mvcc::Timestamp ts) {
    mustOk(s.begin());
    mustOk(s.remove(ns, key));
    mustOk(s.commit(ts));
}

std::string readAt(Session& s, std::string_view ns, std::string_view key, mvcc::Timestamp ts) {
    mustOk(s.begin({ts}));
    std::string v = getOr(s, ns, key);
    mustOk(s.commit());
    return v;
}

std::string scanAt(Session& s, std::string_view ns, mvcc::Timestamp ts) {
    mustOk(s.begin({ts}));
    std::string v = scanAll(s, ns);
    mustOk(s.commit());
    return v;
}

}  // namespace

TEST_CASE("history: a reader at ts 3 keeps its versions through commits at 5, 10, 15 and sweeps") {
    auto engine = openEngine(manualSweep());
    auto w = engine->openSession();
    auto r = engine->openSession();
    mustOk(w->createCollection("db.c"));
    commitPut(*w, "db.c", "a", "a3", 3);
    commitPut(*w, "db.c", "k", "k3", 3);
    commitPut(*w, "db.c", "z", "z3", 3);
    mustOk(r->begin({3}));
    for (mvcc::Timestamp ts : {5, 10, 15}) {
        commitPut(*w, "db.c", "k", "k" + std::to_string(ts), ts);
        commitPut(*w, "db.c", "a", "a" + std::to_string(ts), ts);
        if (ts == 10)
            commitRemove(*w, "db.c", "z", ts);  // deleted later: still there at 3
        engine->sweepHistory();
        CHECK(getOr(*r, "db.c", "k") == "k3");
        CHECK(getOr(*r, "db.c", "a") == "a3");
        CHECK(getOr(*r, "db.c", "z") == "z3");
        CHECK(scanAll(*r, "db.c") == "a=a3,k=k3,z=z3");
        CHECK(scanAll(*r, "db.c", true) == "z=z3,k=k3,a=a3");
    }
    EngineStats st = engine->stats();
    CHECK(st.history.entries > 0);
    CHECK(st.maxChainLength == 1);  // everything older left the chains
    mustOk(r->commit());
    // Newer snapshots read their own versions, from the chain or the history.
    CHECK(readAt(*r, "db.c", "k", 4) == "k3");
    CHECK(readAt(*r, "db.c", "k", 7) == "k5");
    CHECK(readAt(*r, "db.c", "k", 12) == "k10");
    CHECK(readAt(*r, "db.c", "k", 20) == "k15");
    CHECK(readAt(*r, "db.c", "z", 9) == "z3");
    CHECK(readAt(*r, "db.c", "z", 10) == "<NotFound>");
    CHECK(scanAt(*r, "db.c", 7) == "a=a5,k=k5,z=z3");
    CHECK(scanAt(*r, "db.c", 12) == "a=a10,k=k10");
    CHECK(getOr(*r, "db.c", "k") == "k15");
}

TEST_CASE("history: every old timestamp reads right after sweeps; oldest past it empties history") {
    constexpr int kKeys = 40;
    constexpr int kVersions = 6;
    auto engine = openEngine(manualSweep());
    auto s = engine->openSession();
    mustOk(s->createCollection("db.c"));
    mustOk(engine->setOldestTimestamp(1));
    auto key = [](int i) { return "key" + std::to_string(100 + i); };
    auto tsOf = [](int i, int v) { return static_cast<mvcc::Timestamp>(100 * (v + 1) + i); };
    for (int v = 0; v < kVersions; ++v) {
        for (int i = 0; i < kKeys; ++i) {
            if (v == kVersions - 1 && i % 5 == 0)
                commitRemove(*s, "db.c", key(i), tsOf(i, v));
            else
                commitPut(*s, "db.c", key(i), "v" + std::to_string(v), tsOf(i, v));
        }
        engine->sweepHistory();
    }
    CHECK(engine->stats().history.entries == size_t(kKeys * (kVersions - 1)));
    auto expected = [&](int i, mvcc::Timestamp at) -> std::string {
        std::string out = "<NotFound>";
        for (int v = 0; v < kVersions; ++v) {
            if (tsOf(i, v) <= at)
                out = (v == kVersions - 1 && i % 5 == 0) ? "<NotFound>" : "v" + std::to_string(v);
        }
        return out;
    };
    const mvcc::Timestamp last = tsOf(kKeys - 1, kVersions - 1);
    for (mvcc::Timestamp at = 1; at <= last + 1; at += 13) {
        mustOk(s->begin({at}));
        for (int i = 0; i < kKeys; ++i)
            REQUIRE_MESSAGE(getOr(*s, "db.c", key(i)) == expected(i, at), "key ", i, " at ", at);
        mustOk(s->commit());
    }
    // Oldest past every version: the history is obsolete and goes.
    mustOk(engine->setStableTimestamp(last));
    mustOk(engine->setOldestTimestamp(last));
    engine->sweepHistory();
    EngineStats st = engine->stats();
    CHECK(st.history.entries == 0);
    CHECK(st.history.bytes == 0);
    CHECK(st.history.removals == st.history.inserts);
    CHECK(st.history.keysRemoved == size_t(kKeys / 5));  // the deleted keys left the tree
    CHECK(st.collections.at(0).chains == size_t(kKeys - kKeys / 5));
    CHECK(s->begin({last - 1}).code() == StatusCode::kInvalidArgument);
    mustOk(s->begin({last}));
    for (int i = 0; i < kKeys; ++i)
        CHECK(getOr(*s, "db.c", key(i)) == expected(i, last));
    mustOk(s->commit());
}

TEST_CASE("history: a long-running snapshot pins history until it ends") {
    constexpr int kKeys = 20;
    constexpr int kRounds = 10;
    auto engine = openEngine(manualSweep());
    auto w = engine->openSession();
    auto r = engine->openSession();
    mustOk(w->createCollection("db.c"));
    mvcc::Timestamp ts = 10;
    for (int i = 0; i < kKeys; ++i)
        commitPut(*w, "db.c", "k" + std::to_string(i), "initial", ts);
    mustOk(engine->setOldestTimestamp(ts));
    mustOk(r->begin({ts}));
    for (int round = 0; round < kRounds; ++round) {
        ++ts;
        for (int i = 0; i < kKeys; ++i)
            commitPut(*w, "db.c", "k" + std::to_string(i), "r" + std::to_string(round), ts);
        // As MongoDB does: oldest follows the newest commit; the reader holds pinned.
        mustOk(engine->setStableTimestamp(ts));
        mustOk(engine->setOldestTimestamp(ts));
        engine->sweepHistory();
    }
    EngineStats pinned = engine->stats();
    CHECK(pinned.history.entries == size_t(kKeys * kRounds));  // K updates, K entries
    CHECK(pinned.history.pinned == 10);
    CHECK(pinned.history.pinnedByReader);
    CHECK(pinned.history.readerReadTs == 10);
    CHECK(pinned.history.readerSession == r->info().id);
    CHECK(getOr(*r, "db.c", "k7") == "initial");
    mustOk(r->commit());
    engine->sweepHistory();  // one sweep after the reader ended
    EngineStats freed = engine->stats();
    CHECK(freed.history.entries == 0);
    CHECK(freed.history.bytes == 0);
    CHECK_FALSE(freed.history.pinnedByReader);
    CHECK(freed.history.pinned == ts);
}

TEST_CASE("history: a background pass walks the tree only when a write or the last walk left work") {
    auto engine = openEngine(manualSweep());
    auto w = engine->openSession();
    mustOk(w->createCollection("db.c"));
    auto moveOldest = [&] {
        mvcc::Timestamps t = engine->timestamps();
        mustOk(engine->setStableTimestamp(t.clock));
        mustOk(engine->setOldestTimestamp(t.clock));
    };
    auto skipped = [&] { return engine->stats().history.walksSkipped; };
    for (int i = 0; i < 100; ++i)
        mustOk(w->put("db.c", "k" + std::to_string(i), "v"));
    engine->backgroundHistoryPass();  // writes were noted at open: walks
    CHECK(skipped() == 0);
    engine->backgroundHistoryPass();  // every key one live version, no write since
    CHECK(skipped() == 1);
    mustOk(w->put("db.c", "new", "v"));  // a new key alone is nothing to sweep
    engine->backgroundHistoryPass();
    CHECK(skipped() == 2);
    CHECK(engine->stats().history.sweepPasses == 3);

    // An overwrite: the next pass walks and frees the old version.
    mustOk(w->put("db.c", "k1", "v2"));
    moveOldest();
    const uint64_t freedBefore = engine->stats().history.versionsFreed;
    engine->backgroundHistoryPass();
    CHECK(skipped() == 2);
    CHECK(engine->stats().history.versionsFreed == freedBefore + 1);
    engine->backgroundHistoryPass();  // that walk left k1 one version: nothing to walk for
    CHECK(skipped() == 3);

    // A deletion that not every reader has passed stays; the walks go on
    // with no write until it can leave the tree.
    auto r = engine->openSession();
    mustOk(r->begin());
    CHECK(getOr(*r, "db.c", "k2") == "v");
    mustOk(w->remove("db.c", "k2"));
    engine->backgroundHistoryPass();
    engine->backgroundHistoryPass();
    CHECK(skipped() == 3);
    CHECK(engine->stats().history.keysRemoved == 0);
    CHECK(getOr(*r, "db.c", "k2") == "v");
    mustOk(r->commit());
    moveOldest();
    engine->backgroundHistoryPass();  // the last walk left the deletion: walks
    CHECK(skipped() == 3);
    CHECK(engine->stats().history.keysRemoved == 1);
    engine->backgroundHistoryPass();
    engine->backgroundHistoryPass();
    CHECK(skipped() == 5);
    CHECK(getOr(*w, "db.c", "k2") == "<NotFound>");
    CHECK(getOr(*w, "db.c", "k1") == "v2");
    // An aborted overwrite stays on top of its key (no pass unlinks it),
    // which leaves no work for later passes: they skip again.
    mustOk(w->begin());
    mustOk(w->put("db.c", "k3", "never"));
    mustOk(w->abort());
    engine->backgroundHistoryPass();  // noted by the write: walks
    CHECK(skipped() == 5);
    engine->backgroundHistoryPass();
    CHECK(skipped() == 6);
    CHECK(getOr(*w, "db.c", "k3") == "v");
    engine->sweepHistory();  // an explicit sweep always walks
    CHECK(skipped() == 6);
}

TEST_CASE("history: a pass leaves to the next one what was replaced after it took its horizon") {
    auto engine = openEngine(manualSweep());
    auto w = engine->openSession();
    auto r = engine->openSession();
    mustOk(w->createCollection("db.c"));
    commitPut(*w, "db.c", "k", "v1", 10);
    commitPut(*w, "db.c", "other", "o1", 10);
    mustOk(engine->setOldestTimestamp(10));
    mustOk(r->begin({10}));  // needs v1 and o1 from here on
    commitPut(*w, "db.c", "k", "v2", 20);
    commitPut(*w, "db.c", "other", "o2", 20);
    // The pass's horizon is taken before k is written again: v2 and v1 are
    // under a version too new for it, so k's chain waits for the next pass;
    // `other` was replaced before the horizon, and o1 goes to the store.
    engine->setHistoryPassTestHook([&] { commitPut(*w, "db.c", "k", "v3", 30); });
    engine->sweepHistory();
    engine->setHistoryPassTestHook({});
    EngineStats first = engine->stats();
    CHECK(first.history.versionsMoved == 1);  // o1 only; before, v2 and v1 went too
    CHECK(first.history.entries == 1);
    CHECK(getOr(*r, "db.c", "k") == "v1");  // from the chain
    CHECK(getOr(*r, "db.c", "other") == "o1");  // from the store
    CHECK(readAt(*w, "db.c", "k", 20) == "v2");
    // The next pass judges k's chain: the reader still needs v1; v2 was
    // the newest at 20 to 29, which oldest (10) still allows reading.
    engine->sweepHistory();
    EngineStats second = engine->stats();
    CHECK(second.history.versionsMoved == 3);
    CHECK(getOr(*r, "db.c", "k") == "v1");  // now from the store
    CHECK(readAt(*w, "db.c", "k", 20) == "v2");
    CHECK(getOr(*w, "db.c", "k") == "v3");
    mustOk(r->commit());
    mustOk(engine->setStableTimestamp(30));
    mustOk(engine->setOldestTimestamp(30));
    engine->sweepHistory();
    CHECK(engine->stats().history.entries == 0);
    CHECK(getOr(*w, "db.c", "k") == "v3");
}

TEST_CASE("history: with no long reader, a hot key's own sweeps free its versions and move none") {
    constexpr unsigned kBound = 8;
    auto engine = openEngine(manualSweep(kBound));
    auto s = engine->openSession();
    mustOk(s->createCollection("db.c"));
    size_t maxSeen = 0;
    for (int i = 0; i < 3000; ++i) {
        mustOk(s->put("db.c", "hot" + std::to_string(i % 3), "value" + std::to_string(i)));
        // As MongoDB does: oldest follows the newest commit closely.
        if (i % 5 == 4) {
            mvcc::Timestamps t = engine->timestamps();
            mustOk(engine->setStableTimestamp(t.clock));
            mustOk(engine->setOldestTimestamp(t.clock));
        }
        if (i % 10 == 9)
            maxSeen = std::max<size_t>(maxSeen, engine->stats().maxChainLength);
    }
    EngineStats st = engine->stats();
    MESSAGE("longest chain ", maxSeen, ", key sweeps ", st.history.keySweeps, ", moved ",
            st.history.versionsMoved, ", freed ", st.history.versionsFreed);
    // Chains stay short though nothing is moved: each sweep frees what
    // every reader has passed.
    CHECK(maxSeen <= 3 * kBound);
    CHECK(st.history.keySweeps > 3000 / kBound / 2);
    CHECK(st.history.versionsFreed > 2500);
    // Nothing went to the store: the chains never came near kKeyMoveDepth
    // (before, a write's sweep moved every version newer than oldest).
    CHECK(st.history.versionsMoved == 0);
    CHECK(st.chainBytes < 40 * 1024);
    CHECK(getOr(*s, "db.c", "hot2") == "value2999");
    engine->sweepHistory();
    CHECK(engine->stats().history.entries == 0);
}

TEST_CASE("history: a chain a reader holds is moved to the store once it is kKeyMoveDepth deep") {
    constexpr unsigned kBound = 8;
    constexpr unsigned kDeep = HistorySweeper::kKeyMoveDepth;
    auto engine = openEngine(manualSweep(kBound));
    auto s = engine->openSession();
    auto reader = engine->openSession();
    mustOk(s->createCollection("db.c"));
    commitPut(*s, "db.c", "k", "old", 5);
    mustOk(engine->setOldestTimestamp(5));
    mustOk(reader->begin({5}));
    CHECK(getOr(*reader, "db.c", "k") == "old");
    size_t maxSeen = 0;
    for (int i = 0; i < 3 * static_cast<int>(kDeep); ++i) {
        commitPut(*s, "db.c", "k", "v" + std::to_string(i), static_cast<mvcc::Timestamp>(10 + i));
        maxSeen = std::max<size_t>(maxSeen, engine->stats().maxChainLength);
    }
    EngineStats st = engine->stats();
    // Below the move depth the writes' sweeps could free nothing (the
    // reader needs "old") and moved nothing; past it, the chain went to the
    // store and the depth started over.
    CHECK(maxSeen <= kDeep + kBound);
    CHECK(maxSeen >= kDeep);
    CHECK(st.history.versionsMoved >= kDeep - kBound);
    CHECK(getOr(*reader, "db.c", "k") == "old");
    CHECK(readAt(*s, "db.c", "k", 10 + kDeep) == "v" + std::to_string(kDeep));
    mustOk(reader->commit());
}

TEST_CASE("history: a writer whose snapshot predates a swept commit still conflicts") {
    auto engine = openEngine(manualSweep());
    auto a = engine->openSession();
    auto b = engine->openSession();
    mustOk(a->createCollection("db.c"));
    commitPut(*a, "db.c", "k", "v1", 5);
    // By snapshot (no read timestamp) and by read timestamp.
    auto t1 = engine->openSession();
    auto t2 = engine->openSession();
    mustOk(t1->begin());
    mustOk(t2->begin({5}));
    CHECK(getOr(*t1, "db.c", "k") == "v1");
    commitPut(*b, "db.c", "k", "v2", 10);
    commitPut(*b, "db.c", "k", "v3", 20);
    engine->sweepHistory();
    CHECK(engine->stats().history.entries > 0);
    CHECK(getOr(*t1, "db.c", "k") == "v1");  // from the history store
    CHECK(getOr(*t2, "db.c", "k") == "v1");
    CHECK(t1->put("db.c", "k", "mine").code() == StatusCode::kWriteConflict);
    CHECK(t2->put("db.c", "k", "mine").code() == StatusCode::kWriteConflict);
    CHECK(getOr(*a, "db.c", "k") == "v3");
}

TEST_CASE("history: a dropped collection's history goes with the next sweep") {
    auto engine = openEngine(manualSweep());
    auto s = engine->openSession();
    auto r = engine->openSession();
    mustOk(s->createCollection("db.gone"));
    commitPut(*s, "db.gone", "k", "v1", 5);
    mustOk(r->begin({5}));
    commitPut(*s, "db.gone", "k", "v2", 6);
    engine->sweepHistory();
    CHECK(engine->stats().history.entries == 1);
    mustOk(r->commit());
    mustOk(s->dropCollection("db.gone"));
    engine->sweepHistory();
    CHECK(engine->stats().history.entries == 0);
    // A new collection of the same name starts with no history.
    mustOk(s->createCollection("db.gone"));
    CHECK(readAt(*s, "db.gone", "k", 5) == "<NotFound>");
}

TEST_CASE("history: stats JSON has the history section and the chain histogram") {
    auto engine = openEngine(manualSweep());
    auto s = engine->openSession();
    mustOk(s->createCollection("db.c"));
    commitPut(*s, "db.c", "a", "1", 5);
    commitPut(*s, "db.c", "a", "2", 6);
    commitPut(*s, "db.c", "b", "1", 7);
    EngineStats st = engine->stats();
    CHECK(st.chainLengthHistogram[0] == 1);  // b
    CHECK(st.chainLengthHistogram[1] == 1);  // a
    std::string json = engine->statsJson();
    for (const char* field : {"\"history\"", "\"entries\"", "\"pinnedBy\"", "\"lengthHistogram\"",
                              "\"versionsMoved\"", "\"keysRemoved\""})
        CHECK_MESSAGE(json.find(field) != std::string::npos, field);
}

TEST_CASE("history: versions with one commit timestamp are read in version order after a sweep") {
    // The timestamp rules allow a key's next version at the same timestamp;
    // the history store must still hand out the one whose replacement the
    // reader cannot see.
    auto engine = openEngine(manualSweep());
    auto s = engine->openSession();
    auto r = engine->openSession();
    mustOk(s->createCollection("db.c"));
    mustOk(engine->setOldestTimestamp(5));
    commitPut(*s, "db.c", "k", "a", 10);
    commitPut(*s, "db.c", "k", "b", 10);
    commitPut(*s, "db.c", "k", "c", 20);
    mustOk(r->begin({15}));
    engine->sweepHistory();
    CHECK(engine->stats().history.entries >= 1);
    CHECK(getOr(*r, "db.c", "k") == "b");
    mustOk(r->commit());
    CHECK(readAt(*r, "db.c", "k", 15) == "b");
    CHECK(readAt(*r, "db.c", "k", 10) == "b");
    CHECK(readAt(*r, "db.c", "k", 20) == "c");
}

TEST_CASE("history: a deep chain is swept every bound writes, not at every write") {
    constexpr unsigned kBound = 8;
    constexpr int kWrites = 300;
    auto engine = openEngine(manualSweep(kBound));
    auto s = engine->openSession();
    mustOk(s->createCollection("db.c"));
    // No oldest timestamp: nothing is visible to all, so no sweep can free
    // anything and the chain grows until it is moved to the store.
    size_t maxSeen = 0;
    for (int i = 0; i < kWrites; ++i) {
        mustOk(s->put("db.c", "k", std::to_string(i)));
        maxSeen = std::max<size_t>(maxSeen, engine->stats().maxChainLength);
    }
    EngineStats st = engine->stats();
    MESSAGE("key sweeps ", st.history.keySweeps, ", moved ", st.history.versionsMoved);
    // A sweep comes at depths bound + 1, 2 bound + 1, ...; a move to the
    // store leaves [the write, the version under it] and the count starts over.
    CHECK(st.history.keySweeps >= kWrites / kBound - 2);
    CHECK(st.history.keySweeps <= kWrites / (kBound - 1) + 1);
    CHECK(st.history.versionsMoved > 0);
    // The chain grew to the move depth (nothing could be freed) and no further.
    CHECK(maxSeen >= HistorySweeper::kKeyMoveDepth);
    CHECK(maxSeen <= HistorySweeper::kKeyMoveDepth + kBound);
    CHECK(getOr(*s, "db.c", "k") == std::to_string(kWrites - 1));
}

TEST_CASE("history: wantsKeySweep fires past the bound every bound versions, and when saturated") {
    CHECK_FALSE(HistorySweeper::wantsKeySweep(8, 8));
    CHECK(HistorySweeper::wantsKeySweep(9, 8));
    CHECK_FALSE(HistorySweeper::wantsKeySweep(10, 8));
    CHECK(HistorySweeper::wantsKeySweep(17, 8));
    CHECK(HistorySweeper::wantsKeySweep(255, 8));
    CHECK_FALSE(HistorySweeper::wantsKeySweep(100, 0));
    CHECK(HistorySweeper::wantsKeySweep(2, 1));
}
