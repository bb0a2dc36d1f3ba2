// The oplog as readers see it (engine/engine.h openOplogCursor): entries in
// timestamp order, a transaction's entries together, aborted work absent,
// ops that say what each write did (i, u, d), replayed alike by recovery,
// nothing past a hole, tailable cursors that wake up for new entries, and
// capping with CappedPositionLost.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "oplog/oplog_cursor.h"
#include "tests/engine_test_util.h"
#include "tests/temp_dir.h"

using namespace mvkv;
using namespace mvkv::engine;
using namespace mvkv::engine::testing;
using mvkv::testing::TempDir;
using namespace std::chrono_literals;

namespace {


std::unique_ptr<oplog::OplogCursor> cursor(Engine& e, mvcc::Timestamp from = 0,
                                           std::string ns = "") {
    auto c = e.openOplogCursor({from, std::move(ns)});
    REQUIRE_MESSAGE(c.ok(), c.status().toString());
    return std::move(c).value();
}

// Every visible entry from the cursor, as "ts:op:ns:key=value" joined by ' '.
std::string drain(oplog::OplogCursor& c) {
    std::vector<oplog::OplogEntry> got;
    Status s = c.next(&got, 100000);
    REQUIRE_MESSAGE(s.ok(), s.toString());
    std::string out;
    for (const auto& e : got) {
        if (!out.empty())
            out += ' ';
        out += std::to_string(e.ts) + ":" + static_cast<char>(e.op) + ":" + e.ns + ":" + e.key +
               "=" + e.value;
    }
    return out;
}

}  // namespace

TEST_CASE("oplog: entries in timestamp order, a transaction's together, aborted work absent") {
    TempDir dir("mvkv-oplog-tail-test");
    auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
    auto s = engine->openSession();
    mustOk(s->createCollection("app.a"));  // ts 1
    mustOk(s->begin());
    mustOk(s->put("app.a", "k1", "v1"));
    mustOk(s->put("app.a", "k2", "v2"));
    mustOk(s->commit(10));
    mustOk(s->begin());
    mustOk(s->put("app.a", "k3", "aborted"));
    mustOk(s->abort());
    mustOk(s->insert("app.a", "k4", "v4"));  // ts 11
    mustOk(s->remove("app.a", "k1"));        // ts 12
    engine->oplog()->refreshVisibility();
    auto c = cursor(*engine);
    CHECK(drain(*c) ==
          "1:c:app.a:=create 10:i:app.a:k1=v1 10:i:app.a:k2=v2 11:i:app.a:k4=v4 12:d:app.a:k1=");
    CHECK(drain(*c).empty());
    CHECK(c->lastTs() == 12);
    // From a timestamp, and filtered by namespace.
    mustOk(s->createCollection("other.b"));
    mustOk(s->put("other.b", "x", "y"));
    engine->oplog()->refreshVisibility();
    CHECK(drain(*cursor(*engine, 11)) == "11:i:app.a:k4=v4 12:d:app.a:k1= 13:c:other.b:=create 14:i:other.b:x=y");
    CHECK(drain(*cursor(*engine, 0, "other")) == "13:c:other.b:=create 14:i:other.b:x=y");
    CHECK(drain(*cursor(*engine, 0, "app.a")).find("other") == std::string::npos);
    oplog::OplogStats st = engine->oplog()->stats();
    CHECK(st.entries == 7);
    CHECK(st.records == 6);
    CHECK(st.firstTs == 1);
    CHECK(st.lastTs == 14);
    CHECK(st.visibleTs == 14);
}

TEST_CASE("oplog: ops say what a write did: i created the key, u replaced a value, d removed it") {
    TempDir dir("mvkv-oplog-tail-test");
    auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
    auto s = engine->openSession();
    mustOk(s->createCollection("app.a"));  // 1
    mustOk(s->put("app.a", "k", "1"));     // 2 i: a new key
    mustOk(s->put("app.a", "k", "2"));     // 3 u: an overwrite
    mustOk(s->remove("app.a", "k"));       // 4 d
    mustOk(s->put("app.a", "k", "3"));     // 5 i: a put after a delete
    mustOk(s->update("app.a", "k", "4"));  // 6 u
    mustOk(s->remove("app.a", "k"));       // 7 d
    mustOk(s->insert("app.a", "k", "5"));  // 8 i
    mustOk(s->put("app.a", "", ""));       // 9 i: the empty key
    mustOk(s->put("app.a", "", "e"));      // 10 u
    // An aborted write is not what a later put replaces.
    mustOk(s->begin());
    mustOk(s->put("app.a", "ab", "aborted"));
    mustOk(s->abort());
    mustOk(s->put("app.a", "ab", "x"));  // 11 i
    mustOk(s->begin());
    mustOk(s->put("app.a", "ab", "aborted"));
    mustOk(s->abort());
    mustOk(s->put("app.a", "ab", "y"));  // 12 u
    // Versions moved to the history store below the newest: still an overwrite.
    engine->sweepHistory();
    mustOk(s->put("app.a", "ab", "z"));  // 13 u
    // In a transaction each write is logged as the transaction saw the key
    // then, its own earlier writes included (MongoDB's applyOps does so).
    mustOk(s->begin());
    mustOk(s->put("app.a", "t", "1"));  // i
    mustOk(s->put("app.a", "t", "2"));  // u: its own first write
    mustOk(s->remove("app.a", "t"));    // d
    mustOk(s->put("app.a", "t", "3"));  // i: after its own delete
    mustOk(s->remove("app.a", "k"));    // d
    mustOk(s->put("app.a", "k", "6"));  // i
    mustOk(s->commit(20));
    engine->oplog()->refreshVisibility();
    const std::string want =
        "1:c:app.a:=create 2:i:app.a:k=1 3:u:app.a:k=2 4:d:app.a:k= 5:i:app.a:k=3 "
        "6:u:app.a:k=4 7:d:app.a:k= 8:i:app.a:k=5 9:i:app.a:= 10:u:app.a:=e 11:i:app.a:ab=x "
        "12:u:app.a:ab=y 13:u:app.a:ab=z 20:i:app.a:t=1 20:u:app.a:t=2 20:d:app.a:t= "
        "20:i:app.a:t=3 20:d:app.a:k= 20:i:app.a:k=6";
    CHECK(drain(*cursor(*engine)) == want);
    s.reset();
    engine.reset();
    // Recovery replays i and u alike (a put of the post-image); the ops
    // come back from the files as they were logged.
    auto reopened = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
    auto r = reopened->openSession();
    CHECK(scanAll(*r, "app.a") == "=e,ab=z,k=6,t=3");
    CHECK(drain(*cursor(*reopened)) == want);
}

TEST_CASE("oplog: a reader never sees past a hole, and sees both once it closes") {
    TempDir dir("mvkv-oplog-tail-test");
    auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
    auto setup = engine->openSession();
    mustOk(setup->createCollection("db.c"));  // ts 1
    auto early = engine->openSession();
    auto late = engine->openSession();
    for (bool commitEarly : {true, false}) {
        CAPTURE(commitEarly);
        const mvcc::Timestamp base = engine->timestamps().clock;
        // `early` fixes a smaller commit timestamp and stays open while
        // `late` commits a larger one.
        mustOk(early->begin());
        mustOk(early->put("db.c", "e", "early"));
        mustOk(early->timestampTransaction(base + 10));
        mustOk(late->begin());
        mustOk(late->put("db.c", "l", "late"));
        mustOk(late->commit(base + 20));
        auto c = cursor(*engine, base + 1);
        engine->oplog()->refreshVisibility();
        CHECK(engine->oplog()->visibleTs() < base + 10);
        CHECK(drain(*c).empty());  // ts base+20 is logged, but behind the hole
        if (commitEarly)
            mustOk(early->commit());
        else
            mustOk(early->abort());
        // The visibility thread publishes it; wait for it as a tailer would.
        std::vector<oplog::OplogEntry> got;
        while (got.empty())
            mustOk(c->next(&got, 100, 5000ms));
        std::vector<oplog::OplogEntry> rest;
        mustOk(c->next(&rest, 100));
        got.insert(got.end(), rest.begin(), rest.end());
        if (commitEarly) {
            REQUIRE(got.size() == 2);
            CHECK(got[0].ts == base + 10);
            CHECK(got[0].key == "e");
            CHECK(got[1].ts == base + 20);
        } else {
            REQUIRE(got.size() == 1);
            CHECK(got[0].ts == base + 20);
        }
    }
}

TEST_CASE("oplog: a tailable cursor wakes up for new entries from other threads") {
    TempDir dir("mvkv-oplog-tail-test");
    auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
    auto s = engine->openSession();
    mustOk(s->createCollection("db.c"));
    auto c = cursor(*engine, 2);
    std::vector<oplog::OplogEntry> got;
    mustOk(c->next(&got, 100, 20ms));  // nothing yet: times out empty
    CHECK(got.empty());
    constexpr int kWriters = 4;
    constexpr int kPerWriter = 200;
    std::vector<std::thread> writers;
    for (int w = 0; w < kWriters; ++w)
        writers.emplace_back([&, w] {
            auto ws = engine->openSession();
            for (int i = 0; i < kPerWriter; ++i)
                mustOk(ws->put("db.c", std::to_string(w) + ":" + std::to_string(i), "v"));
        });
    // Every entry arrives, once, in timestamp order, each writer's in its order.
    std::vector<int> nextOf(kWriters, 0);
    mvcc::Timestamp last = 0;
    size_t total = 0;
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while (total < size_t(kWriters * kPerWriter) && std::chrono::steady_clock::now() < deadline) {
        got.clear();
        mustOk(c->next(&got, 64, 1000ms));
        for (const auto& e : got) {
            CHECK(e.ts > last);
            last = e.ts;
            int w = std::stoi(e.key.substr(0, e.key.find(':')));
            int i = std::stoi(e.key.substr(e.key.find(':') + 1));
            CHECK(i == nextOf[w]);
            nextOf[w] = i + 1;
            ++total;
        }
    }
    for (auto& t : writers)
        t.join();
    CHECK(total == size_t(kWriters * kPerWriter));
    CHECK(engine->oplog()->stats().visibilityPublications > 0);
}

TEST_CASE("oplog: capping drops whole segments behind the checkpoints; a lagging reader is lost") {
    TempDir dir("mvkv-oplog-tail-test");
    EngineOptions o = onDisk(dir.path, oplog::SyncMode::kNone);
    o.oplogSegmentBytes = 4096;
    o.oplogCapBytes = 16 * 1024;
    o.checkpointsKept = 1;
    auto engine = openEngine(o);
    auto s = engine->openSession();
    mustOk(s->createCollection("db.c"));
    auto lagging = cursor(*engine, 0);
    std::vector<oplog::OplogEntry> first;
    engine->oplog()->refreshVisibility();
    mustOk(lagging->next(&first, 1));  // positioned at the create
    const std::string value(200, 'x');
    for (int i = 0; i < 400; ++i)
        mustOk(s->put("db.c", "k" + std::to_string(i % 50), value));
    oplog::OplogStats before = engine->oplog()->stats();
    CHECK(before.bytes > o.oplogCapBytes);  // no checkpoint yet: nothing may go
    CHECK(before.segmentsDropped == 0);
    mustOk(engine->checkpoint());
    oplog::OplogStats after = engine->oplog()->stats();
    CHECK(after.segmentsDropped > 0);
    CHECK(after.bytes < before.bytes);
    CHECK(after.bytes >= o.oplogCapBytes);  // never below the cap
    CHECK(after.firstTs > before.firstTs);
    std::vector<oplog::OplogEntry> got;
    Status lost = lagging->next(&got, 10);
    CHECK(lost.code() == StatusCode::kCappedPositionLost);
    CHECK(lost.message().find("truncated") != std::string::npos);
    CHECK(lagging->next(&got, 10).code() == StatusCode::kCappedPositionLost);  // stays lost
    // A reader from the oldest entry there is reads on.
    auto fresh = cursor(*engine, 0);
    mustOk(fresh->next(&got, 10));
    CHECK(!got.empty());
    CHECK(got.front().ts == after.firstTs);
    // And what remains recovers: the checkpoint plus the log after it.
    s.reset();
    engine.reset();
    auto again = openEngine(o);
    CHECK(again->recovery().checkpointLoaded);
    auto s2 = again->openSession();
    for (int k = 0; k < 50; ++k)
        CHECK(getOr(*s2, "db.c", "k" + std::to_string(k)) == value);
}

TEST_CASE("oplog: a commit at or behind what a tailer read is refused; a held timestamp is not") {
    TempDir dir("mvkv-oplog-tail-test");
    auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
    auto s = engine->openSession();
    auto holder = engine->openSession();
    mustOk(s->createCollection("db.c"));
    mustOk(holder->begin());
    mustOk(holder->put("db.c", "h", "held 90"));
    mustOk(holder->timestampTransaction(90));  // a hole at 90
    mustOk(s->begin());
    mustOk(s->put("db.c", "a", "100"));
    mustOk(s->commit(100));
    // Behind (or at) the newest commit: a tailer may have read past it.
    for (mvcc::Timestamp ts : {mvcc::Timestamp{50}, mvcc::Timestamp{100}}) {
        CAPTURE(ts);
        mustOk(s->begin());
        mustOk(s->put("db.c", "b", "late"));
        Status behind = s->commit(ts);
        CHECK(behind.code() == StatusCode::kInvalidArgument);
        CHECK(behind.message().find("timestamp order") != std::string::npos);
    }
    auto c = cursor(*engine, 2);
    engine->oplog()->refreshVisibility();
    CHECK(drain(*c).empty());  // 100 is behind the hole at 90
    // The hole's own timestamp was taken before 100 committed: it commits,
    // and the tailer gets both, in order.
    mustOk(holder->commit());
    engine->oplog()->refreshVisibility();
    CHECK(drain(*c) == "90:i:db.c:h=held 90 100:i:db.c:a=100");
    CHECK(getOr(*s, "db.c", "b") == "<NotFound>");
}
