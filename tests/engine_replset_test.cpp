// A replica set in one process (replication/replica_set.h) with write and read
// concerns (engine/write_concern.h). The stories: seed 003's last quiz
// question (a {w: 1} write is unseen by a majority read until a majority
// has it); {w: "majority"} with one of three members paused succeeds and
// with two times out, the write committed; {w: N}; the standalone engine;
// read concerns; bad calls; four majority writers while members pause.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/document_locks.h"
#include "replication/replica_set.h"
#include "mvkv/failpoint.h"
#include "tests/data_dir_copy.h"
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

// A durable primary (the applier tails its oplog) and a set of `secondaries`.
struct SetFixture {
    // `paused`: every secondary is paused before anything is written, so
    // nothing is majority-committed until one is resumed.
    explicit SetFixture(size_t secondaries, bool paused = false) {
        primary = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
        ReplicaSetOptions o;
        o.applier.workers = 2;
        o.applier.pollWait = 5ms;
        o.secondary.historySweepInterval = 0ms;
        auto s = ReplicaSet::start(*primary, o);
        REQUIRE_MESSAGE(s.ok(), s.status().toString());
        set = std::move(s).value();
        for (size_t i = 0; i < secondaries; ++i) {
            auto id = set->addSecondary();
            REQUIRE_MESSAGE(id.ok(), id.status().toString());
            CHECK(id.value() == static_cast<int>(i + 1));
            if (paused)
                mustOk(set->pause(id.value()));
        }
        session = primary->openSession();
        mustOk(session->createCollection("app.c"));
    }
    ~SetFixture() {
        session.reset();
        set.reset();
    }
    // A one-key transaction committed with `wc`; its commit timestamp in *ts.
    Status write(const std::string& key, const std::string& value, const WriteConcern& wc,
                 mvcc::Timestamp* ts = nullptr) {
        mustOk(session->begin());
        mustOk(session->put("app.c", key, value));
        Status s = session->commit(wc);
        if (ts)
            *ts = session->lastCommitTs();
        return s;
    }
    // `key` as a transaction with read concern `rc` on the primary reads it.
    std::string read(const std::string& key, ReadConcern rc) {
        auto s = primary->openSession();
        TxnOptions o;
        o.readConcern = rc;
        Status b = s->begin(o);
        if (!b.ok())
            return "<" + std::string(statusCodeName(b.code())) + ">";
        std::string v = getOr(*s, "app.c", key);
        mustOk(s->commit());
        return v;
    }
    void waitMajority(mvcc::Timestamp ts) {
        const mvcc::Timestamp got =
            primary->waitMajorityCommitAfter(ts - 1, std::chrono::steady_clock::now() + kLong);
        REQUIRE_MESSAGE(got >= ts, "majority point " << got << " never reached " << ts);
    }

    TempDir dir;
    std::unique_ptr<Engine> primary;
    std::unique_ptr<ReplicaSet> set;
    std::unique_ptr<Session> session;
};

size_t membersApplied(const ReplicaSet& set, mvcc::Timestamp ts) {
    size_t n = 0;
    for (const MemberStatus& m : set.status())
        n += m.lastApplied >= ts ? 1 : 0;
    return n;
}

}  // namespace

TEST_CASE("replset: a {w:1} write is unseen by a majority read until a secondary applies it") {
    SetFixture f(2);
    mvcc::Timestamp base = 0;
    mustOk(f.write("k", "v0", WriteConcern::majorityOf(), &base));
    CHECK(f.read("k", ReadConcern::kMajority) == "v0");

    mustOk(f.set->pause(1));
    mustOk(f.set->pause(2));
    mvcc::Timestamp ts = 0;
    mustOk(f.write("k", "v1", WriteConcern::nodes(1), &ts));  // acknowledged by the primary alone
    CHECK(f.read("k", ReadConcern::kLocal) == "v1");
    CHECK(f.read("k", ReadConcern::kMajority) == "v0");  // the stale-looking read of the quiz
    CHECK(f.primary->majorityCommitTs() < ts);

    mustOk(f.set->resume(1));
    mustOk(f.set->waitApplied(1, ts, kLong));
    f.waitMajority(ts);  // primary + member 1: 2 of 3
    CHECK(f.read("k", ReadConcern::kMajority) == "v1");
    // A reader of the secondary itself reads at its last applied batch.
    auto sec = f.set->secondary(1)->openSession();
    mustOk(sec->begin(f.set->readOptions(1)));
    CHECK(getOr(*sec, "app.c", "k") == "v1");
    mustOk(sec->commit());
}

TEST_CASE("replset: reads outside a transaction follow the session's read concern") {
    SetFixture f(2, true);
    auto reader = f.primary->openSession();
    reader->setReadConcern(ReadConcern::kMajority);
    // Nothing majority-committed yet: a majority read has no snapshot.
    CHECK(reader->get("app.c", "k").status().code() == StatusCode::kBusy);
    mustOk(f.set->resume(1));
    mustOk(f.set->resume(2));
    mustOk(f.write("k", "v0", WriteConcern::majorityOf()));
    mustOk(f.set->pause(1));
    mustOk(f.set->pause(2));
    mvcc::Timestamp ts = 0;
    mustOk(f.write("k", "v1", WriteConcern::nodes(1), &ts));
    mustOk(f.write("j", "new", WriteConcern::nodes(1)));

    // get, scan, count and a cursor all read at the majority point.
    CHECK(getOr(*reader, "app.c", "k") == "v0");
    CHECK(scanAll(*reader, "app.c") == "k=v0");
    auto n = reader->count("app.c");
    REQUIRE(n.ok());
    CHECK(n.value() == 1);
    std::string scanned;
    mustOk(reader->scan("app.c", {}, [&](std::string_view k, std::string_view) {
        scanned += k;
        return true;
    }));
    CHECK(scanned == "k");
    // The same session at local (the default) sees the {w:1} writes.
    reader->setReadConcern(ReadConcern::kLocal);
    CHECK(getOr(*reader, "app.c", "k") == "v1");
    CHECK(scanAll(*reader, "app.c") == "j=new,k=v1");
    // A transaction takes its own read concern, not the session's.
    reader->setReadConcern(ReadConcern::kMajority);
    mustOk(reader->begin());
    CHECK(getOr(*reader, "app.c", "k") == "v1");
    mustOk(reader->commit());

    mustOk(f.set->resume(1));
    mustOk(f.set->waitApplied(1, ts + 1, kLong));
    f.waitMajority(ts + 1);
    CHECK(getOr(*reader, "app.c", "k") == "v1");
    CHECK(scanAll(*reader, "app.c") == "j=new,k=v1");
    // Snapshot outside a transaction reads at all_durable: every commit.
    reader->setReadConcern(ReadConcern::kSnapshot);
    CHECK(getOr(*reader, "app.c", "j") == "new");

    // A write's reads are the newest commits whatever the read concern:
    // releaseAll finds locks taken since the majority point, and removeRange
    // deletes a {w:1} key the majority point does not show yet.
    reader->setReadConcern(ReadConcern::kMajority);
    mustOk(f.set->pause(1));
    {
        DocumentLocks locks(*reader);
        AcquireOptions alice;
        alice.owner = "alice";
        REQUIRE_OK(locks.acquire("app.c", "k", alice).status());
        REQUIRE_OK(locks.acquire("app.c", "j", alice).status());
        auto released = locks.releaseAll("alice");
        REQUIRE_OK(released.status());
        CHECK(released.value() == 2);
    }
    mustOk(f.write("m", "w1", WriteConcern::nodes(1)));
    auto removed = reader->removeRange("app.c", {});
    REQUIRE(removed.ok());
    CHECK(removed.value() == 3);
    reader->setReadConcern(ReadConcern::kLocal);
    CHECK(scanAll(*reader, "app.c").empty());
}

TEST_CASE("replset: a secondary refuses clients' writes and profiles nothing; its apply goes on") {
    SetFixture f(1);
    Engine& sec = *f.set->secondary(1);
    CHECK(sec.secondary());
    auto client = sec.openSession();
    mvcc::Timestamp ts = 0;
    mustOk(f.write("k", "v1", WriteConcern::majorityOf(), &ts));
    // Profiling would write app.system.profile there.
    CHECK(sec.profiler().setLevel("app", 2).status().code() == StatusCode::kNotWritablePrimary);

    Status put = client->put("app.c", "k", "mine");
    CHECK(put.code() == StatusCode::kNotWritablePrimary);
    CHECK(put.message().find("write to the primary") != std::string::npos);
    CHECK(client->remove("app.c", "k").code() == StatusCode::kNotWritablePrimary);
    CHECK(client->createCollection("app.mine").code() == StatusCode::kNotWritablePrimary);
    CHECK(client->dropCollection("app.c").code() == StatusCode::kNotWritablePrimary);
    mustOk(client->begin());
    CHECK(client->put("app.c", "k", "mine").code() == StatusCode::kNotWritablePrimary);
    mustOk(client->abort());
    CHECK(getOr(*client, "app.c", "k") == "v1");  // reads go on

    mustOk(f.write("k", "v2", WriteConcern::majorityOf(), &ts));
    mustOk(f.set->waitApplied(1, ts, kLong));
    CHECK(getOr(*client, "app.c", "k") == "v2");
    CHECK(sec.listCollections("app") == std::vector<std::string>{"c"});
    // A TTL pass is refused on it.
    CHECK(!sec.runTtlPass().ok());
}

TEST_CASE("replset: EngineOptions::secondary makes an engine a secondary from its open") {
    EngineOptions o;
    o.secondary = true;
    auto e = openEngine(o);
    CHECK(e->secondary());
    auto s = e->openSession();
    CHECK(s->createCollection("app.c").code() == StatusCode::kNotWritablePrimary);
    e->setSecondary(false);  // a promotion
    mustOk(s->createCollection("app.c"));
    mustOk(s->put("app.c", "k", "v"));
}

TEST_CASE("replset: {w:majority} with one of three paused is met; with two it times out committed") {
    SetFixture f(2);
    mustOk(f.set->pause(2));
    mvcc::Timestamp ts = 0;
    mustOk(f.write("a", "1", WriteConcern::majorityOf(kLong), &ts));
    CHECK(f.primary->majorityCommitTs() >= ts);
    CHECK(f.read("a", ReadConcern::kMajority) == "1");

    mustOk(f.set->pause(1));
    mvcc::Timestamp late = 0;
    Status s = f.write("b", "2", WriteConcern::majorityOf(10ms), &late);
    REQUIRE(s.code() == StatusCode::kWriteConcernTimeout);
    CHECK(s.message().find("IS committed") != std::string::npos);
    CHECK(!f.session->inTransaction());
    CHECK(getOr(*f.session, "app.c", "b") == "2");  // committed, readable locally
    CHECK(f.read("b", ReadConcern::kLocal) == "2");
    CHECK(f.read("b", ReadConcern::kMajority) == "<NotFound>");

    // The wait ended, not the replication: a member back makes it majority.
    mustOk(f.set->resume(2));
    f.waitMajority(late);
    CHECK(f.read("b", ReadConcern::kMajority) == "2");
}

TEST_CASE(
    "replset: the primary's durable point is its synced oplog (sync none): a {w:majority} ack "
    "is on its disk") {
    SetFixture f(2);  // the primary logs with sync mode none
    mustOk(f.set->pause(1));
    mustOk(f.set->pause(2));
    mvcc::Timestamp ts = 0;
    mustOk(f.write("k", "v1", WriteConcern::nodes(1), &ts));
    f.primary->oplog()->refreshVisibility();
    MemberStatus primary = f.set->status().at(0);
    CHECK(primary.lastApplied >= ts);
    CHECK(primary.lastDurable < ts);  // in the log writer's buffer, not on disk
    CHECK(f.primary->majorityCommitTs() < ts);

    // A member that applies it makes the set sync the primary.
    const uint64_t syncsBefore = f.primary->oplog()->stats().syncs;
    mustOk(f.set->resume(1));
    mustOk(f.set->waitApplied(1, ts, kLong));
    f.waitMajority(ts);
    CHECK(f.set->status().at(0).lastDurable >= ts);
    CHECK(f.primary->oplog()->stats().syncs > syncsBefore);

    // {w:majority} returns once the primary synced the write (its durable
    // point passed it), and a copy of its files holds it.
    mvcc::Timestamp acked = 0;
    mustOk(f.write("k", "v2", WriteConcern::majorityOf(kLong), &acked));
    CHECK(f.set->status().at(0).lastDurable >= acked);
    TempDir copyDir("mvkv-replset-test");
    const std::string copy = copyDir.path + "/data";
    mvkv::testing::copyAsCrashed(f.dir.path, copy);
    auto reopened = openEngine(onDisk(copy, oplog::SyncMode::kNone));
    auto r = reopened->openSession();
    CHECK(getOr(*r, "app.c", "k") == "v2");
}

TEST_CASE("replset: a commit during the set's teardown gets OK or IllegalOperation, never a timeout") {
    // The teardown is held (failpoint hangInReplicaSetTeardown) between its
    // two steps while commits with {w: "majority"} and {w: 3} run: the
    // majority point is stuck below them (both members paused), and the
    // teardown, not the wtimeout, must be their answer.
    SetFixture f(2);
    mvcc::Timestamp ts = 0;
    mustOk(f.write("a", "1", WriteConcern::majorityOf(kLong), &ts));
    mustOk(f.set->pause(1));
    mustOk(f.set->pause(2));
    auto armed = configureFailPoint("hangInReplicaSetTeardown", "times 1");
    REQUIRE_OK(armed.status());
    std::thread teardown([&] { f.set.reset(); });
    REQUIRE_OK(waitForFailPoint("hangInReplicaSetTeardown", armed.value() + 1, kLong));
    Status majority = f.write("b", "2", WriteConcern::majorityOf(1ms));
    Status three = f.write("c", "3", WriteConcern::nodes(3, 1ms));
    mustOk(configureFailPoint("hangInReplicaSetTeardown", "off").status());
    teardown.join();
    CHECK_MESSAGE((majority.ok() || majority.code() == StatusCode::kIllegalOperation),
                  majority.toString());
    CHECK_MESSAGE(three.code() == StatusCode::kIllegalOperation, three.toString());
    CHECK(three.message().find("IS committed") != std::string::npos);
    // Both committed; the engine is standalone again: a majority of one.
    CHECK(getOr(*f.session, "app.c", "b") == "2");
    CHECK(getOr(*f.session, "app.c", "c") == "3");
    mustOk(f.write("d", "4", WriteConcern::majorityOf(kLong)));
}

TEST_CASE("replset: {w:N} counts members that applied; more than the set is refused, txn open") {
    SetFixture f(2);
    mvcc::Timestamp ts = 0;
    mustOk(f.write("a", "1", WriteConcern::nodes(3, kLong), &ts));
    CHECK(membersApplied(*f.set, ts) == 3);

    mustOk(f.set->pause(2));
    mustOk(f.write("b", "1", WriteConcern::nodes(2, kLong), &ts));
    CHECK(membersApplied(*f.set, ts) >= 2);
    Status s = f.write("c", "1", WriteConcern::nodes(3, 5ms), &ts);
    CHECK(s.code() == StatusCode::kWriteConcernTimeout);
    CHECK(s.message().find("IS committed") != std::string::npos);
    CHECK(s.message().find("of 3 members applied it") != std::string::npos);

    // Unsatisfiable: checked before the commit, which does not happen.
    mustOk(f.session->begin());
    mustOk(f.session->put("app.c", "d", "1"));
    s = f.session->commit(WriteConcern::nodes(4));
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK(s.message().find("the transaction is open") != std::string::npos);
    CHECK(f.session->inTransaction());
    s = f.session->commit(WriteConcern::nodes(0));
    CHECK(s.code() == StatusCode::kInvalidArgument);
    mustOk(f.session->abort());
    CHECK(getOr(*f.session, "app.c", "d") == "<NotFound>");
    // A read-only transaction waits for nothing.
    mustOk(f.session->begin());
    mustOk(f.session->commit(WriteConcern::nodes(3, 0ms)));
}

TEST_CASE("replset: a standalone engine is a majority of one; w>1 is refused") {
    for (bool durable : {false, true}) {
        CAPTURE(durable);
        TempDir dir;
        auto e = openEngine(durable ? onDisk(dir.path, oplog::SyncMode::kNone) : EngineOptions{});
        auto s = e->openSession();
        mustOk(s->createCollection("app.c"));
        mustOk(s->begin());
        mustOk(s->put("app.c", "k", "v"));
        Status st = s->commit(WriteConcern::nodes(2));
        CHECK(st.code() == StatusCode::kInvalidArgument);
        CHECK(st.message().find("standalone") != std::string::npos);
        REQUIRE(s->inTransaction());
        mustOk(s->commit(WriteConcern::majorityOf(kLong)));
        CHECK(e->majorityCommitTs() >= s->lastCommitTs());
        TxnOptions o;
        o.readConcern = ReadConcern::kMajority;
        mustOk(s->begin(o));
        CHECK(getOr(*s, "app.c", "k") == "v");
        mustOk(s->commit());
        auto status = e->serverStatus("repl");
        REQUIRE(status.ok());
        CHECK(nlohmann::json::parse(status.value())["repl"].is_null());
    }
}

TEST_CASE("replset: a set with no secondary yet meets w:1 and w:majority without a report") {
    // Only the primary's oplog visibility moves then, which reports to no
    // set: the wait must still end (it hung, or timed out spuriously).
    SetFixture f(0);
    for (int i = 0; i < 20; ++i) {
        mvcc::Timestamp ts = 0;
        mustOk(f.write("k" + std::to_string(i), "v", WriteConcern::majorityOf(kLong), &ts));
        CHECK(f.primary->majorityCommitTs() >= ts);
        mustOk(f.write("w1-" + std::to_string(i), "v", WriteConcern::nodes(1)));
    }
}

TEST_CASE("replset: read concerns: snapshot fixes a timestamp; majority takes none; none yet") {
    auto e = openEngine();
    auto s = e->openSession();
    TxnOptions majority;
    majority.readConcern = ReadConcern::kMajority;
    Status b = s->begin(majority);  // nothing committed anywhere yet
    CHECK(b.code() == StatusCode::kBusy);
    CHECK(!s->inTransaction());

    mustOk(s->createCollection("app.c"));
    mustOk(s->put("app.c", "k", "1"));
    const mvcc::Timestamp first = s->lastCommitTs();
    majority.readTs = first;
    CHECK(s->begin(majority).code() == StatusCode::kInvalidArgument);

    TxnOptions snap;
    snap.readConcern = ReadConcern::kSnapshot;
    mustOk(s->begin(snap));
    CHECK(s->info().readTs == first);
    auto other = e->openSession();
    mustOk(other->put("app.c", "k", "2"));
    CHECK(getOr(*s, "app.c", "k") == "1");
    mustOk(s->commit());
    snap.readTs = first;  // snapshot at a given timestamp
    mustOk(s->begin(snap));
    CHECK(s->info().readTs == first);
    CHECK(getOr(*s, "app.c", "k") == "1");
    mustOk(s->commit());
}

TEST_CASE("replset: status, serverStatus repl, and bad member calls") {
    SetFixture f(2);
    mvcc::Timestamp ts = 0;
    mustOk(f.write("a", "1", WriteConcern::nodes(3, kLong), &ts));
    auto members = f.set->status();
    REQUIRE(members.size() == 3);
    CHECK(members[0].state == "PRIMARY");
    CHECK(members[1].state == "SECONDARY");
    CHECK(members[2].lastApplied >= ts);
    CHECK(members[2].lastDurable == members[2].lastApplied);

    CHECK(f.set->pause(0).code() == StatusCode::kIllegalOperation);
    CHECK(f.set->pause(3).code() == StatusCode::kNotFound);
    CHECK(f.set->resume(-1).code() == StatusCode::kNotFound);
    CHECK(f.set->resume(1).code() == StatusCode::kIllegalOperation);  // running
    mustOk(f.set->pause(1));
    CHECK(f.set->pause(1).code() == StatusCode::kIllegalOperation);
    CHECK(f.set->waitApplied(1, ts, 1ms).code() == StatusCode::kIllegalOperation);
    CHECK(f.set->status()[1].state == "PAUSED");
    CHECK(f.set->status()[1].paused);

    auto again = ReplicaSet::start(*f.primary);
    CHECK(again.status().code() == StatusCode::kIllegalOperation);

    auto status = f.primary->serverStatus("repl");
    REQUIRE(status.ok());
    auto repl = nlohmann::json::parse(status.value())["repl"];
    REQUIRE(repl["members"].size() == 3);
    CHECK(repl["members"][1]["paused"] == true);
    CHECK(repl["members"][1]["state"] == "PAUSED");
    CHECK(repl["majorityCommitPoint"].get<uint64_t>() >= ts);
    auto rs = nlohmann::json::parse(f.set->statusJson());
    CHECK(rs["members"][0]["id"] == 0);
    CHECK(rs["members"][0]["state"] == "PRIMARY");

    // Gone: the primary is standalone again, its point its own.
    f.set.reset();
    status = f.primary->serverStatus("repl");
    REQUIRE(status.ok());
    CHECK(nlohmann::json::parse(status.value())["repl"].is_null());
    CHECK(!f.primary->majorityCommitPoint().attached());
    Status st = f.write("z", "1", WriteConcern::nodes(2));
    CHECK(st.code() == StatusCode::kInvalidArgument);
    mustOk(f.session->abort());
}

TEST_CASE("replset: four majority writers while members pause: point monotonic, acks on a majority" *
          doctest::test_suite("concurrency")) {
    SetFixture f(2);
    const uint32_t seed = mvkv::testing::testSeed();
    constexpr int kWriters = 4;
    constexpr int kWrites = 60;
    std::atomic<bool> done{false};
    std::atomic<int> backwards{0}, notOnMajority{0}, failures{0};
    std::string firstFailure;
    std::mutex failureMutex;
    auto fail = [&](const std::string& what) {
        std::lock_guard lock(failureMutex);
        if (failures.fetch_add(1) == 0)
            firstFailure = what;
    };

    std::thread watcher([&] {
        mvcc::Timestamp last = 0;
        while (!done.load()) {
            const mvcc::Timestamp now = f.primary->majorityCommitTs();
            if (now < last)
                backwards.fetch_add(1);
            last = now;
            f.primary->waitMajorityCommitAfter(now, std::chrono::steady_clock::now() + 5ms);
        }
    });
    // Pauses one secondary at a time: 2 of 3 stay a majority.
    std::thread pauser([&] {
        std::mt19937 rng(seed);
        while (!done.load()) {
            const int id = 1 + static_cast<int>(rng() % 2);
            if (Status s = f.set->pause(id); !s.ok())
                fail(s.toString());
            f.primary->waitMajorityCommitAfter(f.primary->majorityCommitTs(),
                                               std::chrono::steady_clock::now() + 2ms);
            if (Status s = f.set->resume(id); !s.ok())
                fail(s.toString());
        }
    });
    std::vector<std::thread> writers;
    for (int w = 0; w < kWriters; ++w) {
        writers.emplace_back([&, w] {
            auto s = f.primary->openSession();
            for (int i = 0; i < kWrites; ++i) {
                const std::string key = "w" + std::to_string(w) + "-" + std::to_string(i);
                if (Status b = s->begin(); !b.ok()) {
                    fail(b.toString());
                    continue;
                }
                if (Status p = s->put("app.c", key, std::to_string(i)); !p.ok()) {
                    fail(p.toString());
                    s->abort().ignore();
                    continue;
                }
                Status c = s->commit(WriteConcern::majorityOf(kLong));
                if (!c.ok()) {
                    fail(c.toString());
                    continue;
                }
                const mvcc::Timestamp ts = s->lastCommitTs();
                if (f.primary->majorityCommitTs() < ts || membersApplied(*f.set, ts) < 2)
                    notOnMajority.fetch_add(1);
            }
        });
    }
    for (auto& t : writers)
        t.join();
    done = true;
    pauser.join();
    watcher.join();
    INFO(firstFailure);
    CHECK(failures.load() == 0);
    CHECK(backwards.load() == 0);
    CHECK(notOnMajority.load() == 0);
    // Every member ends with every acknowledged write.
    const mvcc::Timestamp last = f.primary->oplog()->stats().lastTs;
    for (int id = 1; id <= 2; ++id) {
        if (f.set->status()[static_cast<size_t>(id)].paused)
            mustOk(f.set->resume(id));
        mustOk(f.set->waitApplied(id, last, kLong));
        auto sec = f.set->secondary(id)->openSession();
        mustOk(sec->begin(f.set->readOptions(id)));
        auto n = sec->count("app.c");
        REQUIRE(n.ok());
        CHECK(n.value() == static_cast<uint64_t>(kWriters * kWrites));
        mustOk(sec->commit());
    }
}
