// Durable members of a replica set (replication/replica_set.h, addSecondary(path);
// docs/replication.md, "Durable members"): the apply is logged in the
// primary's timestamp order, so the secondary's own directory replays to the
// primary's data at the primary's timestamps; a reopened member resumes after
// its own newest timestamp; the majority point counts durable timestamps; a
// resume point capping dropped, and a directory another engine wrote, are
// refused; writers on the primary while a durable member applies.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "replication/replica_set.h"
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

constexpr auto kLong = 20s;  // a wait that only a bug makes long

ReplicaSetOptions setOptions(oplog::SyncMode secondarySync) {
    ReplicaSetOptions o;
    o.applier.workers = 2;
    o.applier.pollWait = 5ms;
    o.secondary = onDisk("", secondarySync);  // the path comes with addSecondary
    return o;
}

std::unique_ptr<ReplicaSet> startSet(Engine& primary, ReplicaSetOptions o) {
    auto s = ReplicaSet::start(primary, std::move(o));
    REQUIRE_MESSAGE(s.ok(), s.status().toString());
    return std::move(s).value();
}

int addDurable(ReplicaSet& set, const std::string& path) {
    auto id = set.addSecondary(path);
    REQUIRE_MESSAGE(id.ok(), id.status().toString());
    return id.value();
}

mvcc::Timestamp newestTs(Engine& e) {
    return e.oplog()->stats().lastTs;
}

// Every key of `ns` read at `ts` (0: newest), as scanAll.
std::string scanAt(Engine& e, std::string_view ns, mvcc::Timestamp ts) {
    auto s = e.openSession();
    mustOk(s->begin(TxnOptions{ts, false}));
    std::string out = scanAll(*s, ns);
    mustOk(s->commit());
    return out;
}

// `count` one-key commits of `key<i % keys>`; their timestamps.
std::vector<mvcc::Timestamp> writeSome(Session& s, int first, int count, int keys) {
    std::vector<mvcc::Timestamp> out;
    for (int i = first; i < first + count; ++i) {
        mustOk(s.put("app.c", "k" + std::to_string(i % keys), "v" + std::to_string(i)));
        out.push_back(s.lastCommitTs());
    }
    return out;
}

// Member `id` as the set reports it once `done` holds for it (the applier's
// report reaches the set just after waitApplied wakes).
template <typename Pred>
MemberStatus reportedWhen(ReplicaSet& set, int id, Pred done) {
    const auto until = std::chrono::steady_clock::now() + kLong;
    while (true) {
        MemberStatus m = set.status()[static_cast<size_t>(id)];
        if (done(m) || std::chrono::steady_clock::now() > until)
            return m;
        std::this_thread::yield();
    }
}

}  // namespace

TEST_CASE("replset durable: applies, is reopened, resumes; its directory holds the primary's "
          "timestamps") {
    TempDir pdir("mvkv-replset-durable"), sdir("mvkv-replset-durable");
    auto primary = openEngine(onDisk(pdir.path, oplog::SyncMode::kNone));
    auto ps = primary->openSession();
    std::vector<mvcc::Timestamp> stamps;
    mvcc::Timestamp firstApplied = 0;
    {
        auto set = startSet(*primary, setOptions(oplog::SyncMode::kFsync));
        const int id = addDurable(*set, sdir.path);
        CHECK(id == 1);
        mustOk(ps->createCollection("app.c"));
        mustOk(ps->createCollection("app.gone"));
        mustOk(ps->put("app.gone", "x", "1"));
        mustOk(ps->dropCollection("app.gone"));
        stamps = writeSome(*ps, 0, 40, 7);
        firstApplied = newestTs(*primary);
        REQUIRE_OK(set->waitApplied(id, firstApplied, kLong));
        const MemberStatus m = reportedWhen(
            *set, id, [&](const MemberStatus& r) { return r.lastApplied >= firstApplied; });
        CHECK(m.lastApplied == firstApplied);
        CHECK(m.lastDurable == firstApplied);  // fsync: every commit synced
        CHECK(scanAt(*set->secondary(id), "app.c", set->readOptions(id).readTs) ==
              scanAt(*primary, "app.c", firstApplied));
        // Its own oplog logged the primary's history at the primary's timestamps.
        CHECK(newestTs(*set->secondary(id)) == firstApplied);
    }
    // The primary goes on alone, then the member comes back on its directory.
    auto more = writeSome(*ps, 40, 25, 9);
    stamps.insert(stamps.end(), more.begin(), more.end());
    {
        auto set = startSet(*primary, setOptions(oplog::SyncMode::kFsync));
        const int id = addDurable(*set, sdir.path);
        // It starts at its own newest timestamp, not at the primary's start
        // (a repeat of the old commits would be refused by its ordered log).
        CHECK(set->status()[1].lastApplied >= firstApplied);
        const mvcc::Timestamp newest = newestTs(*primary);
        REQUIRE_OK(set->waitApplied(id, newest, kLong));
        CHECK(set->status()[1].state == "SECONDARY");
        CHECK(scanAt(*set->secondary(id), "app.c", newest) == scanAt(*primary, "app.c", newest));
        CHECK(set->secondary(id)->listCollections("app") == primary->listCollections("app"));
    }
    // The directory alone, reopened: the same data at every one of the
    // primary's timestamps.
    auto alone = openEngine(onDisk(sdir.path, oplog::SyncMode::kFsync));
    CHECK(newestTs(*alone) == newestTs(*primary));
    for (mvcc::Timestamp ts : stamps)
        CHECK_MESSAGE(scanAt(*alone, "app.c", ts) == scanAt(*primary, "app.c", ts),
                      "at timestamp " << ts);
}

TEST_CASE("replset durable: the majority point counts what a member made durable") {
    TempDir pdir("mvkv-replset-durable"), sdir("mvkv-replset-durable");
    auto primary = openEngine(onDisk(pdir.path, oplog::SyncMode::kNone));
    std::atomic<bool> holdSync{true};
    ReplicaSetOptions o = setOptions(oplog::SyncMode::kNone);  // durable only when synced
    o.applier.syncEveryBatches = 1;
    o.applier.beforeSync = [&] { return !holdSync.load(); };
    auto set = startSet(*primary, o);
    const int id = addDurable(*set, sdir.path);  // a set of two: the majority is both
    auto ps = primary->openSession();
    mustOk(ps->createCollection("app.c"));
    const auto stamps = writeSome(*ps, 0, 5, 3);
    const mvcc::Timestamp last = stamps.back();
    REQUIRE_OK(set->waitApplied(id, last, kLong));
    const MemberStatus held =
        reportedWhen(*set, id, [&](const MemberStatus& r) { return r.lastApplied >= last; });
    CHECK(held.lastApplied >= last);
    CHECK(held.lastDurable < last);  // applied, not synced
    CHECK(set->majorityCommitTs() < last);
    CHECK(primary->majorityCommitTs() < last);
    // {w: 2} counts applied members; majority waits for the sync.
    mustOk(ps->begin());
    mustOk(ps->put("app.c", "w", "1"));
    // The held sync keeps the point below it whatever the wait: 1 ms is enough.
    CHECK(ps->commit(WriteConcern::majorityOf(1ms)).code() == StatusCode::kWriteConcernTimeout);
    const mvcc::Timestamp wTs = ps->lastCommitTs();

    holdSync = false;  // the next sync (it has caught up: now) goes through
    const mvcc::Timestamp got =
        primary->waitMajorityCommitAfter(wTs - 1, std::chrono::steady_clock::now() + kLong);
    CHECK(got >= wTs);
    const MemberStatus synced = set->status()[1];  // the report moved the point
    CHECK(synced.lastDurable >= wTs);
    CHECK(synced.lastDurable <= synced.lastApplied);
}

TEST_CASE("replset durable: a resume point the primary capped away is OplogHistoryLost") {
    TempDir pdir("mvkv-replset-durable"), sdir("mvkv-replset-durable");
    EngineOptions po = onDisk(pdir.path, oplog::SyncMode::kNone);
    po.oplogSegmentBytes = 4096;
    po.oplogCapBytes = 16 * 1024;
    po.checkpointsKept = 1;
    auto primary = openEngine(po);
    auto ps = primary->openSession();
    mvcc::Timestamp memberAt = 0;
    {
        auto set = startSet(*primary, setOptions(oplog::SyncMode::kFsync));
        const int id = addDurable(*set, sdir.path);
        mustOk(ps->createCollection("app.c"));
        writeSome(*ps, 0, 3, 3);
        memberAt = newestTs(*primary);
        REQUIRE_OK(set->waitApplied(id, memberAt, kLong));
    }
    const std::string value(200, 'x');
    for (int i = 0; i < 400; ++i)
        mustOk(ps->put("app.c", "k" + std::to_string(i % 50), value));
    mustOk(primary->checkpoint());
    REQUIRE(primary->oplog()->stats().firstTs > memberAt);

    auto set = startSet(*primary, setOptions(oplog::SyncMode::kFsync));
    auto id = set->addSecondary(sdir.path);
    REQUIRE(!id.ok());
    CHECK(id.status().code() == StatusCode::kCappedPositionLost);
    CHECK(id.status().message().find("OplogHistoryLost") != std::string::npos);
    CHECK(id.status().message().find(std::to_string(memberAt)) != std::string::npos);
    CHECK(set->size() == 1);  // no member was added
}

TEST_CASE("replset durable: a directory another engine wrote past the primary is refused") {
    TempDir pdir("mvkv-replset-durable"), other("mvkv-replset-durable");
    auto primary = openEngine(onDisk(pdir.path, oplog::SyncMode::kNone));
    auto ps = primary->openSession();
    mustOk(ps->createCollection("app.c"));
    {
        auto stranger = openEngine(onDisk(other.path, oplog::SyncMode::kNone));
        auto s = stranger->openSession();
        mustOk(s->createCollection("app.c"));
        for (int i = 0; i < 20; ++i)
            mustOk(s->put("app.c", "s" + std::to_string(i), "x"));
        REQUIRE(newestTs(*stranger) > newestTs(*primary));
    }
    auto set = startSet(*primary, setOptions(oplog::SyncMode::kFsync));
    auto id = set->addSecondary(other.path);
    REQUIRE(!id.ok());
    CHECK(id.status().code() == StatusCode::kIllegalOperation);
    CHECK(id.status().message().find("another engine") != std::string::npos);
    CHECK(set->addSecondary("").status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("replset durable: writers on the primary while a durable member applies") {
    const uint32_t seed = mvkv::testing::testSeed();
    TempDir pdir("mvkv-replset-durable"), sdir("mvkv-replset-durable");
    auto primary = openEngine(onDisk(pdir.path, oplog::SyncMode::kNone));
    ReplicaSetOptions o = setOptions(oplog::SyncMode::kNone);
    o.applier.syncEveryBatches = 3;
    auto set = startSet(*primary, o);
    const int durable = addDurable(*set, sdir.path);
    auto memoryId = set->addSecondary();
    REQUIRE_OK(memoryId.status());
    mustOk(primary->openSession()->createCollection("app.c"));

    constexpr int kWriters = 4, kCommits = 150;
    std::atomic<bool> done{false};
    std::atomic<int> violations{0};
    std::thread watcher([&] {
        mvcc::Timestamp lastMajority = 0;
        while (!done) {
            for (const MemberStatus& m : set->status())
                if (m.lastDurable > m.lastApplied)
                    violations++;
            const mvcc::Timestamp point = set->majorityCommitTs();
            if (point < lastMajority)
                violations++;
            lastMajority = point;
            std::this_thread::yield();
        }
    });
    std::vector<std::thread> writers;
    for (int w = 0; w < kWriters; ++w) {
        writers.emplace_back([&, w] {
            std::mt19937 rng(seed + static_cast<uint32_t>(w));
            auto s = primary->openSession();
            for (int i = 0; i < kCommits; ++i) {
                mustOk(s->begin());
                Status st;
                const int keys = 1 + static_cast<int>(rng() % 3);
                for (int k = 0; k < keys && st.ok(); ++k)
                    st = s->put("app.c", "k" + std::to_string(rng() % 64),
                                std::to_string(w) + "." + std::to_string(i));
                if (st.ok() && rng() % 8 == 0) {
                    st = s->remove("app.c", "k" + std::to_string(rng() % 64));
                    if (st.code() == StatusCode::kNotFound)
                        st = Status::OK();
                }
                if (st.ok())
                    st = s->commit();
                else if (s->inTransaction())
                    s->abort().ignore();
                // Another writer won a key: fine; anything else is a bug.
                if (st.code() != StatusCode::kWriteConflict)
                    mustOk(st);
            }
        });
    }
    for (auto& t : writers)
        t.join();
    const mvcc::Timestamp newest = newestTs(*primary);
    REQUIRE_OK(set->waitApplied(durable, newest, kLong));
    REQUIRE_OK(set->waitApplied(memoryId.value(), newest, kLong));
    done = true;
    watcher.join();
    CHECK(violations == 0);
    const std::string expected = scanAt(*primary, "app.c", newest);
    CHECK(scanAt(*set->secondary(durable), "app.c", newest) == expected);
    CHECK(scanAt(*set->secondary(memoryId.value()), "app.c", newest) == expected);
    set.reset();
    auto alone = openEngine(onDisk(sdir.path, oplog::SyncMode::kNone));
    CHECK(scanAt(*alone, "app.c", newest) == expected);
}
