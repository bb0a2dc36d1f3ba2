// TTL collections and the TTL monitor (docs/ttl.md; engine/ttl_monitor.h,
// engine/ttl_value.h): expiry by a monitor pass with the injected wall
// clock, explicit expiries per write, collMod, values read back without the
// stored header everywhere, a delete that meets a write conflict skipped
// until the next pass, TTL deletes and options through restart, checkpoint
// and a replica (which never deletes on its own), bad input; and, in the
// concurrency suite, four writers refreshing and removing keys while the
// clock moves and passes run: no lost and no resurrected entry.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/checkpoint_file.h"
#include "replication/replica.h"
#include "engine/ttl_monitor.h"
#include "oplog/log_format.h"
#include "tests/engine_test_util.h"
#include "tests/temp_dir.h"
#include "tests/test_seed.h"

using namespace mvkv;
using namespace mvkv::engine;
using namespace mvkv::replication;
using namespace mvkv::checkpoint;
using namespace mvkv::engine::testing;
using mvkv::testing::TempDir;
using namespace std::chrono_literals;

namespace {

constexpr int64_t kStart = 1'700'000'000'000;  // ms since the epoch: 2023-11-14

/// A wall clock the test moves by hand (EngineOptions::wallClock).
struct TestClock {
    std::shared_ptr<std::atomic<int64_t>> now = std::make_shared<std::atomic<int64_t>>(kStart);
    int64_t ms() const { return now->load(); }
    void advance(std::chrono::milliseconds d) { now->fetch_add(d.count()); }
    std::function<int64_t()> fn() const {
        return [n = now] { return n->load(); };
    }
};

/// No background threads: passes run when the test says (runTtlPass).
EngineOptions withClock(const TestClock& clock, EngineOptions o = {}) {
    o.historySweepInterval = 0ms;
    o.ttlMonitorSleep = 0ms;
    o.wallClock = clock.fn();
    return o;
}

CollectionOptions ttl(int64_t seconds) {
    CollectionOptions o;
    o.expireAfterSeconds = seconds;
    return o;
}

WriteOptions expireAt(int64_t ms) {
    WriteOptions w;
    w.expireAtMs = ms;
    return w;
}

TtlPassResult pass(Engine& e) {
    auto r = e.runTtlPass();
    REQUIRE_MESSAGE(r.ok(), r.status().toString());
    return r.value();
}

std::optional<int64_t> expiryOf(Session& s, std::string_view ns, std::string_view key) {
    std::string value;
    std::optional<int64_t> at;
    REQUIRE_OK(s.getWithExpiry(ns, key, &value, &at));
    return at;
}

std::optional<int64_t> optionOf(Engine& e, std::string_view ns) {
    for (const CollectionStats& c : e.stats().collections)
        if (c.ns == ns)
            return c.expireAfterSeconds;
    FAIL("no collection " << ns);
    return std::nullopt;
}

// The format version in a checkpoint file's header (checkpoint/checkpoint_file.h).
uint32_t checkpointVersion(const std::string& dir) {
    auto listed = listCheckpoints(dir);
    REQUIRE_OK(listed.status());
    REQUIRE_FALSE(listed.value().empty());
    std::FILE* f = std::fopen(listed.value().front().path.c_str(), "rb");
    REQUIRE(f != nullptr);
    char head[oplog::kRecordHeaderBytes + 12];
    const size_t n = std::fread(head, 1, sizeof head, f);
    std::fclose(f);
    REQUIRE(n == sizeof head);
    return oplog::getU32(head + oplog::kRecordHeaderBytes + 8);
}

}  // namespace

TEST_CASE("ttl: bad options are InvalidArgument and create nothing") {
    TestClock clock;
    auto e = openEngine(withClock(clock));
    auto s = e->openSession();
    CollectionOptions cappedTtl = ttl(30);
    cappedTtl.capped = true;
    cappedTtl.cappedSizeBytes = 100;
    Status both = s->createCollection("db.c", cappedTtl);
    CHECK(both.code() == StatusCode::kInvalidArgument);
    CHECK(both.message().find("a capped collection cannot be a TTL collection") !=
          std::string::npos);
    for (int64_t bad : {int64_t{-1}, kMaxExpireAfterSeconds + 1, INT64_MAX, INT64_MIN}) {
        CAPTURE(bad);
        Status st = s->createCollection("db.c", ttl(bad));
        CHECK(st.code() == StatusCode::kInvalidArgument);
        CHECK(st.message().find("expireAfterSeconds") != std::string::npos);
    }
    CHECK(e->listDatabases().empty());
    // The bounds themselves are fine.
    CHECK_OK(s->createCollection("db.zero", ttl(0)));
    CHECK_OK(s->createCollection("db.max", ttl(kMaxExpireAfterSeconds)));
    CHECK(optionOf(*e, "db.max") == kMaxExpireAfterSeconds);
}

TEST_CASE(
    "ttl: an explicit expiry outside a TTL collection, with a remove, or not a time is refused") {
    TestClock clock;
    auto e = openEngine(withClock(clock));
    auto s = e->openSession();
    mustOk(s->createCollection("db.plain"));
    mustOk(s->createCollection("db.ttl", ttl(30)));
    mustOk(s->put("db.ttl", "k", "v"));
    Status plain = s->put("db.plain", "k", "v", expireAt(kStart + 1000));
    CHECK(plain.code() == StatusCode::kInvalidArgument);
    CHECK(plain.message().find("needs a TTL collection") != std::string::npos);
    CHECK(getOr(*s, "db.plain", "k") == "<NotFound>");
    for (int64_t bad : {int64_t{0}, int64_t{-5}, INT64_MIN}) {
        CAPTURE(bad);
        CHECK_CODE(s->put("db.ttl", "k", "new", expireAt(bad)), StatusCode::kInvalidArgument);
        CHECK_CODE(s->insert("db.ttl", "other", "new", expireAt(bad)),
                   StatusCode::kInvalidArgument);
        CHECK_CODE(s->update("db.ttl", "k", "new", expireAt(bad)), StatusCode::kInvalidArgument);
    }
    CHECK_CODE(s->remove("db.ttl", "k", expireAt(kStart + 1000)), StatusCode::kInvalidArgument);
    CHECK_CODE(s->put("db.missing", "k", "v", expireAt(kStart)), StatusCode::kNamespaceNotFound);
    // Nothing changed: the old value and its expiry.
    CHECK(getOr(*s, "db.ttl", "k") == "v");
    CHECK(getOr(*s, "db.ttl", "other") == "<NotFound>");
    CHECK(expiryOf(*s, "db.ttl", "k") == kStart + 30'000);
    // maxValueBytes applies to the caller's value, not the header.
    EngineOptions small = withClock(clock);
    small.maxValueBytes = 4;
    auto e2 = openEngine(small);
    auto s2 = e2->openSession();
    mustOk(s2->createCollection("db.ttl", ttl(1)));
    CHECK_OK(s2->put("db.ttl", "k", "1234"));
    CHECK_CODE(s2->put("db.ttl", "k", "12345"), StatusCode::kInvalidArgument);
}

TEST_CASE(
    "ttl: a pass deletes what expired by the test clock; what has not stays, readable until then") {
    TestClock clock;
    auto e = openEngine(withClock(clock));
    auto s = e->openSession();
    mustOk(s->createCollection("db.sessions", ttl(30)));
    mustOk(s->createCollection("db.plain"));
    mustOk(s->put("db.plain", "p", "stays"));
    mustOk(s->put("db.sessions", "a", "1"));  // expires at kStart + 30 s
    clock.advance(10s);
    mustOk(s->put("db.sessions", "b", "2"));  // at kStart + 40 s
    CHECK(expiryOf(*s, "db.sessions", "a") == kStart + 30'000);
    CHECK(expiryOf(*s, "db.sessions", "b") == kStart + 40'000);
    CHECK(expiryOf(*s, "db.plain", "p") == std::nullopt);

    TtlPassResult early = pass(*e);
    CHECK(early.collections == 1);
    CHECK(early.deleted == 0);
    clock.advance(20s);  // kStart + 30 s: a's expiry, inclusive
    // Expired, but still there until a pass: MongoDB's behaviour.
    CHECK(getOr(*s, "db.sessions", "a") == "1");
    TtlPassResult r = pass(*e);
    CHECK(r.expired == 1);
    CHECK(r.deleted == 1);
    CHECK(r.skippedConflicts == 0);
    CHECK(r.nowMs == kStart + 30'000);
    CHECK(getOr(*s, "db.sessions", "a") == "<NotFound>");
    CHECK(getOr(*s, "db.sessions", "b") == "2");
    CHECK(getOr(*s, "db.plain", "p") == "stays");

    clock.advance(10s);
    CHECK(pass(*e).deleted == 1);
    CHECK(scanAll(*s, "db.sessions").empty());
    TtlStats st = e->ttlStats();
    CHECK(st.passes == 3);
    CHECK(st.deletedDocuments == 2);
    CHECK(st.skippedConflicts == 0);
    CHECK_FALSE(st.secondary);
    // serverStatus metrics.ttl, MongoDB's two figures.
    auto status = e->serverStatus("metrics");
    REQUIRE_OK(status.status());
    auto j = nlohmann::json::parse(status.value());
    CHECK(j["metrics"]["ttl"] == nlohmann::json::parse(R"({"passes":3,"deletedDocuments":2})"));
    // The deletes are ordinary writes: the key's history ends in a tombstone.
    auto h = s->keyHistory("db.sessions", "a");
    REQUIRE_OK(h.status());
    REQUIRE(h.value().size() == 2);
    CHECK(h.value()[0].tombstone);
    CHECK(h.value()[1].value == "1");
}

TEST_CASE(
    "ttl: an explicit expiry per write; a refresh moves it; 0 s collections expire plain writes at "
    "once") {
    TestClock clock;
    auto e = openEngine(withClock(clock));
    auto s = e->openSession();
    mustOk(s->createCollection("db.locks", ttl(0)));  // the lock-collection pattern
    mustOk(s->createCollection("db.cache", ttl(3600)));
    mustOk(s->put("db.locks", "held", "owner1", expireAt(kStart + 5'000)));
    mustOk(s->insert("db.locks", "short", "owner2", expireAt(kStart + 1'000)));
    mustOk(s->put("db.locks", "plain", "x"));  // written now, expires now + 0
    // An explicit expiry wins over the collection's hour, either way.
    mustOk(s->put("db.cache", "soon", "v", expireAt(kStart + 2'000)));
    mustOk(s->put("db.cache", "late", "v", expireAt(kStart + 7'200'000)));
    CHECK(expiryOf(*s, "db.locks", "held") == kStart + 5'000);
    CHECK(expiryOf(*s, "db.locks", "plain") == kStart);

    TtlPassResult r = pass(*e);
    CHECK(r.deleted == 1);  // plain
    CHECK(getOr(*s, "db.locks", "plain") == "<NotFound>");

    clock.advance(1s);
    // A refresh before the pass: update with a later expiry keeps it.
    mustOk(s->update("db.locks", "short", "owner2", expireAt(kStart + 10'000)));
    CHECK(pass(*e).deleted == 0);
    CHECK(getOr(*s, "db.locks", "short") == "owner2");

    clock.advance(1s);
    CHECK(pass(*e).deleted == 1);  // db.cache soon
    clock.advance(3s);             // kStart + 5 s
    CHECK(pass(*e).deleted == 1);  // held
    CHECK(scanAll(*s, "db.locks") == "short=owner2");
    // A plain put after an explicit one goes back to write time + expireAfter.
    mustOk(s->put("db.cache", "late", "v2"));
    CHECK(expiryOf(*s, "db.cache", "late") == clock.ms() + 3'600'000);
    clock.advance(5s);
    CHECK(pass(*e).deleted == 1);  // short
    CHECK(scanAll(*s, "db.locks").empty());
    CHECK(scanAll(*s, "db.cache") == "late=v2");
}

TEST_CASE(
    "ttl: collMod changes what expires: entries already there too, not explicit ones; bad calls "
    "change nothing") {
    TestClock clock;
    auto e = openEngine(withClock(clock));
    auto s = e->openSession();
    mustOk(s->createCollection("db.t", ttl(60)));
    mustOk(s->createCollection("db.plain"));
    mustOk(s->put("db.t", "a", "1"));
    mustOk(s->put("db.t", "b", "2", expireAt(kStart + 100'000)));
    clock.advance(40s);
    CHECK(pass(*e).deleted == 0);
    REQUIRE_OK(s->setExpireAfterSeconds("db.t", 30));
    CHECK(optionOf(*e, "db.t") == 30);
    CHECK(expiryOf(*s, "db.t", "a") == kStart + 30'000);
    CHECK(expiryOf(*s, "db.t", "b") == kStart + 100'000);
    CHECK(pass(*e).deleted == 1);
    CHECK(scanAll(*s, "db.t") == "b=2");

    CHECK_CODE(s->setExpireAfterSeconds("db.plain", 5), StatusCode::kInvalidArgument);
    CHECK_CODE(s->setExpireAfterSeconds("db.missing", 5), StatusCode::kNamespaceNotFound);
    CHECK_CODE(s->setExpireAfterSeconds("db.t", -1), StatusCode::kInvalidArgument);
    CHECK_CODE(s->setExpireAfterSeconds("db.t", kMaxExpireAfterSeconds + 1),
               StatusCode::kInvalidArgument);
    CHECK_CODE(s->setExpireAfterSeconds("local.oplog", 5), StatusCode::kInvalidArgument);
    mustOk(s->begin());
    CHECK_CODE(s->setExpireAfterSeconds("db.t", 5), StatusCode::kIllegalOperation);
    mustOk(s->abort());
    CHECK(optionOf(*e, "db.t") == 30);
    CHECK(optionOf(*e, "db.plain") == std::nullopt);
}

TEST_CASE(
    "ttl: values read back without the header: get, scan, count, cursor, history, history store, "
    "stats") {
    TestClock clock;
    auto e = openEngine(withClock(clock));
    auto s = e->openSession();
    mustOk(s->createCollection("db.t", ttl(30)));
    mustOk(s->put("db.t", "a", "alpha"));
    mustOk(s->put("db.t", "b", "", expireAt(kStart + 5)));  // an empty value
    mustOk(s->put("db.t", "c", std::string("\0w\0", 3)));   // bytes like a header's
    CHECK(getOr(*s, "db.t", "a") == "alpha");
    CHECK(getOr(*s, "db.t", "b") == "");
    CHECK(getOr(*s, "db.t", "c") == std::string("\0w\0", 3));
    std::string scanned;
    REQUIRE_OK(s->scan("db.t", {}, [&](std::string_view k, std::string_view v) {
        scanned += std::string(k) + "=" + std::string(v) + ";";
        return true;
    }));
    CHECK(scanned == "a=alpha;b=;c=" + std::string("\0w\0", 3) + ";");
    CHECK(s->count("db.t").value() == 3);
    {
        auto c = s->openCursor("db.t");
        REQUIRE_OK(c.status());
        REQUIRE_OK(c.value()->first());
        CHECK(c.value()->value() == "alpha");
        CHECK(c.value()->expiresAtMs() == kStart + 30'000);
        REQUIRE_OK(c.value()->next());
        CHECK(c.value()->value() == "");
        CHECK(c.value()->expiresAtMs() == kStart + 5);
        REQUIRE_OK(c.value()->seekForPrev("zz"));
        CHECK(c.value()->key() == "c");
        CHECK(c.value()->value().size() == 3);
    }
    // Inside a transaction: its own write is read back without the header too.
    mustOk(s->begin());
    mustOk(s->put("db.t", "a", "own"));
    CHECK(getOr(*s, "db.t", "a") == "own");
    CHECK(scanAll(*s, "db.t").starts_with("a=own,"));
    mustOk(s->commit());
    // Stats count the caller's bytes: 3 keys + "own" + "" + 3 bytes.
    for (const CollectionStats& c : e->stats().collections)
        if (c.ns == "db.t")
            CHECK(c.bytes == 3 + 3 + 0 + 3);
    // History: the chain, and a version the sweep moved to the history
    // store because a reader still needs it.
    auto reader = e->openSession();
    mustOk(reader->begin());
    CHECK(getOr(*reader, "db.t", "a") == "own");
    mustOk(s->put("db.t", "a", "newest"));
    e->sweepHistory();
    CHECK(e->stats().history.entries >= 1);
    CHECK(getOr(*reader, "db.t", "a") == "own");  // read from the history store
    mustOk(reader->abort());
    auto h = s->keyHistory("db.t", "a");
    REQUIRE_OK(h.status());
    std::vector<std::string> values;
    bool fromHistoryStore = false;
    for (const KeyVersion& v : h.value()) {
        values.push_back(v.value);
        fromHistoryStore = fromHistoryStore || v.where == KeyVersion::Where::kHistoryStore;
    }
    CHECK(fromHistoryStore);
    CHECK(values.front() == "newest");
    for (const std::string& v : values)
        CHECK_MESSAGE((v == "newest" || v == "own" || v == "alpha"), v);
    // removeRange takes TTL entries like any other.
    CHECK(s->removeRange("db.t", {"a", "b"}).value() == 2);
    CHECK(scanAll(*s, "db.t") == "c=" + std::string("\0w\0", 3));
}

TEST_CASE("ttl: a delete that meets a write conflict is skipped and retried by the next pass") {
    TestClock clock;
    auto e = openEngine(withClock(clock));
    auto s = e->openSession();
    auto writer = e->openSession();
    mustOk(s->createCollection("db.t", ttl(10)));
    mustOk(s->put("db.t", "k", "v"));
    mustOk(s->put("db.t", "r", "v"));
    clock.advance(11s);

    // An open transaction writes both keys: the monitor's deletes conflict.
    mustOk(writer->begin());
    mustOk(writer->put("db.t", "k", "v"));  // a write of the same (expired) kind
    mustOk(writer->put("db.t", "r", "refreshed", expireAt(clock.ms() + 60'000)));
    TtlPassResult r = pass(*e);
    CHECK(r.expired == 2);
    CHECK(r.deleted == 0);
    CHECK(r.skippedConflicts == 2);
    CHECK(e->ttlStats().skippedConflicts == 2);
    CHECK(getOr(*s, "db.t", "k") == "v");
    CHECK(getOr(*s, "db.t", "r") == "v");

    // The writer commits (k written again now, r refreshed) and a later
    // write of k is rolled back: the next pass deletes k once that write
    // expired too, and keeps r.
    mustOk(writer->commit());
    mustOk(writer->begin());
    mustOk(writer->put("db.t", "k", "again"));
    mustOk(writer->abort());
    clock.advance(10s);  // k's own write (at kStart + 11 s) expired by now too
    TtlPassResult next = pass(*e);
    CHECK(next.deleted == 1);
    CHECK(next.skippedConflicts == 0);
    CHECK(getOr(*s, "db.t", "k") == "<NotFound>");
    CHECK(getOr(*s, "db.t", "r") == "refreshed");
}

TEST_CASE(
    "ttl: a pass reads each entry again in its delete's transaction: a refresh since the scan is "
    "kept") {
    TestClock clock;
    auto e = openEngine(withClock(clock));
    auto s = e->openSession();
    auto other = e->openSession();
    mustOk(s->createCollection("db.t", ttl(10)));
    for (const char* k : {"a", "b", "c", "d"})
        mustOk(s->put("db.t", k, "old"));
    clock.advance(11s);
    // Between the scan (which found all four expired) and each delete.
    std::vector<std::string> hooked;
    e->setTtlTestHook([&](std::string_view ns, std::string_view key) {
        CHECK(ns == "db.t");
        hooked.emplace_back(key);
        if (key == "a")  // refreshed and committed: kept
            mustOk(other->put("db.t", "a", "refreshed", expireAt(clock.ms() + 60'000)));
        if (key == "b") {  // a write in progress: a conflict, skipped
            mustOk(other->begin());
            mustOk(other->put("db.t", "b", "writing"));
        }
        if (key == "c") {  // removed meanwhile: nothing to do
            auto third = e->openSession();
            mustOk(third->remove("db.t", "c"));
        }
    });
    TtlPassResult r = pass(*e);
    CHECK(hooked == std::vector<std::string>{"a", "b", "c", "d"});
    CHECK(r.expired == 4);
    CHECK(r.deleted == 1);  // d
    CHECK(r.skippedConflicts == 1);
    CHECK(scanAll(*s, "db.t") == "a=refreshed,b=old");
    mustOk(other->abort());
    e->setTtlTestHook(nullptr);
    TtlPassResult next = pass(*e);
    CHECK(next.deleted == 1);  // b, retried
    CHECK(scanAll(*s, "db.t") == "a=refreshed");
}

TEST_CASE("ttl: a collection whose lock a pass cannot get in time is skipped until the next pass") {
    TestClock clock;
    EngineOptions o = withClock(clock);
    o.lockTimeout = 20ms;  // the pass waits at most this (below TtlMonitor::kLockTimeout)
    auto e = openEngine(o);
    auto s = e->openSession();
    mustOk(s->createCollection("db.held", ttl(1)));
    mustOk(s->createCollection("db.free", ttl(1)));
    mustOk(s->put("db.held", "k", "v"));
    mustOk(s->put("db.free", "k", "v"));
    clock.advance(2s);
    // s holds IX on db.held; a drop queues for X behind it, and every later
    // request (the pass's IS) queues behind the drop.
    mustOk(s->begin());
    mustOk(s->put("db.held", "other", "v"));
    auto dropper = e->openSession();
    dropper->setLockTimeout(std::nullopt);
    Status dropped;
    std::thread drop([&] { dropped = dropper->dropCollection("db.held"); });
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    auto dropWaits = [&] {
        for (const auto& h : e->lockManager().dump())
            if (h.name.find("db.held") != std::string::npos && !h.waiting.empty())
                return true;
        return false;
    };
    while (!dropWaits() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
    REQUIRE(dropWaits());
    TtlPassResult r = pass(*e);
    CHECK(r.skippedLockTimeouts == 1);
    CHECK(r.deleted == 1);  // db.free is not held up
    CHECK(e->ttlStats().skippedLockTimeouts == 1);
    dropper->interrupt();  // killOp: the drop gives up
    drop.join();
    CHECK(dropped.code() == StatusCode::kInterrupted);
    mustOk(s->abort());
    TtlPassResult next = pass(*e);
    CHECK(next.skippedLockTimeouts == 0);
    CHECK(next.deleted == 1);
    CHECK(scanAll(*s, "db.held").empty());
}

TEST_CASE("ttl: TTL deletes and collMod are in the oplog: they survive a restart, options too") {
    TempDir dir("mvkv-ttl-test");
    TestClock clock;
    EngineOptions o = withClock(clock, onDisk(dir.path, oplog::SyncMode::kNone));
    {
        auto e = openEngine(o);
        auto s = e->openSession();
        mustOk(s->createCollection("db.t", ttl(60)));
        mustOk(s->put("db.t", "gone", "1"));
        mustOk(s->put("db.t", "kept", "2", expireAt(kStart + 3'600'000)));
        mustOk(s->put("db.t", "later", "3"));
        REQUIRE_OK(s->setExpireAfterSeconds("db.t", 20));
        clock.advance(25s);
        mustOk(s->put("db.t", "later", "3b"));  // written at kStart + 25 s
        CHECK(pass(*e).deleted == 1);
        // The oplog holds the delete and the collMod command.
        e->oplog()->refreshVisibility();  // every commit above is visible now
        auto cursor = e->openOplogCursor({});
        REQUIRE_OK(cursor.status());
        std::vector<oplog::OplogEntry> entries;
        for (size_t before = 1; before != entries.size();) {
            before = entries.size();
            REQUIRE_OK(cursor.value()->next(&entries, 100));
        }
        bool sawDelete = false, sawCollMod = false;
        for (const auto& en : entries) {
            sawDelete = sawDelete || (en.op == oplog::OpType::kDelete && en.key == "gone");
            sawCollMod = sawCollMod || (en.op == oplog::OpType::kCommand &&
                                        en.value == "collMod expire_after=20");
        }
        CHECK(sawDelete);
        CHECK(sawCollMod);
    }
    auto e = openEngine(o);
    CHECK_FALSE(e->recovery().checkpointLoaded);
    auto s = e->openSession();
    CHECK(optionOf(*e, "db.t") == 20);
    CHECK(scanAll(*s, "db.t") == "kept=2,later=3b");
    CHECK(expiryOf(*s, "db.t", "kept") == kStart + 3'600'000);
    CHECK(expiryOf(*s, "db.t", "later") == kStart + 45'000);
    clock.advance(20s);
    CHECK(pass(*e).deleted == 1);
    CHECK(scanAll(*s, "db.t") == "kept=2");
}

TEST_CASE(
    "ttl: a checkpoint keeps TTL options (format version 3) and pending expiries; versions 1 and 2 "
    "stay") {
    TempDir dir("mvkv-ttl-test");
    TestClock clock;
    EngineOptions o = withClock(clock, onDisk(dir.path, oplog::SyncMode::kNone));
    {
        auto e = openEngine(o);
        auto s = e->openSession();
        mustOk(s->createCollection("db.plain"));
        mustOk(s->put("db.plain", "p", "1"));
        REQUIRE_OK(e->checkpoint());
        CHECK(checkpointVersion(dir.path) == 1);  // what older builds read
        CollectionOptions capped;
        capped.capped = true;
        capped.cappedSizeBytes = 1000;
        mustOk(s->createCollection("db.capped", capped));
        REQUIRE_OK(e->checkpoint());
        CHECK(checkpointVersion(dir.path) == 2);
        mustOk(s->createCollection("db.t", ttl(100)));
        mustOk(s->put("db.t", "w", "written"));
        mustOk(s->put("db.t", "x", "explicit", expireAt(kStart + 500'000)));
        REQUIRE_OK(s->setExpireAfterSeconds("db.t", 50));
        clock.advance(10s);
        REQUIRE_OK(e->checkpoint());
        CHECK(checkpointVersion(dir.path) == 3);
        // After the checkpoint: replayed from the log on top of it.
        mustOk(s->put("db.t", "y", "after"));  // expires at kStart + 10 s + 50 s
        REQUIRE_OK(s->setExpireAfterSeconds("db.t", 40));
    }
    auto e = openEngine(o);
    CHECK(e->recovery().checkpointLoaded);
    auto s = e->openSession();
    CHECK(optionOf(*e, "db.t") == 40);
    CHECK(optionOf(*e, "db.plain") == std::nullopt);
    CHECK(scanAll(*s, "db.t") == "w=written,x=explicit,y=after");
    CHECK(expiryOf(*s, "db.t", "w") == kStart + 40'000);
    CHECK(expiryOf(*s, "db.t", "x") == kStart + 500'000);
    CHECK(expiryOf(*s, "db.t", "y") == kStart + 50'000);
    clock.advance(30s);  // kStart + 40 s
    CHECK(pass(*e).deleted == 1);
    CHECK(scanAll(*s, "db.t") == "x=explicit,y=after");
    // A checkpoint of the reloaded engine reads back the same.
    REQUIRE_OK(e->checkpoint());
    CheckpointMeta meta;
    auto listed = listCheckpoints(dir.path);
    REQUIRE_OK(listed.status());
    REQUIRE_OK(verifyCheckpoint(listed.value().front().path, &meta));
    bool found = false;
    for (size_t i = 0; i < meta.collections.size(); ++i)
        if (meta.collections[i] == "db.t") {
            found = true;
            CHECK(meta.options[i].expireAfterSeconds == 40);
        } else {
            CHECK_FALSE(meta.options[i].expireAfterSeconds.has_value());
        }
    CHECK(found);
}

TEST_CASE("ttl: the oplog's create and collMod commands round-trip; older and damaged ones") {
    CollectionOptions o;
    REQUIRE(parseCreateCommand("create", &o).value());
    CHECK(o == CollectionOptions{});
    REQUIRE(parseCreateCommand(createCommand(ttl(30)), &o).value());
    CHECK(o == ttl(30));
    CHECK(createCommand(ttl(0)) == "create expire_after=0");
    CollectionOptions capped;
    capped.capped = true;
    capped.cappedSizeBytes = 10;
    capped.cappedMaxDocs = 2;
    REQUIRE(parseCreateCommand("create capped size=10 max=2", &o).value());  // older logs
    CHECK(o == capped);
    CHECK_FALSE(parseCreateCommand("drop", &o).value());
    for (const char* bad : {"create expire_after=-1", "create expire_after=2147483648",
                            "create capped size=10 expire_after=5", "create expire_after=",
                            "create size=10", "create expire_after=5 max=3", "create nonsense"}) {
        CAPTURE(bad);
        CHECK(parseCreateCommand(bad, &o).status().code() == StatusCode::kCorruption);
    }
    int64_t seconds = -1;
    REQUIRE(parseCollModCommand(collModCommand(45), &seconds).value());
    CHECK(seconds == 45);
    CHECK_FALSE(parseCollModCommand("create", &seconds).value());
    for (const char* bad :
         {"collMod", "collMod expire_after=-3", "collMod size=3", "collMod expire_after=x"}) {
        CAPTURE(bad);
        CHECK(parseCollModCommand(bad, &seconds).status().code() == StatusCode::kCorruption);
    }
}

TEST_CASE(
    "ttl: a replica gets collMod and the primary's TTL deletes; it never deletes on its own") {
    TempDir dir("mvkv-ttl-test");
    TestClock primaryClock, secondaryClock;
    auto primary = openEngine(withClock(primaryClock, onDisk(dir.path, oplog::SyncMode::kNone)));
    auto secondary = openEngine(withClock(secondaryClock));
    ReplicaOptions r;
    r.pollWait = 10ms;
    auto started = ReplicaApplier::start(*primary, *secondary, r);
    REQUIRE_OK(started.status());
    auto applier = std::move(started).value();
    CHECK(secondary->secondary());
    CHECK_FALSE(primary->secondary());

    auto s = primary->openSession();
    mustOk(s->createCollection("db.t", ttl(60)));
    mustOk(s->put("db.t", "a", "1"));
    mustOk(s->put("db.t", "b", "2", expireAt(kStart + 3'600'000)));
    mustOk(s->setExpireAfterSeconds("db.t", 30));
    REQUIRE_OK(applier->waitApplied(primary->oplog()->stats().lastTs, 10s));
    auto reader = secondary->openSession();
    CHECK(optionOf(*secondary, "db.t") == 30);
    CHECK(scanAll(*reader, "db.t") == "a=1,b=2");
    CHECK(expiryOf(*reader, "db.t", "a") == kStart + 30'000);  // the primary's write time
    CHECK(expiryOf(*reader, "db.t", "b") == kStart + 3'600'000);

    // The secondary's clock is far ahead: it still deletes nothing itself.
    secondaryClock.advance(24h);
    auto refused = secondary->runTtlPass();
    CHECK(refused.status().code() == StatusCode::kIllegalOperation);
    CHECK(refused.status().message().find("secondary") != std::string::npos);
    CHECK(secondary->ttlStats().passes == 0);
    CHECK(secondary->ttlStats().secondary);
    CHECK(scanAll(*reader, "db.t") == "a=1,b=2");

    // The primary's pass: its delete reaches the secondary through the oplog.
    primaryClock.advance(31s);
    CHECK(pass(*primary).deleted == 1);
    REQUIRE_OK(applier->waitApplied(primary->oplog()->stats().lastTs, 10s));
    CHECK(scanAll(*reader, "db.t") == "b=2");
    auto h = reader->keyHistory("db.t", "a");
    REQUIRE_OK(h.status());
    REQUIRE_FALSE(h.value().empty());
    CHECK(h.value().front().tombstone);
    applier->stop();
    CHECK(secondary->secondary());  // still a secondary once the applier stopped
    // Cleared (a promotion), it deletes by its own clock again.
    secondary->setSecondary(false);
    CHECK(pass(*secondary).deleted == 1);
}

TEST_CASE("ttl: the background monitor deletes on its own; a stopped monitor runs no pass") {
    TestClock clock;
    EngineOptions o = withClock(clock);
    o.ttlMonitorSleep = 1ms;
    auto e = openEngine(o);
    auto s = e->openSession();
    mustOk(s->createCollection("db.t", ttl(1)));
    mustOk(s->put("db.t", "k", "v"));
    clock.advance(2s);
    // Waits for the thread to act, not for time: the clock is the test's.
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (e->ttlStats().deletedDocuments == 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(1ms);
    CHECK(e->ttlStats().deletedDocuments == 1);
    CHECK(getOr(*s, "db.t", "k") == "<NotFound>");

    // The engine's close stops its monitor first; a monitor stopped runs no pass.
    TtlMonitor monitor(*e);
    monitor.stop();
    auto refused = monitor.runPass();
    CHECK(refused.status().code() == StatusCode::kIllegalOperation);
    CHECK(refused.status().message().find("closing") != std::string::npos);
    CHECK(monitor.stats().passes == 0);
    EngineOptions bad = withClock(clock);
    bad.ttlMonitorSleep = -1ms;
    CHECK(Engine::open(bad).status().code() == StatusCode::kInvalidArgument);
}

// ---- many threads ----

TEST_CASE("ttl: four writers and the monitor: no lost and no resurrected entries" *
          doctest::test_suite("concurrency")) {
    const uint32_t seed = mvkv::testing::testSeed();
    TestClock clock;
    auto e = openEngine(withClock(clock));
    mustOk(e->openSession()->createCollection("db.locks", ttl(0)));
    constexpr int kWriters = 4;
    constexpr int kKeys = 32;

    // What each writer last did to each of its keys (its own keys only).
    struct Last {
        std::string value;  // empty: removed (or never written)
        int64_t expiresAt = 0;
    };
    std::mutex failMutex;
    std::vector<std::string> failures;
    auto fail = [&](std::string what) {
        std::lock_guard lock(failMutex);
        if (failures.size() < 10)
            failures.push_back(std::move(what));
    };
    std::vector<std::vector<Last>> model(kWriters, std::vector<Last>(kKeys));
    // A read by the key's own writer: present with its last value, or gone
    // only when that was removed or had expired by now.
    auto judge = [&](int w, int k, const StatusWith<std::string>& got, int64_t now,
                     const char* when) {
        const Last& last = model[w][k];
        if (got.ok()) {
            if (got.value() != last.value)
                fail(fmt::format("{}: w{}-k{} reads '{}', last written '{}' (resurrected?)", when,
                                 w, k, got.value(), last.value));
        } else if (got.status().code() != StatusCode::kNotFound) {
            fail(fmt::format("{}: w{}-k{}: {}", when, w, k, got.status().toString()));
        } else if (!last.value.empty() && last.expiresAt > now) {
            fail(
                fmt::format("{}: w{}-k{} is gone but its last write '{}' expires at {} > now {} "
                            "(lost)",
                            when, w, k, last.value, last.expiresAt, now));
        }
    };

    // Writers and the monitor start together (a latch) and the monitor runs
    // passes, the clock moving between them, until the writers are done.
    constexpr int kOps = 5000;
    std::atomic<int> ready{0};
    std::atomic<bool> writersDone{false};
    auto startTogether = [&] {
        ready.fetch_add(1);
        while (ready.load() < kWriters + 1)
            std::this_thread::yield();
    };
    std::vector<std::thread> threads;
    for (int w = 0; w < kWriters; ++w) {
        threads.emplace_back([&, w] {
            std::mt19937 rng(seed + static_cast<uint32_t>(w));
            auto s = e->openSession();
            startTogether();
            for (int i = 0; i < kOps; ++i) {
                const int k = static_cast<int>(rng() % kKeys);
                const std::string key = fmt::format("w{}-k{}", w, k);
                const std::string value = fmt::format("w{}-{}", w, i);
                // Often already expired, often just ahead: refreshes race the passes.
                const int64_t expires = clock.ms() - 3 + static_cast<int64_t>(rng() % 8);
                const unsigned what = rng() % 10;
                Last& last = model[w][k];
                if (what < 6) {
                    Status st = s->put("db.locks", key, value, expireAt(expires));
                    if (st.ok())
                        last = {value, expires};
                    else
                        fail("put: " + st.toString());
                } else if (what < 8) {  // a refresh of a lock that may be gone
                    Status st = s->update("db.locks", key, value, expireAt(expires));
                    if (st.ok())
                        last = {value, expires};
                    else if (st.code() == StatusCode::kNotFound)
                        judge(w, k, StatusWith<std::string>(st), clock.ms(), "update");
                    else
                        fail("update: " + st.toString());
                } else if (what < 9) {
                    Status st = s->remove("db.locks", key);
                    if (st.ok())
                        last = {};
                    else if (st.code() == StatusCode::kNotFound)
                        judge(w, k, StatusWith<std::string>(st), clock.ms(), "remove");
                    else
                        fail("remove: " + st.toString());
                } else {
                    auto got = s->get("db.locks", key);
                    judge(w, k, got, clock.ms(), "get");  // the clock read after the get
                }
            }
        });
    }
    uint64_t passes = 0;
    std::thread monitor([&] {
        std::mt19937 rng(seed + 100);
        startTogether();
        while (!writersDone.load()) {
            clock.advance(std::chrono::milliseconds(rng() % 4));
            auto r = e->runTtlPass();
            if (!r.ok())
                fail("pass: " + r.status().toString());
            ++passes;
        }
    });
    for (auto& t : threads)
        t.join();
    writersDone.store(true);
    monitor.join();
    // At the end: every key as its writer last left it, or expired.
    auto s = e->openSession();
    const int64_t now = clock.ms();
    for (int w = 0; w < kWriters; ++w)
        for (int k = 0; k < kKeys; ++k) {
            CAPTURE(w);
            CAPTURE(k);
            judge(w, k, s->get("db.locks", fmt::format("w{}-k{}", w, k)), now, "end");
        }
    for (const auto& f : failures)
        FAIL_CHECK(f);
    CHECK(failures.empty());
    TtlStats st = e->ttlStats();
    MESSAGE("clock moved " << clock.ms() - kStart << " ms in " << passes << " passes; deleted "
                           << st.deletedDocuments << ", skipped on conflicts "
                           << st.skippedConflicts);
    CHECK(st.deletedDocuments > 0);
    // Everything expires once the clock passes every expiry.
    clock.advance(1h);
    pass(*e);
    CHECK(scanAll(*s, "db.locks").empty());
}
