// Transactions through the Session API: snapshots, timestamps (WiredTiger's
// scenarios and rules), write conflicts and the retry of implicit writes.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "tests/engine_test_util.h"

using namespace mvkv;
using namespace mvkv::engine;
using namespace mvkv::engine::testing;
using std::chrono::milliseconds;

namespace {

EngineOptions withoutOplog() {
    EngineOptions o;
    o.inMemoryOplogCapBytes = 0;  // WiredTiger's timestamp rules (docs/oplog.md)
    return o;
}

struct Fixture {
    std::unique_ptr<Engine> engine = openEngine(withoutOplog());
    std::unique_ptr<Session> s1 = engine->openSession();
    std::unique_ptr<Session> s2 = engine->openSession();
    Fixture() { REQUIRE(s1->createCollection("t.c").ok()); }
    ~Fixture() {
        s1.reset();
        s2.reset();
    }
};

std::string key(int i) {
    return fmt::format("k{:03}", i);
}

}  // namespace

TEST_CASE_FIXTURE(Fixture, "uncommitted writes are invisible to others, visible to the writer") {
    REQUIRE_OK(s1->begin());
    REQUIRE_OK(s1->put("t.c", "k", "mine"));
    CHECK(getOr(*s1, "t.c", "k") == "mine");
    CHECK(getOr(*s2, "t.c", "k") == "<NotFound>");
    CHECK(scanAll(*s2, "t.c") == "");
    REQUIRE_OK(s1->commit());
    CHECK(getOr(*s2, "t.c", "k") == "mine");
}

TEST_CASE_FIXTURE(Fixture, "a snapshot ignores commits made after it began") {
    REQUIRE_OK(s1->put("t.c", "k", "old"));
    REQUIRE_OK(s1->begin());
    CHECK(getOr(*s1, "t.c", "k") == "old");
    REQUIRE_OK(s2->put("t.c", "k", "new"));
    REQUIRE_OK(s2->put("t.c", "k2", "new"));
    CHECK(getOr(*s1, "t.c", "k") == "old");
    CHECK(getOr(*s1, "t.c", "k2") == "<NotFound>");
    REQUIRE_OK(s1->commit());
    CHECK(getOr(*s1, "t.c", "k") == "new");
}

TEST_CASE_FIXTURE(Fixture, "abort discards every write of the transaction") {
    REQUIRE_OK(s1->put("t.c", "a", "1"));
    REQUIRE_OK(s1->begin());
    REQUIRE_OK(s1->put("t.c", "a", "2"));
    REQUIRE_OK(s1->put("t.c", "b", "2"));
    REQUIRE_OK(s1->remove("t.c", "a"));
    REQUIRE_OK(s1->abort());
    CHECK(scanAll(*s2, "t.c") == "a=1");
    CHECK(scanAll(*s1, "t.c") == "a=1");
}

TEST_CASE("an in-memory engine with an oplog commits in timestamp order; without one, freely") {
    // With an oplog, a reader that passed ts 10 would never see a later commit
    // at 10 or below (the oplog's index is in timestamp order).
    auto ordered = openEngine();
    auto s = ordered->openSession();
    REQUIRE_OK(s->createCollection("t.c"));
    const mvcc::Timestamp base = ordered->timestamps().allDurable;
    REQUIRE_OK(s->begin());
    REQUIRE_OK(s->put("t.c", "a", "1"));
    REQUIRE_OK(s->commit(base + 10));
    for (mvcc::Timestamp ts : {base + 10, base + 5}) {
        REQUIRE_OK(s->begin());
        REQUIRE_OK(s->put("t.c", "b", "1"));
        Status refused = s->commit(ts);
        CHECK(refused.code() == StatusCode::kInvalidArgument);
        CHECK(refused.message().find("inMemoryOplogCapBytes") != std::string::npos);
        CHECK(refused.message().find("rolled back") != std::string::npos);
    }
    // Two transactions that both held a timestamp before either committed share it.
    auto s2 = ordered->openSession();
    REQUIRE_OK(s->begin());
    REQUIRE_OK(s2->begin());
    REQUIRE_OK(s->put("t.c", "c", "1"));
    REQUIRE_OK(s2->put("t.c", "d", "1"));
    REQUIRE_OK(s->timestampTransaction(base + 20));
    REQUIRE_OK(s2->timestampTransaction(base + 20));
    REQUIRE_OK(s->commit());
    REQUIRE_OK(s2->commit());
    s.reset();
    s2.reset();

    auto free = openEngine(withoutOplog());
    auto f = free->openSession();
    REQUIRE_OK(f->createCollection("t.c"));
    for (mvcc::Timestamp ts : {10, 10, 5}) {
        REQUIRE_OK(f->begin());
        REQUIRE_OK(f->put("t.c", fmt::format("k{}", ts), "1"));
        REQUIRE_OK(f->commit(ts));
    }
}

TEST_CASE_FIXTURE(Fixture, "keys 1..100 committed at ts=key: a read at t sees exactly keys <= t") {
    for (int i = 1; i <= 100; ++i) {
        REQUIRE_OK(s1->begin());
        REQUIRE_OK(s1->put("t.c", key(i), fmt::format("v{}", i)));
        REQUIRE_OK(s1->commit(static_cast<mvcc::Timestamp>(i)));
    }
    for (int t : {1, 2, 37, 50, 99, 100, 101, 1000}) {
        REQUIRE_OK(s2->begin({.readTs = static_cast<mvcc::Timestamp>(t)}));
        int seen = 0;
        auto c = s2->openCursor("t.c");
        REQUIRE(c.ok());
        for (mustOk(c.value()->first()); c.value()->valid(); mustOk(c.value()->next()))
            ++seen;
        c.value().reset();
        CHECK_MESSAGE(seen == std::min(t, 100), "t=", t);
        CHECK(getOr(*s2, "t.c", key(std::min(t, 100))) == fmt::format("v{}", std::min(t, 100)));
        if (t < 100)
            CHECK(getOr(*s2, "t.c", key(t + 1)) == "<NotFound>");
        REQUIRE_OK(s2->commit());
    }
    // Later updates and deletes, each at its timestamp.
    REQUIRE_OK(s1->begin());
    REQUIRE_OK(s1->put("t.c", key(10), "updated"));
    REQUIRE_OK(s1->commit(200));
    REQUIRE_OK(s1->begin());
    REQUIRE_OK(s1->remove("t.c", key(10)));
    REQUIRE_OK(s1->commit(300));
    auto readAt = [&](mvcc::Timestamp t) {
        REQUIRE_OK(s2->begin({.readTs = t}));
        std::string v = getOr(*s2, "t.c", key(10));
        REQUIRE_OK(s2->commit());
        return v;
    };
    CHECK(readAt(9) == "<NotFound>");
    CHECK(readAt(10) == "v10");
    CHECK(readAt(199) == "v10");
    CHECK(readAt(200) == "updated");
    CHECK(readAt(299) == "updated");
    CHECK(readAt(300) == "<NotFound>");
    CHECK(getOr(*s2, "t.c", key(10)) == "<NotFound>");  // no read ts: newest
}

TEST_CASE_FIXTURE(Fixture, "all_durable is held back by an unfinished smaller commit timestamp") {
    REQUIRE_OK(s1->begin());
    REQUIRE_OK(s1->put("t.c", "a", "1"));
    REQUIRE_OK(s1->commit(10));
    CHECK(engine->timestamps().allDurable == 10);
    REQUIRE_OK(s1->begin());
    REQUIRE_OK(s1->timestampTransaction(20));
    REQUIRE_OK(s1->put("t.c", "b", "1"));
    REQUIRE_OK(s2->begin());
    REQUIRE_OK(s2->put("t.c", "c", "1"));
    REQUIRE_OK(s2->commit(30));
    CHECK(engine->timestamps().allDurable == 19);
    REQUIRE_OK(s1->commit());
    CHECK(engine->timestamps().allDurable == 30);
    // An abort releases it as well.
    REQUIRE_OK(s1->begin());
    REQUIRE_OK(s1->timestampTransaction(40));
    CHECK(engine->timestamps().allDurable == 30);
    REQUIRE_OK(s1->put("t.c", "d", "1"));
    REQUIRE_OK(s2->begin());
    REQUIRE_OK(s2->put("t.c", "e", "1"));
    REQUIRE_OK(s2->commit(50));
    CHECK(engine->timestamps().allDurable == 39);
    REQUIRE_OK(s1->abort());
    CHECK(engine->timestamps().allDurable == 50);
}

TEST_CASE_FIXTURE(Fixture, "oldest_reader and pinned follow the running readers") {
    REQUIRE_OK(engine->setStableTimestamp(100));
    REQUIRE_OK(engine->setOldestTimestamp(10));
    CHECK(engine->timestamps().oldestReader == 0);
    CHECK(engine->timestamps().pinned == 10);
    REQUIRE_OK(s1->begin({.readTs = 20}));
    REQUIRE_OK(s2->begin({.readTs = 15}));
    CHECK(engine->timestamps().oldestReader == 15);
    CHECK(engine->timestamps().pinned == 10);
    REQUIRE_OK(engine->setOldestTimestamp(18));
    CHECK(engine->timestamps().pinned == 15);
    REQUIRE_OK(s2->commit());
    CHECK(engine->timestamps().oldestReader == 20);
    CHECK(engine->timestamps().pinned == 18);
    CHECK(engine->stats().transactions.oldestReadTs == 20);
    REQUIRE_OK(s1->abort());
    CHECK(engine->timestamps().oldestReader == 0);
}

TEST_CASE_FIXTURE(Fixture, "every timestamp rule is refused with both numbers in the message") {
    REQUIRE_OK(engine->setStableTimestamp(50));
    REQUIRE_OK(engine->setOldestTimestamp(40));
    auto expectRefused = [](const Status& st, const std::string& a, const std::string& b) {
        CHECK(st.code() == StatusCode::kInvalidArgument);
        CHECK_MESSAGE(st.message().find(a) != std::string::npos, st.message());
        CHECK_MESSAGE(st.message().find(b) != std::string::npos, st.message());
    };
    // commit ts <= stable: rolled back.
    REQUIRE_OK(s1->begin());
    REQUIRE_OK(s1->put("t.c", "k", "v"));
    Status st = s1->commit(50);
    expectRefused(st, "50", "stable");
    CHECK(st.message().find("rolled back") != std::string::npos);
    CHECK_FALSE(s1->inTransaction());
    CHECK(getOr(*s2, "t.c", "k") == "<NotFound>");
    // timestamp_transaction below stable.
    REQUIRE_OK(s1->begin());
    expectRefused(s1->timestampTransaction(45), "45", "50");
    REQUIRE_OK(s1->abort());
    // The key's newest committed timestamp.
    REQUIRE_OK(s1->begin());
    REQUIRE_OK(s1->put("t.c", "k", "at 100"));
    REQUIRE_OK(s1->commit(100));
    REQUIRE_OK(s1->begin());
    REQUIRE_OK(s1->put("t.c", "k", "at 60"));
    st = s1->commit(60);
    expectRefused(st, "60", "100");
    CHECK(st.message().find("rolled back") != std::string::npos);
    CHECK(getOr(*s2, "t.c", "k") == "at 100");
    // Read ts below oldest: refused, or rounded up.
    st = s1->begin({.readTs = 30});
    expectRefused(st, "30", "40");
    CHECK_FALSE(s1->inTransaction());
    REQUIRE_OK(s1->begin({.readTs = 30, .roundUpReadTs = true}));
    CHECK(s1->info().readTs == 40);
    REQUIRE_OK(s1->commit());
    // Commit ts older than the read ts.
    REQUIRE_OK(s1->begin({.readTs = 90}));
    REQUIRE_OK(s1->put("t.c", "other", "v"));
    expectRefused(s1->commit(80), "80", "90");
    // oldest and stable only move forward; oldest <= stable.
    expectRefused(engine->setOldestTimestamp(30), "30", "40");
    expectRefused(engine->setStableTimestamp(45), "45", "50");
    expectRefused(engine->setOldestTimestamp(60), "60", "50");
    CHECK_OK(engine->setOldestTimestamp(40));  // unchanged is fine
    CHECK_OK(engine->setStableTimestamp(50));
    auto ts = engine->timestamps();
    CHECK(ts.oldest == 40);
    CHECK(ts.stable == 50);
}

TEST_CASE_FIXTURE(Fixture, "the clock assigns commit timestamps newer than every one it has seen") {
    REQUIRE_OK(s1->put("t.c", "a", "1"));
    mvcc::Timestamp first = engine->timestamps().clock;
    CHECK(first >= 1);
    REQUIRE_OK(s1->begin());
    REQUIRE_OK(s1->put("t.c", "b", "1"));
    REQUIRE_OK(s1->commit(500));
    REQUIRE_OK(engine->setStableTimestamp(700));
    REQUIRE_OK(s1->put("t.c", "a", "2"));  // implicit: the clock's next
    CHECK(engine->timestamps().clock == 701);
    REQUIRE_OK(s2->begin({.readTs = 700}));
    CHECK(getOr(*s2, "t.c", "a") == "1");  // committed at 701
    REQUIRE_OK(s2->commit());
}

TEST_CASE_FIXTURE(Fixture,
                  "the second writer of a key conflicts at once and its transaction ends") {
    REQUIRE_OK(s1->put("t.c", "k", "base"));
    REQUIRE_OK(s1->begin());
    REQUIRE_OK(s1->put("t.c", "k", "one"));
    REQUIRE_OK(s2->begin());
    REQUIRE_OK(s2->put("t.c", "other", "x"));
    Status st = s2->put("t.c", "k", "two");
    CHECK(st.code() == StatusCode::kWriteConflict);
    CHECK(st.message().find("t.c") != std::string::npos);
    CHECK(st.message().find("aborted") != std::string::npos);
    CHECK_FALSE(s2->inTransaction());
    CHECK(s2->lastOpWriteConflicts() == 1);
    REQUIRE_OK(s1->commit());
    CHECK(getOr(*s2, "t.c", "k") == "one");
    CHECK(getOr(*s2, "t.c", "other") == "<NotFound>");  // s2's earlier write was rolled back
    CHECK(engine->stats().transactions.writeConflicts == 1);
}

TEST_CASE_FIXTURE(Fixture, "a writer whose snapshot predates a committed update conflicts") {
    REQUIRE_OK(s1->put("t.c", "k", "base"));
    REQUIRE_OK(s1->begin());
    CHECK(getOr(*s1, "t.c", "k") == "base");
    REQUIRE_OK(s2->put("t.c", "k", "newer"));
    CHECK(s1->put("t.c", "k", "mine").code() == StatusCode::kWriteConflict);
    // Deletes and strict updates conflict the same way.
    REQUIRE_OK(s1->begin());
    REQUIRE_OK(s2->put("t.c", "k", "newest"));
    CHECK(s1->remove("t.c", "k").code() == StatusCode::kWriteConflict);
    // A read timestamp older than the committed update conflicts too.
    REQUIRE_OK(s1->begin());
    REQUIRE_OK(s1->put("t.c", "j", "1"));
    REQUIRE_OK(s1->commit(1000));
    REQUIRE_OK(s1->begin({.readTs = 999}));
    CHECK(s1->put("t.c", "j", "2").code() == StatusCode::kWriteConflict);
}

TEST_CASE_FIXTURE(Fixture, "after the first writer aborts the second may write") {
    REQUIRE_OK(s1->begin());
    REQUIRE_OK(s1->put("t.c", "k", "one"));
    REQUIRE_OK(s2->begin());
    CHECK(s2->insert("t.c", "k", "two").code() == StatusCode::kWriteConflict);
    REQUIRE_OK(s1->abort());
    REQUIRE_OK(s2->begin());
    CHECK_OK(s2->insert("t.c", "k", "two"));
    REQUIRE_OK(s2->commit());
    CHECK(getOr(*s1, "t.c", "k") == "two");
}

TEST_CASE_FIXTURE(Fixture,
                  "an implicit write retries until its deadline, then names the attempts") {
    REQUIRE_OK(s1->begin());
    REQUIRE_OK(s1->put("t.c", "k", "held"));
    s2->setRetryTimeout(milliseconds(30));
    Status st = s2->put("t.c", "k", "blocked");
    CHECK(st.code() == StatusCode::kWriteConflict);
    CHECK(st.message().find("attempts") != std::string::npos);
    CHECK(s2->lastOpWriteConflicts() >= 2);
    auto stats = engine->stats().transactions;
    CHECK(stats.writeConflicts == s2->lastOpWriteConflicts());
    CHECK(stats.retries == s2->lastOpWriteConflicts() - 1);
    REQUIRE_OK(s1->commit());
    CHECK_OK(s2->put("t.c", "k", "now"));
    CHECK(s2->lastOpWriteConflicts() == 0);
    CHECK(getOr(*s1, "t.c", "k") == "now");
}

TEST_CASE_FIXTURE(Fixture, "snapshot isolation allows write skew") {
    // Two on-call doctors; each transaction checks that the other is on call
    // and goes off call. Both commit: the invariant "one on call" breaks.
    REQUIRE_OK(s1->put("t.c", "alice", "on"));
    REQUIRE_OK(s1->put("t.c", "bob", "on"));
    REQUIRE_OK(s1->begin());
    REQUIRE_OK(s2->begin());
    CHECK(getOr(*s1, "t.c", "bob") == "on");
    CHECK(getOr(*s2, "t.c", "alice") == "on");
    REQUIRE_OK(s1->put("t.c", "alice", "off"));
    REQUIRE_OK(s2->put("t.c", "bob", "off"));
    CHECK_OK(s1->commit());
    CHECK_OK(s2->commit());
    CHECK(scanAll(*s1, "t.c") == "alice=off,bob=off");
}

TEST_CASE_FIXTURE(Fixture, "withTransaction commits, and returns the body's error after aborting") {
    CHECK_OK(s1->withTransaction([](Session& s) {
        Status a = s.put("t.c", "a", "1");
        if (!a.ok())
            return a;
        return s.put("t.c", "b", "1");
    }));
    CHECK(scanAll(*s2, "t.c") == "a=1,b=1");
    Status st = s1->withTransaction([](Session& s) {
        Status a = s.put("t.c", "c", "1");
        if (!a.ok())
            return a;
        return s.insert("t.c", "a", "dup");
    });
    CHECK(st.code() == StatusCode::kDuplicateKey);
    CHECK_FALSE(s1->inTransaction());
    CHECK(scanAll(*s2, "t.c") == "a=1,b=1");
    REQUIRE_OK(s1->begin());
    CHECK(s1->withTransaction([](Session&) { return Status::OK(); }).code() ==
          StatusCode::kIllegalOperation);
    REQUIRE_OK(s1->abort());
}

TEST_CASE_FIXTURE(Fixture, "withTransaction retries the whole transaction after a conflict") {
    REQUIRE_OK(s1->put("t.c", "n", "0"));
    int calls = 0;
    CHECK_OK(s1->withTransaction([&](Session& s) -> Status {
        ++calls;
        auto v = s.get("t.c", "n");
        if (!v.ok())
            return v.status();
        if (calls == 1)
            REQUIRE_OK(s2->put("t.c", "n", "10"));  // someone else commits meanwhile
        return s.put("t.c", "n", std::to_string(std::stoi(v.value()) + 1));
    }));
    CHECK(calls == 2);
    CHECK(getOr(*s2, "t.c", "n") == "11");
    CHECK(engine->stats().transactions.retries == 1);
}
