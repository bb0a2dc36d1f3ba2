// The public API (include/mvkv/), as a harness sees it: this file is
// compiled with include/ as its only include path, so a public header that
// reached an internal one would not compile. What the first harness found
// awkward is checked here: close() reports, commit() returns its timestamp,
// a snapshot says where it lies, a cursor finds one key, and sweepHistory()
// runs beside an open cursor on the same thread.
#include <doctest/doctest.h>
#include <mvkv/mvkv.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {

struct TempPath {
    std::string path;
    TempPath() {
        char tmpl[] = "/tmp/mvkv-api-test-XXXXXX";
        REQUIRE(::mkdtemp(tmpl) != nullptr);
        path = tmpl;
    }
    ~TempPath() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

std::unique_ptr<mvkv::Engine> open(const mvkv::EngineOptions& o = {}) {
    auto r = mvkv::Engine::open(o);
    REQUIRE_MESSAGE(r.ok(), r.status().toString());
    return std::move(r).value();
}

std::unique_ptr<mvkv::Session> session(mvkv::Engine& e) {
    auto r = e.openSession();
    REQUIRE_MESSAGE(r.ok(), r.status().toString());
    return std::move(r).value();
}

void ok(const mvkv::Status& s) {
    REQUIRE_MESSAGE(s.ok(), s.toString());
}

}  // namespace

TEST_CASE("api: the version macros, the library and meson's project version agree") {
    const std::string macros = std::to_string(MVKV_VERSION_MAJOR) + "." +
                               std::to_string(MVKV_VERSION_MINOR) + "." +
                               std::to_string(MVKV_VERSION_PATCH);
    CHECK(macros == mvkv::versionString());
    CHECK(macros == MVKV_PROJECT_VERSION);  // bump include/mvkv/version.h with meson.build
}

TEST_CASE("api: commit returns its timestamp; a read-only commit returns none") {
    auto e = open();
    auto s = session(*e);
    ok(s->createCollection("h.c"));
    ok(s->begin());
    ok(s->put("h.c", "k", "v1"));
    auto first = s->commit();
    REQUIRE(first.ok());
    CHECK(first.value() != mvkv::kNoTimestamp);
    ok(s->begin());
    CHECK(s->get("h.c", "k").value() == "v1");
    auto readOnly = s->commit();
    REQUIRE(readOnly.ok());
    CHECK(readOnly.value() == mvkv::kNoTimestamp);
    ok(s->begin());
    ok(s->put("h.c", "k", "v2"));
    auto chosen = s->commit(first.value() + 100);
    REQUIRE(chosen.ok());
    CHECK(chosen.value() == first.value() + 100);
    CHECK(s->commit().status().code() == mvkv::StatusCode::kIllegalOperation);
    CHECK(s->lastCommitTimestamp() == chosen.value());
    // A refused second begin leaves the running transaction's point alone.
    ok(s->begin());
    const mvkv::Timestamp point = s->readTimestamp();
    ok(s->put("h.c", "later", "x"));
    CHECK(s->begin().code() == mvkv::StatusCode::kIllegalOperation);
    CHECK(s->readTimestamp() == point);
    ok(s->abort());
}

TEST_CASE("api: a snapshot says where it lies: its read timestamp, or all_durable when it began") {
    auto e = open();
    auto s = session(*e);
    ok(s->createCollection("h.c"));
    CHECK(s->readTimestamp() == mvkv::kNoTimestamp);  // no transaction
    ok(s->put("h.c", "a", "1"));
    const mvkv::Timestamp afterA = e->timestamps().allDurable;
    ok(s->begin());
    const mvkv::Timestamp point = s->readTimestamp();
    CHECK(point >= afterA);
    // Every commit at or below the point is visible.
    CHECK(s->get("h.c", "a").value() == "1");
    auto other = session(*e);
    ok(other->put("h.c", "b", "2"));  // after the snapshot: unseen
    CHECK(s->get("h.c", "b").status().code() == mvkv::StatusCode::kNotFound);
    ok(s->commit().status());
    mvkv::TxnOptions at;
    at.readTs = point;
    ok(s->begin(at));
    CHECK(s->readTimestamp() == point);
    CHECK(s->get("h.c", "a").value() == "1");
    CHECK(s->get("h.c", "b").status().code() == mvkv::StatusCode::kNotFound);
    ok(s->abort());
}

TEST_CASE("api: a cursor finds one key exactly, and walks in order") {
    auto e = open();
    auto s = session(*e);
    ok(s->createCollection("h.c"));
    for (const char* k : {"a", "b", "d"})
        ok(s->put("h.c", k, std::string("v") + k));
    auto c = s->openCursor("h.c");
    REQUIRE(c.ok());
    mvkv::Cursor& cur = *c.value();
    ok(cur.find("b"));
    CHECK(cur.valid());
    CHECK(cur.key() == "b");
    CHECK(cur.value() == "vb");
    CHECK(cur.timestamp() != mvkv::kNoTimestamp);
    CHECK(cur.find("c").code() == mvkv::StatusCode::kNotFound);
    CHECK_FALSE(cur.valid());  // not left on "d"
    CHECK(cur.key().empty());
    std::string keys;
    for (mvkv::Status st = cur.first(); cur.valid(); st = cur.next()) {
        ok(st);
        keys += cur.key();
    }
    CHECK(keys == "abd");
    ok(cur.seekForPrev("c"));
    CHECK(cur.key() == "b");
}

TEST_CASE("api: sweepHistory runs on the thread that holds an open cursor, and the cursor reads on") {
    auto e = open();
    auto s = session(*e);
    ok(s->createCollection("h.c"));
    for (int i = 0; i < 100; ++i)
        ok(s->put("h.c", "k" + std::to_string(i), "old"));
    ok(s->begin());
    auto c = s->openCursor("h.c");
    REQUIRE(c.ok());
    ok(c.value()->first());
    auto writer = session(*e);
    for (int i = 0; i < 100; ++i)
        ok(writer->put("h.c", "k" + std::to_string(i), "new"));
    ok(e->sweepHistory());  // this thread holds the cursor
    ok(e->sweepHistory());
    int n = 0;
    for (mvkv::Status st = c.value()->first(); c.value()->valid(); st = c.value()->next()) {
        ok(st);
        CHECK(c.value()->value() == "old");  // the snapshot's versions were kept
        ++n;
    }
    CHECK(n == 100);
    c.value().reset();
    ok(s->commit().status());
}

TEST_CASE("api: close reports; it refuses while a session is open; nothing works after it") {
    TempPath dir;
    mvkv::EngineOptions o;
    o.path = dir.path;
    auto e = open(o);
    {
        auto s = session(*e);
        ok(s->createCollection("h.c"));
        ok(s->put("h.c", "k", "v"));
        CHECK(e->close().code() == mvkv::StatusCode::kIllegalOperation);
        ok(s->put("h.c", "k2", "v"));  // still open
    }
    ok(e->close());
    CHECK(e->close().code() == mvkv::StatusCode::kIllegalOperation);
    CHECK(e->openSession().status().code() == mvkv::StatusCode::kIllegalOperation);
    CHECK(e->checkpoint().code() == mvkv::StatusCode::kIllegalOperation);
    CHECK(e->sweepHistory().code() == mvkv::StatusCode::kIllegalOperation);
    e.reset();
    auto again = open(o);  // the directory was released
    auto s = session(*again);
    CHECK(s->get("h.c", "k2").value() == "v");
}

TEST_CASE("api: transactions from several threads keep a sum (withTransaction retries conflicts)") {
    auto e = open();
    {
        auto s = session(*e);
        ok(s->createCollection("h.bank"));
        for (int i = 0; i < 4; ++i)
            ok(s->put("h.bank", "acct" + std::to_string(i), "100"));
    }
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            auto s = session(*e);
            for (int i = 0; i < 200; ++i) {
                const std::string from = "acct" + std::to_string((t + i) % 4);
                const std::string to = "acct" + std::to_string((t + i + 1) % 4);
                mvkv::Status st = s->withTransaction([&](mvkv::Session& tx) {
                    auto a = tx.get("h.bank", from);
                    auto b = tx.get("h.bank", to);
                    if (!a.ok())
                        return a.status();
                    if (!b.ok())
                        return b.status();
                    if (mvkv::Status w = tx.put("h.bank", from, std::to_string(std::stoi(a.value()) - 1));
                        !w.ok())
                        return w;
                    return tx.put("h.bank", to, std::to_string(std::stoi(b.value()) + 1));
                });
                CHECK(st.ok());
            }
        });
    }
    for (auto& t : threads)
        t.join();
    auto s = session(*e);
    int sum = 0;
    for (int i = 0; i < 4; ++i)
        sum += std::stoi(s->get("h.bank", "acct" + std::to_string(i)).value());
    CHECK(sum == 400);
    const mvkv::EngineStats st = e->stats();
    CHECK(st.transactionsCommitted >= 800);
}

TEST_CASE("api: a prepared transaction survives a crash and is committed by id after the restart") {
    TempPath dir;
    mvkv::EngineOptions o;
    o.path = dir.path;
    pid_t pid = fork();
    if (pid == 0) {
        auto r = mvkv::Engine::open(o);
        if (!r.ok()) _exit(2);
        auto s = r.value()->openSession();
        if (!s.ok()) _exit(3);
        mvkv::Session& ss = *s.value();
        if (!ss.createCollection("h.c").ok() || !ss.begin().ok() || !ss.put("h.c", "k", "v").ok())
            _exit(4);
        if (!ss.prepare(1000).ok()) _exit(5);
        _exit(0);  // crash with the transaction prepared
    }
    int st = 0;
    waitpid(pid, &st, 0);
    REQUIRE(WIFEXITED(st));
    REQUIRE(WEXITSTATUS(st) == 0);
    auto e = open(o);
    auto prepared = e->preparedTransactions();
    REQUIRE(prepared.size() == 1);
    CHECK(prepared[0].prepareTs == 1000);
    CHECK(prepared[0].ownerless);
    CHECK(e->stats().preparedTransactions == 1);
    ok(e->commitPrepared(prepared[0].txnId, 1001, 1001));
    auto s = session(*e);
    CHECK(s->get("h.c", "k").value() == "v");
    CHECK(e->preparedTransactions().empty());
}

TEST_CASE("api: failpoints through the public header") {
    auto e = open();
    auto s = session(*e);
    ok(s->createCollection("h.c"));
    REQUIRE(mvkv::configureFailPoint("writeConflictOnKey", "times 1 key=k").ok());
    ok(s->begin());
    CHECK(s->put("h.c", "k", "v").code() == mvkv::StatusCode::kWriteConflict);
    CHECK_FALSE(s->inTransaction());
    ok(s->put("h.c", "k", "v"));  // used up
    bool listed = false;
    for (const mvkv::FailPointInfo& f : mvkv::listFailPoints())
        listed = listed || (f.name == "writeConflictOnKey" && f.timesEntered >= 1);
    CHECK(listed);
}

// The README's "Using the engine" example, with the statuses it leaves
// unchecked for brevity checked.
TEST_CASE("api: the README's example runs") {
    using namespace mvkv;
    auto opened = Engine::open({});
    std::unique_ptr<Engine> engine = std::move(opened).value();
    auto s = engine->openSession().value();
    ok(s->createCollection("app.users"));
    ok(s->put("app.users", "alice", "1"));
    CHECK(s->insert("app.users", "alice", "2").code() == StatusCode::kDuplicateKey);
    auto v = s->get("app.users", "alice");
    CHECK(v.value() == "1");
    ok(s->begin({.readTs = 10}));
    ok(s->put("app.users", "bob", "7"));
    auto ts = s->commit(20);
    CHECK(ts.value() == 20);
    ok(s->withTransaction([](Session& t) {
        auto a = t.get("app.users", "alice");
        return a.ok() ? t.put("app.users", "carol", a.value()) : a.status();
    }));
    auto c = s->openCursor("app.users");
    std::string keys;
    for (Status st = c.value()->first(); c.value()->valid(); st = c.value()->next())
        keys += std::string(c.value()->key()) + ",";
    CHECK(keys == "alice,bob,carol,");
    ok(engine->setStableTimestamp(20));
    auto all = engine->timestamps();
    CHECK(all.stable == 20);
    ok(engine->setOldestTimestamp(20));
    ok(engine->sweepHistory());
    auto status = engine->serverStatus();
    CHECK(status.ok());
    c.value().reset();
    s.reset();
    Status closed = engine->close();
    CHECK(closed.ok());
}
