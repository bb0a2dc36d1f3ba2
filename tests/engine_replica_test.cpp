// A replica (replication/replica.h): a second engine tails a durable primary's
// oplog and applies it in parallel batches. The stories: it ends up holding
// the primary's data, commands included; a reader at readOptions() sees
// exactly the primary as of that timestamp while both are busy; one worker
// and many agree; appliers stop, are destroyed and resume; a replica that
// fell behind capping says so.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "replication/replica.h"
#include "tests/engine_test_util.h"
#include "tests/temp_dir.h"

using namespace mvkv;
using namespace mvkv::engine;
using namespace mvkv::replication;
using namespace mvkv::engine::testing;
using mvkv::testing::TempDir;
using namespace std::chrono_literals;

namespace {

using KeyValues = std::map<std::string, std::string>;


EngineOptions inMemory() {
    EngineOptions o;
    o.historySweepInterval = 0ms;
    return o;
}

std::unique_ptr<ReplicaApplier> startReplica(Engine& primary, Engine& secondary, size_t workers = 4,
                                             mvcc::Timestamp startAfter = 0,
                                             size_t maxBatchEntries = 5000) {
    ReplicaOptions r;
    r.workers = workers;
    r.maxBatchEntries = maxBatchEntries;
    r.pollWait = 10ms;
    r.startAfter = startAfter;
    auto a = ReplicaApplier::start(primary, secondary, r);
    REQUIRE_MESSAGE(a.ok(), a.status().toString());
    return std::move(a).value();
}

// The newest timestamp in the primary's oplog.
mvcc::Timestamp lastOplogTs(Engine& primary) {
    return primary.oplog()->stats().lastTs;
}

// Every visible key=value of `ns` into *out; no doctest macros (any thread).
Status scanInto(Session& s, const std::string& ns, KeyValues* out) {
    auto c = s.openCursor(ns);
    if (!c.ok())
        return c.status();
    Cursor& cur = *c.value();
    for (Status st = cur.first();; st = cur.next()) {
        if (!st.ok())
            return st;
        if (!cur.valid())
            return Status::OK();
        (*out)[std::string(cur.key())] = std::string(cur.value());
    }
}

// Every collection of `e` and its contents (at `at.readTs`, if any), as text.
std::string dump(Engine& e, const TxnOptions& at = {}) {
    auto s = e.openSession();
    mustOk(s->begin(at));
    std::string out;
    for (const std::string& db : e.listDatabases()) {
        for (const std::string& coll : e.listCollections(db)) {
            KeyValues kv;
            mustOk(scanInto(*s, db + "." + coll, &kv));
            out += db + "." + coll + ":";
            for (const auto& [k, v] : kv)
                out += " " + k + "=" + v;
            out += "\n";
        }
    }
    mustOk(s->abort());
    return out;
}

// Failures seen by other threads, reported by the test's own thread.
struct Failures {
    void add(std::string what) {
        std::lock_guard lock(mutex);
        if (messages.size() < 10)
            messages.push_back(std::move(what));
        ++count;
    }
    void check() {
        std::lock_guard lock(mutex);
        for (const auto& m : messages)
            FAIL_CHECK(m);
        CHECK(count == 0);
    }
    std::mutex mutex;
    std::vector<std::string> messages;
    size_t count = 0;
};

}  // namespace

TEST_CASE("replica: refuses impossible starts") {
    TempDir dir("mvkv-replica-test");
    auto primary = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
    auto memory = openEngine(inMemory());
    ReplicaOptions none;
    none.workers = 0;
    CHECK(ReplicaApplier::start(*primary, *memory, none).status().code() ==
          StatusCode::kInvalidArgument);
    ReplicaOptions noSync;
    noSync.syncEveryBatches = 0;
    CHECK(ReplicaApplier::start(*primary, *memory, noSync).status().code() ==
          StatusCode::kInvalidArgument);
    EngineOptions noOplog = inMemory();
    noOplog.inMemoryOplogCapBytes = 0;
    auto bare = openEngine(noOplog);
    CHECK(ReplicaApplier::start(*bare, *memory).status().code() ==
          StatusCode::kIllegalOperation);  // an in-memory engine that keeps no oplog
}

TEST_CASE("replica: an in-memory primary replicates through its in-memory oplog") {
    auto primary = openEngine(inMemory());
    auto secondary = openEngine(inMemory());
    auto s = primary->openSession();
    mustOk(s->createCollection("app.users"));
    mustOk(s->put("app.users", "alice", "1"));  // before the applier starts
    auto applier = startReplica(*primary, *secondary);
    mustOk(s->begin());
    mustOk(s->put("app.users", "bob", "2"));
    mustOk(s->put("app.users", "carol", "3"));
    mustOk(s->commit());
    mustOk(s->remove("app.users", "alice"));
    mustOk(s->createCollection("app.orders"));
    mustOk(s->put("app.orders", "o1", "x"));
    const mvcc::Timestamp last = lastOplogTs(*primary);
    REQUIRE_OK(applier->waitApplied(last, 10s));
    const std::string want = dump(*primary);
    CHECK(want ==
          "app.orders: o1=x\n"
          "app.users: bob=2 carol=3\n");
    CHECK(dump(*secondary, applier->readOptions()) == want);
    CHECK(applier->stats().commandsApplied == 2);
}

TEST_CASE("replica: holds the primary's data and catalog once it has applied its last write") {
    TempDir dir("mvkv-replica-test");
    auto primary = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
    auto secondary = openEngine(inMemory());
    auto applier = startReplica(*primary, *secondary);
    auto s = primary->openSession();
    for (const char* ns : {"app.users", "app.orders", "tmp.gone", "scratch.a", "scratch.b"})
        mustOk(s->createCollection(ns));
    mustOk(s->put("app.users", "alice", "1"));
    mustOk(s->put("app.users", "bob", "2"));
    mustOk(s->put("app.users", "carol", "3"));
    mustOk(s->insert("app.users", "dave", "4"));
    mustOk(s->update("app.users", "alice", "11"));
    mustOk(s->remove("app.users", "bob"));
    mustOk(s->begin());  // a transaction over two collections, with a delete
    mustOk(s->put("app.orders", "o1", "x"));
    mustOk(s->put("app.orders", "o2", "y"));
    mustOk(s->put("app.users", "carol", "33"));
    mustOk(s->remove("app.users", "dave"));
    mustOk(s->commit());
    mustOk(s->put("tmp.gone", "k", "v"));
    mustOk(s->dropCollection("tmp.gone"));
    mustOk(s->put("scratch.a", "a", "1"));
    mustOk(s->put("scratch.b", "b", "2"));
    mustOk(s->dropDatabase("scratch"));
    mustOk(s->createCollection("app.again"));  // dropped and created again
    mustOk(s->put("app.again", "k", "old"));
    mustOk(s->dropCollection("app.again"));
    mustOk(s->createCollection("app.again"));
    mustOk(s->put("app.again", "k", "new"));
    mustOk(s->begin());
    mustOk(s->put("app.orders", "o3", "z"));
    mustOk(s->remove("app.orders", "o1"));
    mustOk(s->commit());
    const mvcc::Timestamp last = lastOplogTs(*primary);
    REQUIRE_OK(applier->waitApplied(last, 10s));
    CHECK(applier->lastAppliedTs() >= last);
    CHECK(secondary->timestamps().stable == applier->lastAppliedTs() - 1);

    const std::string want = dump(*primary);
    CHECK(want ==
          "app.again: k=new\n"
          "app.orders: o2=y o3=z\n"
          "app.users: alice=11 carol=33\n");
    CHECK(dump(*secondary) == want);
    CHECK(dump(*secondary, applier->readOptions()) == want);
    CHECK(secondary->listDatabases() == std::vector<std::string>{"app"});

    ReplicaStats st = applier->stats();
    const uint64_t oplogEntries = primary->oplog()->stats().entries;
    CHECK(st.commandsApplied == 10);
    CHECK(st.entriesApplied + st.commandsApplied == oplogEntries);
    CHECK(st.batches > 0);
    CHECK(st.meanBatch > 0);
    CHECK(st.lastAppliedTs == applier->lastAppliedTs());
    CHECK(st.running);
    CHECK_OK(applier->status());
    // Nothing newer comes: a wait for it times out.
    CHECK(applier->waitApplied(last + 1000, 20ms).code() == StatusCode::kBusy);
}

TEST_CASE("replica: a reader at readOptions() sees the primary at that timestamp, no half pair") {
    TempDir dir("mvkv-replica-test");
    auto primary = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
    auto secondary = openEngine(inMemory());
    auto setup = primary->openSession();
    for (const char* ns : {"app.a", "app.b", "app.hot"})
        mustOk(setup->createCollection(ns));
    // Small batches: many publications for the reader to land between.
    auto applier = startReplica(*primary, *secondary, 4, 0, 500);
    REQUIRE_OK(applier->waitApplied(lastOplogTs(*primary), 10s));

    constexpr int kWriters = 3;
    constexpr int kTxnsPerWriter = 1500;
    Failures failures;
    std::atomic<int> writersLeft{kWriters};
    std::vector<std::thread> writers;
    for (int w = 0; w < kWriters; ++w) {
        writers.emplace_back([&, w] {
            auto ws = primary->openSession();
            auto pair = [w](char side, int i) { return side + std::to_string(w * 100000 + i); };
            for (int i = 0; i < kTxnsPerWriter; ++i) {
                const std::string value = "w" + std::to_string(w) + "i" + std::to_string(i);
                Status st = ws->withTransaction([&](Session& t) -> Status {
                    for (char side : {'a', 'b'})
                        if (Status p = t.put(std::string("app.") + side, pair(side, i), value);
                            !p.ok())
                            return p;
                    for (char side : {'a', 'b'}) {
                        Status p;
                        if (i % 10 == 0 && i >= 5)  // overwrite an older pair
                            p = t.put(std::string("app.") + side, pair(side, i - 5), value);
                        else if (i % 15 == 0 && i >= 7)  // delete one
                            p = t.remove(std::string("app.") + side, pair(side, i - 7));
                        if (!p.ok())
                            return p;
                    }
                    // The hot set: every writer overwrites the same few keys.
                    return t.put("app.hot", "h" + std::to_string(i % 4), value);
                });
                if (!st.ok())
                    failures.add("writer: " + st.toString());
            }
            writersLeft--;
        });
    }

    // Reads the replica at readOptions(), while the writers run and until
    // the replica has caught up; every fourth time also the primary at the
    // same timestamp.
    std::atomic<mvcc::Timestamp> caughtUp{mvcc::kMaxTimestamp};  // set once writers end
    std::atomic<int> checks{0};
    std::atomic<int> primaryChecks{0};
    std::thread reader([&] {
        auto rs = secondary->openSession();
        auto ps = primary->openSession();
        auto scanAt = [&](Session& s, const TxnOptions& at, KeyValues* a, KeyValues* b,
                          KeyValues* hot) -> Status {
            if (Status st = s.begin(at); !st.ok())
                return st;
            Status st = scanInto(s, "app.a", a);
            if (st.ok())
                st = scanInto(s, "app.b", b);
            if (st.ok())
                st = scanInto(s, "app.hot", hot);
            s.abort().ignore();
            return st;
        };
        while (writersLeft > 0 || applier->lastAppliedTs() < caughtUp || checks < 5) {
            const TxnOptions at = applier->readOptions();
            KeyValues a, b, hot;
            if (Status st = scanAt(*rs, at, &a, &b, &hot); !st.ok()) {
                failures.add("replica read: " + st.toString());
                return;
            }
            for (const auto& [k, v] : a) {
                auto it = b.find("b" + k.substr(1));
                if (it == b.end() || it->second != v)
                    failures.add("half a pair at " + std::to_string(at.readTs) + ": " + k);
            }
            for (const auto& [k, v] : b)
                if (!a.count("a" + k.substr(1)))
                    failures.add("half a pair at " + std::to_string(at.readTs) + ": " + k);
            if (checks++ % 4 == 0) {
                KeyValues pa, pb, phot;
                if (Status st = scanAt(*ps, at, &pa, &pb, &phot); !st.ok()) {
                    failures.add("primary read: " + st.toString());
                    return;
                }
                if (pa != a || pb != b || phot != hot)
                    failures.add("replica and primary differ at " + std::to_string(at.readTs));
                primaryChecks++;
            }
        }
    });
    for (auto& t : writers)
        t.join();
    const mvcc::Timestamp last = lastOplogTs(*primary);
    caughtUp = last;
    Status applied = applier->waitApplied(last, 20s);
    if (!applied.ok())
        caughtUp = mvcc::kNoTimestamp;  // let the reader end; fail below
    reader.join();
    REQUIRE_OK(applied);
    failures.check();
    CHECK(primaryChecks > 0);
    CHECK(dump(*secondary) == dump(*primary));
    CHECK_OK(applier->status());
}

TEST_CASE("replica: one worker and four apply the same, in any batch size") {
    TempDir dir("mvkv-replica-test");
    auto primary = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
    auto one = openEngine(inMemory());
    auto four = openEngine(inMemory());
    // Batches of one record: the peek must keep the two records that share
    // a timestamp (below) in one batch.
    auto serial = startReplica(*primary, *one, 1, 0, 1);
    auto parallel = startReplica(*primary, *four, 4, 0, 3);
    auto s = primary->openSession();
    mustOk(s->createCollection("db.x"));
    mustOk(s->createCollection("db.y"));
    for (int i = 0; i < 400; ++i) {
        auto key = [](int n) { return "k" + std::to_string(n % 97); };
        mustOk(s->begin());
        mustOk(s->put("db.x", key(i * 7), "x" + std::to_string(i)));
        mustOk(s->put("db.y", key(i * 11), "y" + std::to_string(i)));
        if (i % 3 == 0)
            s->remove("db.x", key(i * 5)).ignore();  // NotFound is fine
        mustOk(s->commit());
        if (i == 200) {
            mustOk(s->createCollection("db.z"));
            mustOk(s->put("db.z", "k", "z"));
            mustOk(s->dropCollection("db.x"));
            mustOk(s->createCollection("db.x"));
        }
    }
    // Two transactions committed at one timestamp: two records. (A durable
    // engine takes the second only if it held the timestamp before the
    // first committed.)
    const mvcc::Timestamp shared = primary->timestamps().clock + 10;
    auto s2 = primary->openSession();
    mustOk(s->begin());
    mustOk(s->put("db.x", "same-ts-1", "1"));
    mustOk(s->timestampTransaction(shared));
    mustOk(s2->begin());
    mustOk(s2->put("db.y", "same-ts-2", "2"));
    mustOk(s2->timestampTransaction(shared));
    mustOk(s->commit());
    mustOk(s2->commit());
    mustOk(s->put("db.x", "after", "3"));

    const mvcc::Timestamp last = lastOplogTs(*primary);
    REQUIRE_OK(serial->waitApplied(last, 20s));
    REQUIRE_OK(parallel->waitApplied(last, 20s));
    const std::string want = dump(*primary);
    CHECK(dump(*one) == want);
    CHECK(dump(*four) == want);
    CHECK(dump(*one, serial->readOptions()) == want);
    CHECK(serial->stats().entriesApplied == parallel->stats().entriesApplied);
    CHECK(serial->stats().batches > 400);  // a batch per timestamp at most
}

TEST_CASE("replica: stopped and destroyed appliers join while the primary writes; then resume") {
    TempDir dir("mvkv-replica-test");
    auto primary = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
    auto secondary = openEngine(inMemory());
    auto setup = primary->openSession();
    mustOk(setup->createCollection("db.c"));
    std::atomic<bool> stopWriting{false};
    Failures failures;
    std::thread writer([&] {
        auto ws = primary->openSession();
        for (int i = 0; i < 20000 && !stopWriting; ++i) {
            Status st;
            if (i % 5 == 0) {
                st = ws->withTransaction([&](Session& t) -> Status {
                    Status p = t.put("db.c", "pa" + std::to_string(i % 50), std::to_string(i));
                    return p.ok() ? t.put("db.c", "pb" + std::to_string(i % 50), std::to_string(i))
                                  : p;
                });
            } else {
                st = ws->put("db.c", "k" + std::to_string(i % 300), std::to_string(i));
            }
            if (!st.ok())
                failures.add("writer: " + st.toString());
        }
    });

    auto first = startReplica(*primary, *secondary);
    REQUIRE_OK(first->waitApplied(lastOplogTs(*primary), 10s));
    first->stop();
    first->stop();  // idempotent
    const mvcc::Timestamp stoppedAt = first->lastAppliedTs();
    CHECK_OK(first->status());
    CHECK(!first->stats().running);
    CHECK(first->waitApplied(stoppedAt + 1000000, 1s).code() == StatusCode::kIllegalOperation);
    first.reset();

    // Destroyed without stop(): the destructor joins; the secondary's
    // stable timestamp is one below where it got to.
    auto second = startReplica(*primary, *secondary, 4, stoppedAt);
    REQUIRE_OK(second->waitApplied(lastOplogTs(*primary), 10s));
    second.reset();
    const mvcc::Timestamp destroyedAt = secondary->timestamps().stable + 1;
    CHECK(destroyedAt >= stoppedAt);

    auto third = startReplica(*primary, *secondary, 4, destroyedAt);
    stopWriting = true;
    writer.join();
    failures.check();
    REQUIRE_OK(third->waitApplied(lastOplogTs(*primary), 20s));
    CHECK(dump(*secondary) == dump(*primary));
    CHECK_OK(third->status());
}

TEST_CASE("replica: a drop waits for the secondary's readers, and stop() does not wait for them") {
    TempDir dir("mvkv-replica-test");
    auto primary = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
    auto secondary = openEngine(inMemory());
    auto s = primary->openSession();
    mustOk(s->createCollection("db.c"));
    mustOk(s->put("db.c", "k", "v"));
    auto applier = startReplica(*primary, *secondary);
    REQUIRE_OK(applier->waitApplied(lastOplogTs(*primary), 10s));
    // A reader's transaction holds its collection's intent lock to the end.
    auto reader = secondary->openSession();
    mustOk(reader->begin(applier->readOptions()));
    CHECK(getOr(*reader, "db.c", "k") == "v");
    mustOk(s->dropCollection("db.c"));
    const mvcc::Timestamp dropTs = lastOplogTs(*primary);
    CHECK(applier->waitApplied(dropTs, 50ms).code() == StatusCode::kBusy);
    applier->stop();
    CHECK_OK(applier->status());
    const mvcc::Timestamp stoppedAt = applier->lastAppliedTs();
    CHECK(stoppedAt < dropTs);
    mustOk(reader->abort());
    auto again = startReplica(*primary, *secondary, 4, stoppedAt);
    REQUIRE_OK(again->waitApplied(dropTs, 10s));
    CHECK(secondary->listCollections("db").empty());
}

TEST_CASE("replica: one that starts behind the capped oplog gets CappedPositionLost") {
    TempDir dir("mvkv-replica-test");
    EngineOptions o = onDisk(dir.path, oplog::SyncMode::kNone);
    o.oplogSegmentBytes = 4096;
    o.oplogCapBytes = 16 * 1024;
    o.checkpointsKept = 1;
    auto primary = openEngine(o);
    auto s = primary->openSession();
    mustOk(s->createCollection("db.c"));  // ts 1
    const std::string value(200, 'x');
    for (int i = 0; i < 400; ++i)
        mustOk(s->put("db.c", "k" + std::to_string(i % 50), value));
    mustOk(primary->checkpoint());
    const oplog::OplogStats ops = primary->oplog()->stats();
    REQUIRE(ops.firstTs > 2);  // timestamp 2 is gone

    auto lost = openEngine(inMemory());
    auto applier = startReplica(*primary, *lost, 4, 1);
    Status st = applier->waitApplied(ops.lastTs, 10s);
    CHECK(st.code() == StatusCode::kCappedPositionLost);
    CHECK(applier->status().code() == StatusCode::kCappedPositionLost);
    CHECK(!applier->stats().running);
    CHECK(applier->lastAppliedTs() == 1);

    // From the oldest entry there is, onto a secondary that has the
    // collection already (as an initial sync would leave it): fine.
    auto fresh = openEngine(inMemory());
    mustOk(fresh->openSession()->createCollection("db.c"));
    auto fromOldest = startReplica(*primary, *fresh);
    REQUIRE_OK(fromOldest->waitApplied(ops.lastTs, 10s));
    CHECK(fromOldest->stats().entriesApplied == ops.entries);
}

TEST_CASE(
    "replica: a prepared transaction's writes reach it only as its commit, at the commit "
    "timestamp") {
    TempDir dir("mvkv-replica-test");
    auto primary = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
    auto secondary = openEngine(inMemory());
    auto applier = startReplica(*primary, *secondary);
    auto s = primary->openSession();
    mustOk(s->createCollection("app.t"));
    mustOk(s->begin());
    mustOk(s->put("app.t", "k", "v0"));
    mustOk(s->put("app.t", "gone", "x"));
    mustOk(s->commit(10));
    auto p = primary->openSession();
    mustOk(p->begin());
    mustOk(p->put("app.t", "k", "v1"));
    mustOk(p->remove("app.t", "gone"));
    mustOk(p->prepare(20));
    mustOk(s->put("app.t", "other", "y"));  // committed after the prepare timestamp
    REQUIRE_OK(applier->waitApplied(10, 10s));
    // The prepare holds the oplog's visible point below 20: the replica
    // stops there, and never sees the prepared writes.
    CHECK(applier->waitApplied(20, 20ms).code() == StatusCode::kBusy);
    CHECK(applier->lastAppliedTs() < 20);
    CHECK(dump(*secondary) == "app.t: gone=x k=v0\n");
    mustOk(p->commit(25, 25));
    const mvcc::Timestamp last = lastOplogTs(*primary);
    REQUIRE_OK(applier->waitApplied(last, 10s));
    CHECK(dump(*secondary) == dump(*primary));
    CHECK(dump(*secondary) == "app.t: k=v1 other=y\n");
    // "other" committed at 21, between the prepare and the commit.
    CHECK(dump(*secondary, TxnOptions{24, false}) == "app.t: gone=x k=v0 other=y\n");
    CHECK(dump(*secondary, TxnOptions{25, false}) == "app.t: k=v1 other=y\n");
    ReplicaStats st = applier->stats();
    CHECK(st.commandsApplied == 1);  // the create: no prepare record is applied
    CHECK_OK(applier->status());
    // An aborted prepared transaction never reaches it.
    mustOk(p->begin());
    mustOk(p->put("app.t", "k", "never"));
    const mvcc::Timestamp after = primary->timestamps().allDurable;
    mustOk(p->prepare(after + 10));
    mustOk(p->abort());
    mustOk(s->put("app.t", "z", "1"));
    REQUIRE_OK(applier->waitApplied(lastOplogTs(*primary), 10s));
    CHECK(dump(*secondary) == dump(*primary));
    CHECK(dump(*secondary).find("never") == std::string::npos);
}

TEST_CASE(
    "replica: start makes a live engine a secondary only once its open transactions ended; one "
    "that wrote before cannot commit after") {
    auto primary = openEngine(inMemory());
    auto secondary = openEngine(inMemory());
    auto w = secondary->openSession();
    mustOk(w->createCollection("app.t"));
    mustOk(w->begin());
    mustOk(w->put("app.t", "k", "client"));
    ReplicaOptions r;
    r.pollWait = 10ms;
    r.becomeSecondaryWait = 0ms;
    auto refused = ReplicaApplier::start(*primary, *secondary, r);
    REQUIRE(refused.status().code() == StatusCode::kLockTimeout);
    CHECK(refused.status().message().find("cannot become a secondary") != std::string::npos);
    CHECK_FALSE(secondary->secondary());  // still a primary: its transaction may commit
    mustOk(w->commit());
    // Nothing holds a lock now: it becomes a secondary, and writes are refused.
    auto applier = ReplicaApplier::start(*primary, *secondary, r);
    REQUIRE_OK(applier.status());
    CHECK(secondary->secondary());
    mustOk(w->begin());
    CHECK(w->put("app.t", "k2", "late").code() == StatusCode::kNotWritablePrimary);
    if (w->inTransaction())
        mustOk(w->abort());
    // Starting again on a secondary does not wait for anything.
    applier.value().reset();
    auto reader = secondary->openSession();
    mustOk(reader->begin());
    CHECK(getOr(*reader, "app.t", "k") == "client");  // it holds the collection's lock
    auto again = ReplicaApplier::start(*primary, *secondary, r);
    CHECK_OK(again.status());
    mustOk(reader->abort());
}

TEST_CASE(
    "replica: becomeSecondary waits for an open transaction without stopping other operations") {
    auto e = openEngine(inMemory());
    auto w = e->openSession();
    mustOk(w->createCollection("app.t"));
    mustOk(w->begin());
    mustOk(w->put("app.t", "k", "v"));
    std::atomic<bool> done{false};
    Status result;
    std::thread stepDown([&] {
        result = e->becomeSecondary(60s);
        done.store(true);
    });
    // Reads and writes elsewhere go on while it waits: a Global X request
    // queued for the whole wait would hold them until it timed out.
    auto r = e->openSession();
    for (int i = 0; i < 50; ++i) {
        CHECK(r->get("app.t", "k").status().code() == StatusCode::kNotFound);
        mustOk(r->put("app.t", "other" + std::to_string(i), "x"));
    }
    CHECK_FALSE(done.load());  // w's transaction still holds its locks
    CHECK_FALSE(e->secondary());
    mustOk(w->commit());
    stepDown.join();
    CHECK_OK(result);
    CHECK(e->secondary());
    CHECK(r->put("app.t", "late", "x").code() == StatusCode::kNotWritablePrimary);
}
