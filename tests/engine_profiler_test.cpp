// The profiler writing into a capped system.profile (engine/profiler.h):
// the default collection it creates, a user-made smaller one it keeps, and,
// in the concurrency suite, four sessions profiled at level 2 while a reader
// scans system.profile: never over its caps, keys in time order, every
// entry a whole JSON document, and exactly one entry per operation.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/engine_test_util.h"

using namespace mvkv;
using namespace mvkv::engine;
using namespace mvkv::engine::testing;

namespace {

constexpr std::string_view kProfile = "app.system.profile";

CollectionOptions capped(int64_t size, int64_t max = 0) {
    CollectionOptions o;
    o.capped = true;
    o.cappedSizeBytes = size;
    o.cappedMaxDocs = max;
    return o;
}

struct ProfileScan {
    uint64_t entries = 0;
    uint64_t bytes = 0;
    bool ordered = true;  // keys strictly increasing in a forward scan
    bool whole = true;    // every value parses as a profile document
};

ProfileScan scanProfile(Session& s) {
    ProfileScan out;
    std::string last;
    Status st = s.scan(kProfile, {}, [&](std::string_view k, std::string_view v) {
        ++out.entries;
        out.bytes += k.size() + v.size();
        if (!last.empty() && !(last < k))
            out.ordered = false;
        last.assign(k);
        auto doc = nlohmann::json::parse(v, nullptr, false);
        if (doc.is_discarded() || !doc.contains("op") || !doc.contains("millis"))
            out.whole = false;
        return true;
    });
    REQUIRE_OK(st);
    return out;
}

}  // namespace

TEST_CASE("turning the profiler on creates a 1 MiB capped system.profile") {
    auto engine = openEngine();
    auto s = engine->openSession();
    REQUIRE_OK(s->createCollection("app.c"));
    auto set = engine->profiler().setLevel("app", 2);
    REQUIRE_OK(set.status());
    CHECK(set.value().was == 0);
    CHECK(set.value().level == 2);
    auto coll = engine->catalog().lookup(kProfile);
    REQUIRE(coll != nullptr);
    CHECK(coll->options().capped);
    CHECK(coll->options().cappedSizeBytes == int64_t(Profiler::kDefaultSizeBytes));
    REQUIRE_OK(s->put("app.c", "k", "v"));
    CHECK(scanProfile(*s).entries == 1);  // the put; the scan's own entry follows it
    // Turning it off stops the entries; the collection stays, as in MongoDB.
    auto off = engine->profiler().setLevel("app", 0);
    REQUIRE_OK(off.status());
    CHECK(off.value().was == 2);
    REQUIRE_OK(s->put("app.c", "k", "v2"));
    CHECK(scanProfile(*s).entries == 2);
    CHECK(engine->catalog().lookup(kProfile) != nullptr);
}

TEST_CASE("with the profiler on every cursor step is a profiled getMore") {
    // Unprofiled, a step within the cursor's batch is no operation of its
    // own (docs/operations.md); profiled, the profiler must see each one.
    auto engine = openEngine();
    auto s = engine->openSession();
    REQUIRE_OK(s->createCollection("app.c"));
    for (const char* k : {"a", "b", "c", "d", "e"})
        REQUIRE_OK(s->put("app.c", k, "v"));
    REQUIRE_OK(engine->profiler().setLevel("app", 2).status());
    {
        auto c = s->openCursor("app.c");
        REQUIRE_OK(c.status());
        int steps = 0;
        for (mustOk(c.value()->first()); c.value()->valid(); mustOk(c.value()->next()))
            ++steps;
        CHECK(steps == 5);
    }
    int getMores = 0;
    REQUIRE_OK(s->scan(kProfile, {}, [&](std::string_view, std::string_view v) {
        if (nlohmann::json::parse(v)["op"] == "getmore")
            ++getMores;
        return true;
    }));
    CHECK(getMores == 6);  // first, four steps onto keys, one past the end
}

TEST_CASE("a system.profile the user made smaller keeps its caps") {
    auto engine = openEngine();
    auto s = engine->openSession();
    REQUIRE_OK(s->createCollection("app.c"));
    REQUIRE_OK(s->createCollection(kProfile, capped(1 << 20, 5)));
    REQUIRE_OK(engine->profiler().setLevel("app", 2).status());
    for (int i = 0; i < 20; ++i)
        REQUIRE_OK(s->put("app.c", fmt::format("k{:02}", i), "v"));
    // The newest five are the last five puts, oldest first.
    std::vector<std::string> keys;
    REQUIRE_OK(s->scan(kProfile, {}, [&](std::string_view, std::string_view v) {
        keys.push_back(nlohmann::json::parse(v)["command"].value("key", "?"));
        return true;
    }));
    CHECK(keys == std::vector<std::string>{"k15", "k16", "k17", "k18", "k19"});
    // That scan was profiled too: it is now the newest, and k15 went.
    ProfileScan scan = scanProfile(*s);
    CHECK(scan.entries == 5);
    CHECK(scan.ordered);
    CHECK(scan.whole);
    CHECK(engine->profiler().written() == 22);  // 20 puts and the two scans
    CHECK(engine->profiler().dropped() == 0);
}

TEST_SUITE("concurrency") {
TEST_CASE("four profiled writers: system.profile never over its caps, ordered, never torn") {
    auto engine = openEngine();
    {
        auto setup = engine->openSession();
        REQUIRE_OK(setup->createCollection("app.c"));
        // Small caps so that both evict many times: 40 entries or 12 KiB.
        REQUIRE_OK(setup->createCollection(kProfile, capped(12 * 1024, 40)));
    }
    REQUIRE_OK(engine->profiler().setLevel("app", 2).status());
    constexpr int kThreads = 4;
    constexpr int kOpsPerThread = 300;
    std::atomic<int> writersLeft{kThreads};
    std::vector<std::thread> writers;
    for (int t = 0; t < kThreads; ++t) {
        writers.emplace_back([&, t] {
            auto s = engine->openSession();
            s->setName(fmt::format("writer{}", t));
            for (int i = 0; i < kOpsPerThread; ++i) {
                Status st = s->put("app.c", fmt::format("t{}-{:04}", t, i), "value");
                CHECK_OK(st);
            }
            writersLeft.fetch_sub(1);
        });
    }
    auto reader = engine->openSession();
    uint64_t scans = 0;
    bool overCap = false, unordered = false, torn = false;
    while (writersLeft.load() > 0 || scans == 0) {
        ProfileScan scan = scanProfile(*reader);
        ++scans;
        overCap |= scan.entries > 40 || scan.bytes > 12 * 1024;
        unordered |= !scan.ordered;
        torn |= !scan.whole;
    }
    for (auto& w : writers)
        w.join();
    CHECK_FALSE(overCap);
    CHECK_FALSE(unordered);
    CHECK_FALSE(torn);
    // One entry per profiled operation (the reader's scans are profiled too),
    // none lost; the reader's own scan entries are in the count as well.
    CHECK(engine->profiler().dropped() == 0);
    CHECK(engine->profiler().written() >= uint64_t(kThreads * kOpsPerThread));
    ProfileScan last = scanProfile(*reader);
    CHECK(last.entries <= 40);
    CHECK(last.ordered);
    MESSAGE("reader scans: " << scans);
}
}

// killOp of the opid a `bg` command printed, before its thread reached the
// engine (the shell reserves the opid first): the kill is kept for the
// operation that takes the opid, which starts killed, rather than "no
// running operation" while the command goes on to run.
TEST_CASE("killOp of a reserved opid before its operation begins kills that operation") {
    auto engine = openEngine();
    auto holder = engine->openSession();
    auto dropper = engine->openSession();
    REQUIRE_OK(holder->createCollection("app.c"));
    REQUIRE_OK(holder->begin());
    REQUIRE_OK(holder->put("app.c", "k", "v"));  // IX on app.c until the abort
    dropper->setLockTimeout(std::chrono::milliseconds(2000));
    const uint64_t opid = dropper->reserveOpid();
    REQUIRE_OK(engine->killOp(opid));
    CHECK(engine->killOp(opid).ok());  // a second kill of the same opid is no error
    Status s = dropper->dropCollection("app.c");  // takes the reserved opid
    CHECK(s.code() == StatusCode::kInterrupted);
    // The kill reached that operation only: the next one runs.
    REQUIRE_OK(holder->abort());
    REQUIRE_OK(dropper->put("app.c", "k2", "v"));
    // A kill of a reservation dropped unused finds nothing.
    const uint64_t unused = dropper->reserveOpid();
    dropper->dropReservedOpid();
    CHECK(engine->killOp(unused).code() == StatusCode::kNotFound);
    REQUIRE_OK(dropper->put("app.c", "k3", "v"));
}
