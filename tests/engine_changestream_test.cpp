// Change streams (replication/change_stream.h) and the in-memory oplog they and
// replicas read on an engine without a data directory. The stories: every
// event type with its namespace and type filters; nothing above the
// majority point; a token resumes after its event, also after a restart;
// history lost past the cap, in memory and on disk; a transaction's events
// together; 4 writers and a consumer that rebuilds the collection from the
// events alone.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "replication/change_stream.h"
#include "engine/ttl_value.h"
#include "tests/engine_test_util.h"
#include "tests/temp_dir.h"
#include "tests/test_seed.h"

using namespace mvkv;
using namespace mvkv::engine;
using namespace mvkv::replication;
using namespace mvkv::engine::testing;
using mvkv::testing::TempDir;
using namespace std::chrono_literals;

namespace {

EngineOptions inMemory(uint64_t oplogCap = 64ull << 20) {
    EngineOptions o;
    o.historySweepInterval = 0ms;
    o.inMemoryOplogCapBytes = oplogCap;
    return o;
}

std::unique_ptr<ChangeStream> watch(Engine& e, ChangeStreamOptions o = {}) {
    auto s = openChangeStream(e, std::move(o));
    REQUIRE_MESSAGE(s.ok(), s.status().toString());
    return std::move(s).value();
}

// The next event, waiting up to 10 s for it (it is due: the caller wrote it).
ChangeEvent nextEvent(ChangeStream& cs) {
    auto ev = cs.next(10s);
    REQUIRE_MESSAGE(ev.ok(), ev.status().toString());
    REQUIRE_MESSAGE(ev.value().has_value(), "no event came");
    return std::move(*ev.value());
}

// No event now: the oplog's visible point is refreshed first, so anything
// committed is readable unless something else holds it back.
void requireNoEvent(Engine& e, ChangeStream& cs) {
    e.oplog()->refreshVisibility();
    auto ev = cs.next(0ms);
    REQUIRE_MESSAGE(ev.ok(), ev.status().toString());
    if (ev.value())
        FAIL("unexpected event: " << changeOpName(ev.value()->op) << " " << ev.value()->ns << " "
                                  << ev.value()->key);
}

std::string describe(const ChangeEvent& ev) {
    std::string s = std::string(changeOpName(ev.op)) + " " + ev.ns;
    if (!ev.key.empty())
        s += " " + ev.key;
    if (ev.value)
        s += "=" + *ev.value;
    return s;
}

// Every event visible now, described.
std::vector<std::string> drain(Engine& e, ChangeStream& cs) {
    e.oplog()->refreshVisibility();
    std::vector<std::string> out;
    while (true) {
        auto ev = cs.next(0ms);
        REQUIRE_MESSAGE(ev.ok(), ev.status().toString());
        if (!ev.value())
            return out;
        out.push_back(describe(*ev.value()));
    }
}

}  // namespace

TEST_CASE("changestream: a prepared transaction shows once at its commit, an aborted one never") {
    auto e = openEngine(inMemory());
    auto s = e->openSession();
    mustOk(s->createCollection("app.c"));
    auto cs = watch(*e, {"app.c", {}, "", 1});
    // Prepared, then aborted: its prepare record must not become events.
    mustOk(s->begin());
    mustOk(s->put("app.c", "gone", "never"));
    mustOk(s->prepare(e->timestamps().clock + 10));
    mustOk(s->abort());
    // Prepared, then committed later: one event, at the commit timestamp.
    mustOk(s->begin());
    mustOk(s->put("app.c", "kept", "v"));
    const mvcc::Timestamp prepareTs = e->timestamps().clock + 10;
    mustOk(s->prepare(prepareTs));
    mustOk(s->commit(prepareTs + 5, prepareTs + 5));
    mustOk(s->put("app.c", "after", "w"));
    CHECK(drain(*e, *cs) == std::vector<std::string>{"insert app.c kept=v", "insert app.c after=w"});
}

TEST_CASE("changestream: insert, update, delete, drop and dropDatabase, with filters") {
    auto e = openEngine(inMemory());
    auto all = watch(*e);
    auto appOnly = watch(*e, {"app", {}, "", 0});
    auto users = watch(*e, {"app.users", {}, "", 0});
    auto deletesAndDrops = watch(*e, {"", {ChangeOp::kDelete, ChangeOp::kDrop}, "", 0});
    auto s = e->openSession();
    mustOk(s->createCollection("app.users"));
    mustOk(s->createCollection("app.orders"));
    mustOk(s->createCollection("other.x"));
    mustOk(s->insert("app.users", "u1", "alice"));
    mustOk(s->update("app.users", "u1", "alice2"));
    mustOk(s->put("app.orders", "o1", "book"));
    mustOk(s->put("other.x", "k", "v"));
    mustOk(s->remove("app.users", "u1"));
    mustOk(s->dropCollection("app.orders"));
    mustOk(s->dropDatabase("app"));
    CHECK(drain(*e, *all) ==
          std::vector<std::string>{"insert app.users u1=alice", "update app.users u1=alice2",
                                   "insert app.orders o1=book", "insert other.x k=v",
                                   "delete app.users u1", "drop app.orders", "dropDatabase app"});
    CHECK(drain(*e, *appOnly) ==
          std::vector<std::string>{"insert app.users u1=alice", "update app.users u1=alice2",
                                   "insert app.orders o1=book", "delete app.users u1",
                                   "drop app.orders", "dropDatabase app"});
    CHECK(drain(*e, *users) ==
          std::vector<std::string>{"insert app.users u1=alice", "update app.users u1=alice2",
                                   "delete app.users u1", "dropDatabase app"});
    CHECK(drain(*e, *deletesAndDrops) ==
          std::vector<std::string>{"delete app.users u1", "drop app.orders"});
}

TEST_CASE("changestream: an event carries cluster time, txn id and a token; starts at a time") {
    auto e = openEngine(inMemory());
    auto s = e->openSession();
    mustOk(s->createCollection("db.c"));
    mustOk(s->put("db.c", "a", "1"));
    const mvcc::Timestamp first = s->lastCommitTs();
    mustOk(s->put("db.c", "b", "2"));
    const mvcc::Timestamp second = s->lastCommitTs();
    auto cs = watch(*e, {"db.c", {}, "", first});
    ChangeEvent a = nextEvent(*cs);
    CHECK(a.clusterTime == first);
    CHECK(a.txnId != mvcc::kNoTxnId);
    CHECK(a.resumeToken.size() == 26);
    CHECK(cs->resumeToken() == a.resumeToken);
    ChangeEvent b = nextEvent(*cs);
    CHECK(b.clusterTime == second);
    CHECK(b.resumeToken > a.resumeToken);  // hex of the position: ordered too
    auto later = watch(*e, {"db.c", {}, "", second});
    CHECK(nextEvent(*later).key == "b");
    // A stream without a start shows only what comes after it opened.
    auto fresh = watch(*e, {"db.c", {}, "", 0});
    requireNoEvent(*e, *fresh);
    mustOk(s->put("db.c", "c", "3"));
    CHECK(nextEvent(*fresh).key == "c");
}

TEST_CASE("changestream: bad options are refused and change nothing") {
    auto e = openEngine(inMemory());
    CHECK(openChangeStream(*e, {"", {}, "nonsense", 0}).status().code() ==
          StatusCode::kInvalidArgument);
    CHECK(openChangeStream(*e, {"", {}, "01zz", 0}).status().code() ==
          StatusCode::kInvalidArgument);
    CHECK(openChangeStream(*e, {"", {}, encodeResumeToken({5, 0}), 3}).status().code() ==
          StatusCode::kInvalidArgument);
    CHECK(openChangeStream(*e, {"bad db", {}, "", 0}).status().code() ==
          StatusCode::kInvalidArgument);
    CHECK(parseChangeOp("replace").status().code() == StatusCode::kInvalidArgument);
    CHECK(parseChangeOp("dropDatabase").value() == ChangeOp::kDropDatabase);
    auto token = decodeResumeToken(encodeResumeToken({0x1234, 7}));
    REQUIRE(token.ok());
    CHECK(token.value() == ResumePosition{0x1234, 7});
    auto none = openEngine(inMemory(0));
    CHECK(none->oplog() == nullptr);
    CHECK(openChangeStream(*none, {}).status().code() == StatusCode::kIllegalOperation);
    CHECK(none->openOplogCursor({}).status().code() == StatusCode::kIllegalOperation);
}

TEST_CASE("changestream: never shows a write above the majority commit point") {
    auto e = openEngine(inMemory());
    auto s = e->openSession();
    mustOk(s->createCollection("db.c"));
    mustOk(s->put("db.c", "a", "1"));
    const mvcc::Timestamp a = s->lastCommitTs();
    e->oplog()->refreshVisibility();
    e->majorityCommitPoint().attach(a);  // a replica set: a is on a majority
    auto cs = watch(*e, {"db.c", {}, "", a});
    CHECK(nextEvent(*cs).key == "a");
    mustOk(s->put("db.c", "b", "2"));
    const mvcc::Timestamp b = s->lastCommitTs();
    mustOk(s->put("db.c", "c", "3"));
    const mvcc::Timestamp c = s->lastCommitTs();
    CHECK(e->majorityCommitTs() == a);
    requireNoEvent(*e, *cs);  // b and c are visible in the oplog, not majority-committed
    e->majorityCommitPoint().advance(b);
    ChangeEvent eb = nextEvent(*cs);
    CHECK(eb.key == "b");
    CHECK(eb.clusterTime <= e->majorityCommitTs());
    requireNoEvent(*e, *cs);
    // A waiting stream wakes when the point moves.
    std::thread mover([&] { e->majorityCommitPoint().advance(c); });
    CHECK(nextEvent(*cs).key == "c");
    mover.join();
    e->majorityCommitPoint().detach();
    mustOk(s->put("db.c", "d", "4"));
    CHECK(nextEvent(*cs).key == "d");  // standalone again: the oplog's own point
}

TEST_CASE("changestream: a transaction's events arrive together, in its order") {
    auto e = openEngine(inMemory());
    auto s = e->openSession();
    auto other = e->openSession();
    mustOk(s->createCollection("db.c"));
    auto cs = watch(*e, {"db", {}, "", 0});
    mustOk(other->put("db.c", "before", "0"));
    mustOk(s->begin());
    mustOk(s->put("db.c", "z", "1"));
    mustOk(other->put("db.c", "between", "x"));  // commits first: its own record
    mustOk(s->put("db.c", "a", "2"));
    mustOk(s->remove("db.c", "before"));
    mustOk(s->commit());
    mustOk(other->put("db.c", "after", "9"));
    std::vector<ChangeEvent> evs;
    for (int i = 0; i < 6; ++i)
        evs.push_back(nextEvent(*cs));
    CHECK(evs[0].key == "before");
    CHECK(evs[1].key == "between");
    CHECK(describe(evs[2]) == "insert db.c z=1");
    CHECK(describe(evs[3]) == "insert db.c a=2");
    CHECK(describe(evs[4]) == "delete db.c before");
    CHECK(evs[5].key == "after");
    for (int i = 3; i <= 4; ++i) {
        CHECK(evs[i].clusterTime == evs[2].clusterTime);
        CHECK(evs[i].txnId == evs[2].txnId);
    }
    CHECK(evs[1].txnId != evs[2].txnId);
    // Resuming inside the transaction shows the rest of it.
    auto resumed = watch(*e, {"db", {}, evs[2].resumeToken, 0});
    CHECK(nextEvent(*resumed).key == "a");
    CHECK(nextEvent(*resumed).key == "before");
    CHECK(nextEvent(*resumed).key == "after");
}

TEST_CASE("changestream: a TTL collection's values come without the stored header") {
    auto e = openEngine(inMemory());
    auto s = e->openSession();
    CollectionOptions ttl;
    ttl.expireAfterSeconds = 3600;
    auto cs = watch(*e);
    mustOk(s->createCollection("db.sessions", ttl));
    mustOk(s->put("db.sessions", "k", "token"));
    mustOk(s->createCollection("db.plain"));
    mustOk(s->put("db.plain", "k", "wxxxxxxxxxlooks-like-a-header"));
    CHECK(*nextEvent(*cs).value == "token");
    CHECK(*nextEvent(*cs).value == "wxxxxxxxxxlooks-like-a-header");
    // A stream that starts after the create learns the kind from the catalog.
    mustOk(s->put("db.sessions", "k2", "token2"));
    auto later = watch(*e, {"db.sessions", {}, "", s->lastCommitTs()});
    CHECK(*nextEvent(*later).value == "token2");
}

TEST_CASE("changestream: a token resumes after its event across a restart of a durable engine") {
    TempDir dir("mvkv-changestream-test");
    std::string tokenAfterB;
    std::vector<std::string> expected;
    {
        auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
        auto s = e->openSession();
        mustOk(s->createCollection("db.c"));
        auto cs = watch(*e, {"db.c", {}, "", 1});
        mustOk(s->put("db.c", "a", "1"));
        mustOk(s->begin());
        mustOk(s->put("db.c", "b", "2"));
        mustOk(s->put("db.c", "c", "3"));
        mustOk(s->commit());
        mustOk(s->put("db.c", "d", "4"));
        CHECK(nextEvent(*cs).key == "a");
        tokenAfterB = nextEvent(*cs).resumeToken;
        expected = drain(*e, *cs);
        mustOk(e->checkpoint());  // a checkpoint in between changes nothing for the stream
        mustOk(s->remove("db.c", "a"));
        expected.push_back("delete db.c a");
    }
    REQUIRE(expected.size() == 3);
    CHECK(expected[0] == "insert db.c c=3");
    auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
    auto cs = watch(*e, {"db.c", {}, tokenAfterB, 0});
    CHECK(drain(*e, *cs) == expected);
    auto s = e->openSession();
    mustOk(s->put("db.c", "e", "5"));
    CHECK(nextEvent(*cs).key == "e");
}

TEST_CASE("changestream: ChangeStreamHistoryLost once the in-memory oplog is capped past it") {
    auto e = openEngine(inMemory(4096));
    auto s = e->openSession();
    mustOk(s->createCollection("db.c"));
    auto cs = watch(*e, {"db.c", {}, "", 1});
    mustOk(s->put("db.c", "k0", "v"));
    const std::string firstToken = nextEvent(*cs).resumeToken;
    auto behind = watch(*e, {"db.c", {}, "", 0});  // opened, never read while the cap passes
    mustOk(s->put("db.c", "k1", "v"));
    e->oplog()->refreshVisibility();
    for (int i = 0; i < 100; ++i)
        mustOk(s->put("db.c", "big" + std::to_string(i), std::string(200, 'x')));
    const oplog::OplogStats st = e->oplog()->stats();
    CHECK(st.inMemory);
    CHECK(st.recordsDropped > 0);
    CHECK(st.bytes <= 4096);
    auto lost = openChangeStream(*e, {"db.c", {}, firstToken, 0});
    REQUIRE(lost.ok());  // reported by the stream's first read
    auto r = lost.value()->next(0ms);
    CHECK(r.status().code() == StatusCode::kChangeStreamHistoryLost);
    CHECK(r.status().message().find("capping") != std::string::npos);
    CHECK(lost.value()->next(0ms).status().code() == StatusCode::kChangeStreamHistoryLost);
    CHECK(behind->next(0ms).status().code() == StatusCode::kChangeStreamHistoryLost);
    // A new stream from the newest entries works.
    auto fresh = watch(*e, {"db.c", {}, "", st.lastTs});
    CHECK(nextEvent(*fresh).key == "big99");
}

TEST_CASE("changestream: ChangeStreamHistoryLost past a durable oplog's cap, also after restart") {
    TempDir dir("mvkv-changestream-test");
    EngineOptions o = onDisk(dir.path, oplog::SyncMode::kWrite);
    o.oplogSegmentBytes = 4096;
    o.oplogCapBytes = 8192;
    o.checkpointsKept = 1;
    std::string token;
    {
        auto e = openEngine(o);
        auto s = e->openSession();
        mustOk(s->createCollection("db.c"));
        auto cs = watch(*e, {"db.c", {}, "", 1});
        mustOk(s->put("db.c", "first", "1"));
        token = nextEvent(*cs).resumeToken;
        for (int i = 0; i < 300; ++i)
            mustOk(s->put("db.c", "k" + std::to_string(i % 20), std::string(100, 'v')));
        mustOk(e->checkpoint());
        REQUIRE(e->oplog()->stats().segmentsDropped > 0);
        auto lost = watch(*e, {"db.c", {}, token, 0});
        CHECK(lost->next(0ms).status().code() == StatusCode::kChangeStreamHistoryLost);
    }
    auto e = openEngine(o);
    auto lost = watch(*e, {"db.c", {}, token, 0});
    CHECK(lost->next(0ms).status().code() == StatusCode::kChangeStreamHistoryLost);
    auto fromOldTime = watch(*e, {"db.c", {}, "", 1});
    CHECK(fromOldTime->next(0ms).status().code() == StatusCode::kChangeStreamHistoryLost);
}

TEST_CASE("in-memory oplog: cursors read it, capping drops the oldest, stats say so") {
    auto e = openEngine(inMemory(2048));
    REQUIRE(e->oplog() != nullptr);
    auto s = e->openSession();
    mustOk(s->createCollection("db.c"));
    mustOk(s->put("db.c", "a", "1"));
    mustOk(s->begin());
    mustOk(s->put("db.c", "b", "2"));
    mustOk(s->put("db.c", "c", "3"));
    mustOk(s->commit());
    e->oplog()->refreshVisibility();
    auto cursor = e->openOplogCursor({});
    REQUIRE(cursor.ok());
    std::vector<oplog::OplogEntry> entries;
    REQUIRE_OK(cursor.value()->next(&entries));
    REQUIRE(entries.size() == 4);  // create, a, then b and c in one record
    CHECK(entries[0].op == oplog::OpType::kCommand);
    CHECK(entries[1].key == "a");
    CHECK(entries[2].ts == entries[3].ts);
    CHECK(e->majorityCommitTs() == e->oplog()->visibleTs());
    const oplog::OplogStats before = e->oplog()->stats();
    CHECK(before.records == 3);
    CHECK(before.entries == 4);
    CHECK(before.recordsDropped == 0);
    CHECK(before.capBytes == 2048);
    auto stale = e->openOplogCursor({1, ""});
    REQUIRE(stale.ok());
    for (int i = 0; i < 40; ++i)
        mustOk(s->put("db.c", "k" + std::to_string(i), std::string(100, 'x')));
    e->oplog()->refreshVisibility();
    const oplog::OplogStats after = e->oplog()->stats();
    CHECK(after.recordsDropped > 0);
    CHECK(after.bytes <= 2048);
    CHECK(after.records + after.recordsDropped == 43);
    CHECK(after.firstTs > before.lastTs);
    entries.clear();
    CHECK(stale.value()->next(&entries).code() == StatusCode::kCappedPositionLost);
    entries.clear();  // the first reader stopped at the transaction, dropped since
    CHECK(cursor.value()->next(&entries).code() == StatusCode::kCappedPositionLost);
    // A reader from the start reads what is left.
    auto fromStart = e->openOplogCursor({});
    entries.clear();
    REQUIRE_OK(fromStart.value()->next(&entries));
    CHECK(entries.size() == after.records);
    CHECK(entries.back().key == "k39");
    CHECK(e->stats().hasOplog);
    CHECK(!e->stats().durable);
}

TEST_CASE("changestream: 4 writers; a consumer rebuilding the collection from events equals it" *
          doctest::test_suite("concurrency")) {
    const uint32_t seed = mvkv::testing::testSeed();
    auto e = openEngine(inMemory());
    {
        auto s = e->openSession();
        mustOk(s->createCollection("db.c"));
        mustOk(s->createCollection("db.noise"));
    }
    auto cs = watch(*e, {"db.c", {}, "", 1});
    std::atomic<bool> writersDone{false};
    std::map<std::string, std::string> rebuilt;
    std::string consumerError;
    std::atomic<mvcc::Timestamp> lastSeen{0};
    std::atomic<mvcc::Timestamp> target{UINT64_MAX};
    std::thread consumer([&] {
        // Until the last timestamp was seen and nothing more comes: the
        // last record may be a transaction, whose later events share its
        // timestamp.
        while (true) {
            auto ev = cs->next(50ms);
            if (!ev.ok()) {
                consumerError = ev.status().toString();
                return;
            }
            if (!ev.value()) {
                if (lastSeen.load() >= target.load())
                    return;
                continue;
            }
            const ChangeEvent& c = *ev.value();
            if (c.op == ChangeOp::kDelete)
                rebuilt.erase(c.key);
            else
                rebuilt[c.key] = *c.value;
            lastSeen.store(c.clusterTime);
        }
    });
    std::vector<std::thread> writers;
    for (int w = 0; w < 4; ++w)
        writers.emplace_back([&, w] {
            std::mt19937 rng(seed + static_cast<uint32_t>(w));
            auto s = e->openSession();
            for (int i = 0; i < 300; ++i) {
                const std::string k = "k" + std::to_string(rng() % 40);
                const std::string v = std::to_string(w) + ":" + std::to_string(i);
                const unsigned what = rng() % 10;
                if (what < 2) {
                    // A multi-key transaction; conflicts abort it whole.
                    Status st = s->withTransaction([&](Session& t) {
                        if (Status x = t.put("db.c", k, v); !x.ok())
                            return x;
                        if (Status x = t.put("db.noise", k, v); !x.ok())
                            return x;
                        return t.put("db.c", "k" + std::to_string(rng() % 40), v + "t");
                    });
                    if (!st.ok() && st.code() != StatusCode::kWriteConflict)
                        FAIL_CHECK(st.toString());
                } else if (what < 4) {
                    Status st = s->remove("db.c", k);
                    if (!st.ok() && st.code() != StatusCode::kNotFound)
                        FAIL_CHECK(st.toString());
                } else {
                    Status st = s->put("db.c", k, v);
                    if (!st.ok())
                        FAIL_CHECK(st.toString());
                }
            }
        });
    for (auto& t : writers)
        t.join();
    e->oplog()->refreshVisibility();
    target.store(e->oplog()->stats().lastTs);
    writersDone = true;
    consumer.join();
    CHECK(consumerError.empty());
    std::map<std::string, std::string> actual;
    auto s = e->openSession();
    auto c = s->openCursor("db.c");
    REQUIRE(c.ok());
    for (mustOk(c.value()->first()); c.value()->valid(); mustOk(c.value()->next()))
        actual[std::string(c.value()->key())] = std::string(c.value()->value());
    // The first key that differs, to tell a lost event from a late one.
    for (const auto& [k, v] : actual)
        if (auto it = rebuilt.find(k); it == rebuilt.end() || it->second != v) {
            INFO("key ", k, ": collection ", v, ", events ",
                 it == rebuilt.end() ? std::string("(none)") : it->second);
            CHECK(false);
            break;
        }
    for (const auto& [k, v] : rebuilt)
        if (!actual.count(k)) {
            INFO("key ", k, ": collection (none), events ", v);
            CHECK(false);
            break;
        }
    CHECK(rebuilt == actual);
    CHECK(!actual.empty());
}
