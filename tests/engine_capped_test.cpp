// Capped collections (engine/capped_state.h, engine/capped_write.cpp): caps
// by bytes and by count, the order of eviction, an entry larger than the
// cap, writers in transactions, stats, restart from the log and from a
// checkpoint, a replica secondary, bad options; and, in the concurrency
// suite, four writers and two scanning readers: no snapshot over the cap,
// each writer's entries a contiguous run of its newest, no torn entry.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "replication/replica.h"
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

CollectionOptions capped(int64_t size, int64_t max = 0) {
    CollectionOptions o;
    o.capped = true;
    o.cappedSizeBytes = size;
    o.cappedMaxDocs = max;
    return o;
}

// The keys of `ns` oldest first: by (commit timestamp, key), the capped order.
std::string order(Session& s, std::string_view ns) {
    auto c = s.openCursor(ns);
    REQUIRE_OK(c.status());
    std::vector<std::pair<mvcc::Timestamp, std::string>> keys;
    for (mustOk(c.value()->first()); c.value()->valid(); mustOk(c.value()->next()))
        keys.emplace_back(c.value()->timestamp(), std::string(c.value()->key()));
    std::sort(keys.begin(), keys.end());
    std::string out;
    for (const auto& [ts, k] : keys)
        out += (out.empty() ? "" : ",") + k;
    return out;
}

// A copy (EngineStats is a temporary); `found` is false when `ns` is absent.
struct Found : CollectionStats {
    bool found = false;
};

Found statsOf(const EngineStats& st, std::string_view ns) {
    Found out;
    for (const CollectionStats& c : st.collections)
        if (c.ns == ns) {
            static_cast<CollectionStats&>(out) = c;
            out.found = true;
        }
    return out;
}

std::string value(size_t n, char c) {
    return std::string(n, c);
}

}  // namespace

TEST_CASE("capped: bad options are InvalidArgument and create nothing") {
    auto e = openEngine();
    auto s = e->openSession();
    for (const CollectionOptions& bad :
         {capped(0), capped(-1), capped(kMaxCappedSizeBytes + 1), capped(100, -1),
          capped(100, kMaxCappedDocs + 1), CollectionOptions{false, 100, 0, std::nullopt},
          CollectionOptions{false, 0, 5, std::nullopt}}) {
        CAPTURE(bad.cappedSizeBytes);
        CAPTURE(bad.cappedMaxDocs);
        CHECK_CODE(s->createCollection("db.c", bad), StatusCode::kInvalidArgument);
        CHECK_CODE(e->createCollection("db.c", bad), StatusCode::kInvalidArgument);
    }
    CHECK(e->listDatabases().empty());
    // The largest allowed, and the smallest (no rounding up: 1 byte is 1 byte).
    CHECK_OK(s->createCollection("db.big", capped(kMaxCappedSizeBytes, kMaxCappedDocs)));
    CHECK_OK(s->createCollection("db.tiny", capped(1)));
    CHECK_OK(s->insert("db.tiny", "k", ""));
    CHECK_CODE(s->insert("db.tiny", "kk", ""), StatusCode::kInvalidArgument);
    CHECK(scanAll(*s, "db.tiny") == "k=");
}

TEST_CASE("capped: never more key+value bytes than the size cap, oldest go first") {
    auto e = openEngine();
    auto s = e->openSession();
    REQUIRE_OK(s->createCollection("db.c", capped(100)));
    // 3 key bytes + 17 value bytes = 20 per entry: five fit.
    for (int i = 0; i < 20; ++i) {
        CAPTURE(i);
        REQUIRE_OK(s->insert("db.c", fmt::format("k{:02}", i), value(17, 'a' + i)));
        const Found c = statsOf(e->stats(), "db.c");
        REQUIRE(c.found);
        CHECK(c.bytes <= 100);
        CHECK(c.keys == std::min(i + 1, 5));
        CHECK(c.bytes == 20 * c.keys);
    }
    CHECK(order(*s, "db.c") == "k15,k16,k17,k18,k19");
    // A bigger entry evicts as many of the oldest as it needs.
    REQUIRE_OK(s->insert("db.c", "big", value(57, 'x')));  // 60 bytes: three go
    CHECK(order(*s, "db.c") == "k18,k19,big");
    CHECK(statsOf(e->stats(), "db.c").bytes == 100);
}

TEST_CASE("capped: the count cap, and the byte cap, whichever is reached first") {
    auto e = openEngine();
    auto s = e->openSession();
    REQUIRE_OK(s->createCollection("db.c", capped(1000, 3)));
    for (int i = 0; i < 10; ++i)
        REQUIRE_OK(s->put("db.c", fmt::format("k{}", i), "v"));
    CHECK(order(*s, "db.c") == "k7,k8,k9");
    CHECK(statsOf(e->stats(), "db.c").keys == 3);
    // Bytes bind before the count: 2 + 498 twice is 1000, the third evicts.
    REQUIRE_OK(s->put("db.c", "b1", value(498, 'x')));
    REQUIRE_OK(s->put("db.c", "b2", value(498, 'y')));
    CHECK(order(*s, "db.c") == "b1,b2");  // 1000 bytes; k9 (2 bytes) had to go
    REQUIRE_OK(s->put("db.c", "s", ""));
    CHECK(order(*s, "db.c") == "b2,s");
}

TEST_CASE("capped: the order is insertion order, not key order; a rewrite is newest") {
    auto e = openEngine();
    auto s = e->openSession();
    REQUIRE_OK(s->createCollection("db.c", capped(1 << 20, 3)));
    for (const char* k : {"z", "a", "m"})
        REQUIRE_OK(s->insert("db.c", k, "1"));
    REQUIRE_OK(s->insert("db.c", "b", "1"));  // evicts z, the oldest
    CHECK(order(*s, "db.c") == "a,m,b");
    CHECK(scanAll(*s, "db.c") == "a=1,b=1,m=1");  // scans read key order, as ever
    // An update (or put) of an existing key moves it to the newest place.
    REQUIRE_OK(s->update("db.c", "a", "2"));
    CHECK(order(*s, "db.c") == "m,b,a");
    REQUIRE_OK(s->insert("db.c", "c", "1"));
    CHECK(order(*s, "db.c") == "b,a,c");
    CHECK(getOr(*s, "db.c", "a") == "2");
    // Removes are allowed; the place is freed and nothing else goes.
    REQUIRE_OK(s->remove("db.c", "a"));
    REQUIRE_OK(s->insert("db.c", "d", "1"));
    CHECK(order(*s, "db.c") == "b,c,d");
    CHECK_CODE(s->remove("db.c", "a"), StatusCode::kNotFound);
    CHECK_CODE(s->insert("db.c", "d", "1"), StatusCode::kDuplicateKey);
    CHECK_CODE(s->update("db.c", "zz", "1"), StatusCode::kNotFound);
    CHECK(order(*s, "db.c") == "b,c,d");
}

TEST_CASE("capped: an entry larger than the cap is refused and changes nothing") {
    auto e = openEngine();
    auto s = e->openSession();
    REQUIRE_OK(s->createCollection("db.c", capped(10)));
    REQUIRE_OK(s->insert("db.c", "a", "1"));
    Status big = s->insert("db.c", "b", value(10, 'x'));  // 11 bytes
    CHECK(big.code() == StatusCode::kInvalidArgument);
    CHECK(big.message().find("cap of 10 bytes") != std::string::npos);
    CHECK_CODE(s->update("db.c", "a", value(10, 'x')), StatusCode::kInvalidArgument);
    CHECK(scanAll(*s, "db.c") == "a=1");
    REQUIRE_OK(s->insert("db.c", "b", value(9, 'x')));  // exactly the cap: alone
    CHECK(scanAll(*s, "db.c") == "b=xxxxxxxxx");
}

TEST_CASE("capped: writes inside a transaction are refused; reads work there") {
    auto e = openEngine();
    auto s = e->openSession();
    REQUIRE_OK(s->createCollection("db.c", capped(100)));
    REQUIRE_OK(s->createCollection("db.plain"));
    REQUIRE_OK(s->put("db.c", "a", "1"));
    REQUIRE_OK(s->begin());
    CHECK_CODE(s->put("db.c", "b", "1"), StatusCode::kIllegalOperation);
    CHECK_CODE(s->remove("db.c", "a"), StatusCode::kIllegalOperation);
    CHECK(getOr(*s, "db.c", "a") == "1");
    CHECK(scanAll(*s, "db.c") == "a=1");
    CHECK_OK(s->put("db.plain", "k", "v"));  // the transaction goes on
    CHECK_OK(s->commit());
    CHECK(getOr(*s, "db.plain", "k") == "v");
}

TEST_CASE("capped: stats show the caps, the bytes and the count") {
    auto e = openEngine();
    auto s = e->openSession();
    REQUIRE_OK(s->createCollection("db.c", capped(64, 2)));
    REQUIRE_OK(s->createCollection("db.plain"));
    for (const char* k : {"a", "b", "c"})
        REQUIRE_OK(s->put("db.c", k, "vv"));
    const EngineStats st = e->stats();
    const Found c = statsOf(st, "db.c");
    REQUIRE(c.found);
    CHECK(c.capped);
    CHECK(c.cappedSizeBytes == 64);
    CHECK(c.cappedMaxDocs == 2);
    CHECK(c.keys == 2);
    CHECK(c.bytes == 6);
    CHECK_FALSE(statsOf(st, "db.plain").capped);
    auto j = nlohmann::json::parse(e->statsJson());
    CHECK(j["collections"]["db.c"]["capped"] == true);
    CHECK(j["collections"]["db.c"]["maxSize"] == 64);
    CHECK(j["collections"]["db.c"]["max"] == 2);
    CHECK(j["collections"]["db.c"]["keys"] == 2);
    CHECK(j["collections"]["db.c"]["bytes"] == 6);
    CHECK(j["collections"]["db.plain"]["capped"] == false);
    CHECK_FALSE(j["collections"]["db.plain"].contains("maxSize"));
}

TEST_CASE("capped: system.profile can be created by the engine itself, capped; users cannot "
          "write it") {
    auto e = openEngine();
    REQUIRE_OK(e->createCollection("app.system.profile", capped(1 << 20)));
    CHECK_CODE(e->createCollection("app.system.other", capped(1 << 20)),
               StatusCode::kInvalidArgument);  // other system. names stay reserved
    auto s = e->openSession();
    // Only the profiler writes it (as in MongoDB): puts, removes and range
    // removes by a client are refused and change nothing.
    CHECK_CODE(s->insert("app.system.profile", "0001", "{}"), StatusCode::kIllegalOperation);
    CHECK_CODE(s->put("app.system.profile", "0001", "{}"), StatusCode::kIllegalOperation);
    REQUIRE_OK(e->profiler().setLevel("app", 2).status());
    REQUIRE_OK(s->createCollection("app.c"));
    REQUIRE_OK(s->put("app.c", "k", "v"));
    REQUIRE_OK(e->profiler().setLevel("app", 0).status());
    auto before = s->count("app.system.profile");
    REQUIRE_OK(before.status());
    CHECK(before.value() >= 1);
    CHECK_CODE(s->removeRange("app.system.profile", {}).status(), StatusCode::kIllegalOperation);
    CHECK(s->count("app.system.profile").value() == before.value());
    CHECK(e->listCollections("app") == std::vector<std::string>{"c", "system.profile"});
}

TEST_CASE("capped: a restart from the log alone keeps the options, content and order") {
    TempDir dir("mvkv-capped-test");
    {
        auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
        auto s = e->openSession();
        REQUIRE_OK(s->createCollection("db.c", capped(40, 3)));
        REQUIRE_OK(s->createCollection("db.plain"));
        for (const char* k : {"z", "y", "x", "w", "v"})
            REQUIRE_OK(s->insert("db.c", k, "1"));
        REQUIRE_OK(s->put("db.plain", "k", "v"));
        REQUIRE_OK(s->update("db.c", "x", "2"));
        CHECK(order(*s, "db.c") == "w,v,x");
    }
    auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
    CHECK_FALSE(e->recovery().checkpointLoaded);
    const Found c = statsOf(e->stats(), "db.c");
    REQUIRE(c.found);
    CHECK(c.capped);
    CHECK(c.cappedSizeBytes == 40);
    CHECK(c.cappedMaxDocs == 3);
    CHECK_FALSE(statsOf(e->stats(), "db.plain").capped);
    auto s = e->openSession();
    CHECK(order(*s, "db.c") == "w,v,x");
    // The cap goes on where it was: w is the oldest.
    REQUIRE_OK(s->insert("db.c", "u", "1"));
    CHECK(order(*s, "db.c") == "v,x,u");
}

TEST_CASE("capped: a restart from a checkpoint (and the log after it) keeps order and caps") {
    TempDir dir("mvkv-capped-test");
    {
        auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
        auto s = e->openSession();
        REQUIRE_OK(s->createCollection("db.c", capped(1000, 4)));
        REQUIRE_OK(s->createCollection("db.plain"));
        // Key order differs from insertion order.
        for (const char* k : {"q", "c", "x", "a", "m"})
            REQUIRE_OK(s->insert("db.c", k, k));
        REQUIRE_OK(s->put("db.plain", "k", "v"));
        REQUIRE_OK(e->checkpoint());
        REQUIRE_OK(s->insert("db.c", "b", "b"));  // after the checkpoint: in the log
        CHECK(order(*s, "db.c") == "x,a,m,b");
    }
    {
        auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
        CHECK(e->recovery().checkpointLoaded);
        CHECK(e->recovery().recordsReplayed >= 1);
        auto s = e->openSession();
        CHECK(order(*s, "db.c") == "x,a,m,b");
        CHECK(getOr(*s, "db.plain", "k") == "v");
        REQUIRE_OK(e->checkpoint());  // a checkpoint of what a checkpoint loaded
    }
    auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
    CHECK(e->recovery().checkpointLoaded);
    const Found c = statsOf(e->stats(), "db.c");
    REQUIRE(c.found);
    CHECK(c.capped);
    CHECK(c.cappedSizeBytes == 1000);
    CHECK(c.cappedMaxDocs == 4);
    auto s = e->openSession();
    CHECK(order(*s, "db.c") == "x,a,m,b");
    REQUIRE_OK(s->insert("db.c", "n", "n"));  // x, the oldest, goes
    CHECK(order(*s, "db.c") == "a,m,b,n");
    CHECK(scanAll(*s, "db.c") == "a=a,b=b,m=m,n=n");
}

TEST_CASE("capped: a replica secondary gets the capped collection and its evictions") {
    TempDir dir("mvkv-capped-test");
    auto primary = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
    EngineOptions mem;
    mem.historySweepInterval = 0ms;
    auto secondary = openEngine(mem);
    ReplicaOptions r;
    r.workers = 4;
    r.pollWait = 10ms;
    auto applier = ReplicaApplier::start(*primary, *secondary, r);
    REQUIRE_OK(applier.status());
    auto s = primary->openSession();
    REQUIRE_OK(s->createCollection("db.c", capped(1 << 20, 5)));
    for (int i = 0; i < 40; ++i)
        REQUIRE_OK(s->insert("db.c", fmt::format("k{:02}", (i * 7) % 40), fmt::format("{}", i)));
    REQUIRE_OK(applier.value()->waitApplied(primary->oplog()->stats().lastTs, 10s));
    auto s2 = secondary->openSession();
    CHECK(scanAll(*s2, "db.c") == scanAll(*s, "db.c"));
    CHECK(order(*s2, "db.c") == order(*s, "db.c"));
    const Found c = statsOf(secondary->stats(), "db.c");
    REQUIRE(c.found);
    CHECK(c.capped);
    CHECK(c.cappedMaxDocs == 5);
    CHECK(c.keys == 5);
    applier.value()->stop();
    // Promoted, the secondary goes on capping in the same order.
    secondary->setSecondary(false);
    REQUIRE_OK(s2->insert("db.c", "new", "1"));
    REQUIRE_OK(s->insert("db.c", "new", "1"));
    CHECK(order(*s2, "db.c") == order(*s, "db.c"));
}

TEST_SUITE("concurrency") {
TEST_CASE("capped: 4 writers and 2 readers; no snapshot over the cap, runs kept, no torn entry") {
    const uint32_t seed = mvkv::testing::testSeed();
    auto e = openEngine();
    constexpr int64_t kCap = 2000;
    constexpr int64_t kMax = 40;
    const std::string ns = "app.log";  // a capped collection as the profiler uses one
    REQUIRE_OK(e->createCollection(ns, capped(kCap, kMax)));
    constexpr int kWriters = 4;
    constexpr int kPerWriter = 300;
    // The value of writer w's i-th entry: its length and bytes follow from the key.
    auto valueOf = [seed](int w, int i) {
        std::mt19937 rng(seed + static_cast<uint32_t>(w * 100000 + i));
        return std::string(10 + rng() % 60, static_cast<char>('a' + (i + w) % 26));
    };
    std::atomic<int> writersLeft{kWriters};
    std::mutex failMutex;
    std::vector<std::string> failures;
    auto fail = [&](std::string what) {
        std::lock_guard lock(failMutex);
        if (failures.size() < 10)
            failures.push_back(std::move(what));
    };
    std::vector<std::thread> threads;
    for (int w = 0; w < kWriters; ++w)
        threads.emplace_back([&, w] {
            auto s = e->openSession();
            for (int i = 0; i < kPerWriter; ++i)
                if (Status st = s->insert(ns, fmt::format("w{}-{:04}", w, i), valueOf(w, i));
                    !st.ok())
                    fail("writer: " + st.toString());
            writersLeft.fetch_sub(1);
        });
    std::atomic<uint64_t> snapshots{0};
    for (int r = 0; r < 2; ++r)
        threads.emplace_back([&] {
            auto s = e->openSession();
            do {
                auto c = s->openCursor(ns);  // one snapshot
                if (!c.ok()) {
                    fail("cursor: " + c.status().toString());
                    return;
                }
                int64_t bytes = 0, count = 0;
                std::map<int, std::vector<int>> runs;  // writer -> its entries present
                Status st = c.value()->first();
                for (; st.ok() && c.value()->valid(); st = c.value()->next()) {
                    const std::string key(c.value()->key());
                    int w = 0, i = 0;
                    if (std::sscanf(key.c_str(), "w%d-%d", &w, &i) != 2 ||
                        c.value()->value() != valueOf(w, i))
                        fail("torn or foreign entry " + key);
                    bytes += static_cast<int64_t>(key.size() + c.value()->value().size());
                    ++count;
                    runs[w].push_back(i);
                }
                if (!st.ok())
                    fail("scan: " + st.toString());
                if (bytes > kCap || count > kMax)
                    fail(fmt::format("a snapshot over the cap: {} bytes, {} entries", bytes, count));
                // Eviction is oldest first and each writer inserts in order,
                // so what is left of a writer is a run without gaps.
                for (const auto& [w, is] : runs)
                    if (is.back() - is.front() + 1 != static_cast<int>(is.size()))
                        fail(fmt::format("writer {}'s entries have a gap: {}..{} but {} present",
                                         w, is.front(), is.back(), is.size()));
                snapshots.fetch_add(1);
            } while (writersLeft.load() > 0);
        });
    for (auto& t : threads)
        t.join();
    for (const std::string& f : failures)
        FAIL_CHECK(f);
    CHECK(failures.empty());
    CHECK(snapshots.load() >= 2);
    // At the end: each writer's last entries, and the collection full (to one entry).
    auto s = e->openSession();
    const Found c = statsOf(e->stats(), ns);
    REQUIRE(c.found);
    CHECK(c.bytes <= kCap);
    CHECK(c.keys <= kMax);
    // Full: the last eviction stopped as soon as the rest fit (an entry is
    // at most 7 + 69 bytes), unless the count cap bound.
    CHECK((c.keys == kMax || c.bytes > kCap - 76));
    const std::string all = order(*s, ns);
    CHECK(c.keys == static_cast<int64_t>(std::count(all.begin(), all.end(), ',') + 1));
}
}  // TEST_SUITE
