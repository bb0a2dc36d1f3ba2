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
#include <regex>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace std::string_literals;

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

TEST_CASE("api: isValidUtf8 is strict UTF-8 (RFC 3629), the rule names are held to") {
    struct Case {
        std::string bytes;
        bool valid;
        const char* what;
    };
    const std::vector<Case> cases = {
        {"", true, "empty"},
        {"abc", true, "ASCII"},
        {"\0\x01\x7f"s, true, "NUL and controls"},
        {"\xc2\x80", true, "U+0080, the smallest 2-byte"},
        {"caf\xc3\xa9", true, "2-byte"},
        {"\xdf\xbf", true, "U+07FF"},
        {"\xe0\xa0\x80", true, "U+0800, the smallest 3-byte"},
        {"\xe6\x97\xa5\xe6\x9c\xac", true, "3-byte"},
        {"\xed\x9f\xbf", true, "U+D7FF, below the surrogates"},
        {"\xee\x80\x80", true, "U+E000, above the surrogates"},
        {"\xef\xbf\xbf", true, "U+FFFF"},
        {"\xf0\x90\x80\x80", true, "U+10000, the smallest 4-byte"},
        {"\xf0\x9f\x98\x80", true, "emoji"},
        {"\xf4\x8f\xbf\xbf", true, "U+10FFFF, the largest"},
        {"\x80", false, "lone continuation byte"},
        {"a\xbf", false, "continuation byte after ASCII"},
        {"\xc0\x80", false, "overlong NUL"},
        {"\xc1\xbf", false, "overlong 2-byte"},
        {"\xe0\x80\xaf", false, "overlong 3-byte '/'"},
        {"\xe0\x9f\xbf", false, "overlong U+07FF"},
        {"\xf0\x8f\xbf\xbf", false, "overlong U+FFFF"},
        {"\xed\xa0\x80", false, "surrogate U+D800"},
        {"\xed\xbf\xbf", false, "surrogate U+DFFF"},
        {"\xed\xa0\xbd\xed\xb8\x80", false, "surrogate pair (CESU-8)"},
        {"\xf4\x90\x80\x80", false, "U+110000"},
        {"\xf5\x80\x80\x80", false, "lead byte 0xf5"},
        {"\xf8\x88\x80\x80\x80", false, "5-byte form"},
        {"\xff", false, "0xff"},
        {"\xfe", false, "0xfe"},
        {"\xc3", false, "truncated 2-byte"},
        {"\xe6\x97", false, "truncated 3-byte"},
        {"\xf0\x9f\x98", false, "truncated 4-byte"},
        {"\xe6\x97"
         "a",
         false, "3-byte cut by ASCII"},
        {"\xc3\xc3\xa9", false, "lead byte in place of a continuation"},
        {"ok\xf0\x9f\x98\x80\xff", false, "valid then invalid"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.what);
        CHECK(mvkv::isValidUtf8(c.bytes) == c.valid);
    }
}

TEST_CASE("api: decodeUtf8 gives each code point and its length; 0 where no sequence starts") {
    const std::string s = "a\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80\xff\xc3";
    struct Step {
        size_t pos;
        uint32_t value;
        size_t length;
    };
    for (const Step& step : std::vector<Step>{{0, 'a', 1},
                                              {1, 0xe9, 2},
                                              {3, 0x65e5, 3},
                                              {6, 0x1f600, 4},
                                              {10, 0, 0},    // 0xff starts nothing
                                              {11, 0, 0},    // truncated at the end
                                              {2, 0, 0}}) {  // a continuation byte
        CAPTURE(step.pos);
        const mvkv::CodePoint cp = mvkv::decodeUtf8(s, step.pos);
        CHECK(cp.length == step.length);
        if (cp.length != 0)
            CHECK(cp.value == step.value);
    }
}

TEST_CASE("api: the build stamp is the version, the git revision and the build type") {
    const std::string revision = mvkv::gitRevision();
    CHECK(std::regex_match(revision, std::regex("[0-9a-f]{7,40}(-dirty)?|unknown")));
    CHECK(std::string(mvkv::buildType()) == MVKV_EXPECTED_BUILD_TYPE);
    CHECK(std::string(mvkv::buildStamp()) == std::string(mvkv::versionString()) + " (git " +
                                                 revision + ", " + mvkv::buildType() + ")");
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

// ---- what the shell (tools/) uses, through the public API alone ----

TEST_CASE("api: the oplog reads every commit in order, filtered by namespace; none without an oplog") {
    auto e = open();  // in memory, with its in-memory oplog
    REQUIRE(e->hasOplog());
    auto s = session(*e);
    ok(s->createCollection("o.a"));
    ok(s->createCollection("o.b"));
    ok(s->insert("o.a", "k", "v1"));
    ok(s->update("o.a", "k", "v2"));
    ok(s->put("o.b", "x", "y"));
    ok(s->remove("o.a", "k"));
    const mvkv::Timestamp last = s->lastCommitTimestamp();
    CHECK(e->refreshOplogVisibility() >= last);

    auto cursor = e->openOplog({mvkv::kNoTimestamp, "o.a"});
    REQUIRE(cursor.ok());
    std::vector<mvkv::OplogEntry> entries;
    ok(cursor.value()->next(&entries));
    std::string ops;
    for (const mvkv::OplogEntry& en : entries) {
        CHECK(en.ns.rfind("o.a", 0) == 0);  // o.b's put is filtered out
        ops += static_cast<char>(en.op);
    }
    CHECK(ops == "ciud");  // create, insert, update, delete
    REQUIRE(entries.size() == 4);
    CHECK(entries[1].key == "k");
    CHECK(entries[2].value == "v2");
    CHECK(entries[3].ts == last);
    CHECK(entries[1].ts < entries[2].ts);

    // From a timestamp on; nothing new: OK with nothing appended.
    auto fromLast = e->openOplog({last, ""});
    REQUIRE(fromLast.ok());
    entries.clear();
    ok(fromLast.value()->next(&entries));
    REQUIRE(entries.size() == 1);
    CHECK(entries[0].op == mvkv::OplogOp::kDelete);
    entries.clear();
    ok(fromLast.value()->next(&entries, 10, 0ms));
    CHECK(entries.empty());

    mvkv::EngineOptions noLog;
    noLog.inMemoryOplogCapBytes = 0;
    auto bare = open(noLog);
    CHECK_FALSE(bare->hasOplog());
    CHECK(bare->refreshOplogVisibility() == mvkv::kNoTimestamp);
    CHECK(bare->openOplog({}).status().code() == mvkv::StatusCode::kIllegalOperation);
    CHECK(bare->watch({}).status().code() == mvkv::StatusCode::kIllegalOperation);
}

TEST_CASE("api: a change stream shows a collection's events and resumes after a token") {
    auto e = open();
    auto s = session(*e);
    ok(s->createCollection("cs.watched"));
    ok(s->createCollection("cs.other"));
    mvkv::ChangeStreamOptions o;
    o.ns = "cs.watched";
    auto stream = e->watch(o);
    REQUIRE(stream.ok());
    CHECK(stream.value()->resumeToken().empty());
    ok(s->insert("cs.watched", "a", "1"));
    ok(s->put("cs.other", "b", "2"));
    ok(s->update("cs.watched", "a", "3"));
    ok(s->remove("cs.watched", "a"));

    std::vector<mvkv::ChangeEvent> events;
    while (events.size() < 3) {
        auto ev = stream.value()->next(5s);  // returns as soon as one is majority-committed
        REQUIRE_MESSAGE(ev.ok(), ev.status().toString());
        REQUIRE(ev.value().has_value());
        events.push_back(*ev.value());
    }
    CHECK(events[0].op == mvkv::ChangeOp::kInsert);
    CHECK(events[0].key == "a");
    CHECK(events[0].value == std::optional<std::string>("1"));
    CHECK(events[1].op == mvkv::ChangeOp::kUpdate);
    CHECK(events[2].op == mvkv::ChangeOp::kDelete);
    CHECK_FALSE(events[2].value.has_value());
    CHECK(mvkv::changeOpName(events[1].op) == "update");
    CHECK(events[0].clusterTime < events[1].clusterTime);
    CHECK(stream.value()->resumeToken() == events[2].resumeToken);

    // Resuming after the first event gives the second next.
    mvkv::ChangeStreamOptions resume;
    resume.ns = "cs.watched";
    resume.resumeAfter = events[0].resumeToken;
    auto resumed = e->watch(resume);
    REQUIRE(resumed.ok());
    auto ev = resumed.value()->next(5s);
    REQUIRE(ev.ok());
    REQUIRE(ev.value().has_value());
    CHECK(ev.value()->resumeToken == events[1].resumeToken);

    mvkv::ChangeStreamOptions bad;
    bad.resumeAfter = "not a token";
    CHECK(e->watch(bad).status().code() == mvkv::StatusCode::kInvalidArgument);
    mvkv::ChangeStreamOptions both;
    both.resumeAfter = events[0].resumeToken;
    both.startAtTimestamp = 1;
    CHECK(e->watch(both).status().code() == mvkv::StatusCode::kInvalidArgument);
}

TEST_CASE("api: a replica set: members, write concern, pause and resume") {
    auto e = open();
    auto s = session(*e);
    ok(s->createCollection("rs.c"));
    {
        auto set = e->startReplicaSet();
        REQUIRE(set.ok());
        mvkv::ReplicaSet& rs = *set.value();
        CHECK(e->startReplicaSet().status().code() == mvkv::StatusCode::kIllegalOperation);
        auto id = rs.addSecondary();
        REQUIRE_MESSAGE(id.ok(), id.status().toString());
        CHECK(id.value() == 1);
        CHECK(rs.size() == 2);
        CHECK(rs.addSecondary("").status().code() == mvkv::StatusCode::kInvalidArgument);

        const mvkv::WriteConcern two{2, false, std::chrono::milliseconds(30000)};
        ok(s->begin());
        ok(s->put("rs.c", "k", "v1"));
        auto committed = s->commit(two);  // waits until member 1 applied it
        REQUIRE_MESSAGE(committed.ok(), committed.status().toString());
        std::vector<mvkv::MemberStatus> members = rs.status();
        REQUIRE(members.size() == 2);
        CHECK(members[0].state == "PRIMARY");
        CHECK(members[1].id == 1);
        CHECK(members[1].lastApplied >= committed.value());
        CHECK(rs.statusJson().find("\"majorityCommitPoint\"") != std::string::npos);

        // Three members is more than the set has: refused, nothing committed.
        ok(s->begin());
        ok(s->put("rs.c", "k", "never"));
        CHECK(s->commit(mvkv::WriteConcern{3, false, std::nullopt}).status().code() ==
              mvkv::StatusCode::kInvalidArgument);
        CHECK(s->inTransaction());
        ok(s->abort());

        // A paused member never applies: the wait times out, the write stands.
        ok(rs.pause(1));
        CHECK(rs.pause(1).code() == mvkv::StatusCode::kIllegalOperation);
        CHECK(rs.pause(0).code() == mvkv::StatusCode::kIllegalOperation);
        CHECK(rs.pause(9).code() == mvkv::StatusCode::kNotFound);
        CHECK(rs.status()[1].paused);
        ok(s->begin());
        ok(s->put("rs.c", "k", "v2"));
        auto late = s->commit(mvkv::WriteConcern{2, false, std::chrono::milliseconds(1)});
        CHECK(late.status().code() == mvkv::StatusCode::kWriteConcernTimeout);
        CHECK(s->get("rs.c", "k").value() == "v2");
        ok(rs.resume(1));
        CHECK(rs.resume(1).code() == mvkv::StatusCode::kIllegalOperation);
    }  // the set goes before the engine
    CHECK(mvkv::describeWriteConcern({2, false, std::chrono::milliseconds(500)}) ==
          "{w: 2, wtimeout: 500}");
    CHECK(mvkv::describeWriteConcern({1, true, std::nullopt}) == "{w: \"majority\"}");
    CHECK(mvkv::readConcernName(mvkv::ReadConcern::kSnapshot) == "snapshot");
}

TEST_CASE("api: a prepared commit with a write concern checks the concern first") {
    auto e = open();
    auto s = session(*e);
    ok(s->createCollection("p.c"));
    ok(s->begin());
    ok(s->put("p.c", "k", "v"));
    const mvkv::Timestamp base = e->timestamps().clock;
    ok(s->prepare(base + 10));
    // Standalone is a set of one: w=2 can never be met; still prepared.
    CHECK(s->commit(base + 20, base + 20, mvkv::WriteConcern{2, false, std::nullopt})
              .status()
              .code() == mvkv::StatusCode::kInvalidArgument);
    CHECK(s->prepared());
    auto done = s->commit(base + 20, base + 25, mvkv::WriteConcern{1, false, std::nullopt});
    REQUIRE_MESSAGE(done.ok(), done.status().toString());
    CHECK(done.value() == base + 20);
    CHECK_FALSE(s->inTransaction());
}

TEST_CASE("api: document locks: acquire, conflict, fenced writes, refresh, release") {
    auto e = open();
    auto s = session(*e);
    auto other = session(*e);
    ok(s->createCollection("d.work"));
    mvkv::DocumentLocks locks(*s);
    mvkv::DocumentLocks theirs(*other);
    mvkv::AcquireOptions a;
    a.owner = "alice";
    auto grant = locks.acquire("d.work", "item", a);
    REQUIRE_MESSAGE(grant.ok(), grant.status().toString());
    CHECK(grant.value().owner == "alice");
    CHECK(grant.value().token > 0);
    CHECK(grant.value().expiresAtMs > grant.value().acquiredAtMs);
    CHECK_FALSE(grant.value().expired);

    mvkv::AcquireOptions b;
    b.owner = "bob";
    CHECK(theirs.acquire("d.work", "item", b).status().code() ==
          mvkv::StatusCode::kDocumentLocked);
    CHECK(theirs.release("d.work", "item", "bob").code() == mvkv::StatusCode::kNotLockOwner);
    CHECK(locks.acquire("d.nothere", "item", a).status().code() ==
          mvkv::StatusCode::kNamespaceNotFound);

    // A fenced write holds only with the holder's owner and token.
    mvkv::WriteOptions fenced;
    fenced.fence = mvkv::WriteFence{"alice", grant.value().token};
    ok(s->put("d.work", "item", "done", fenced));
    mvkv::WriteOptions stale;
    stale.fence = mvkv::WriteFence{"alice", grant.value().token + 1};
    CHECK(s->put("d.work", "item", "stale", stale).code() == mvkv::StatusCode::kLockLost);
    CHECK(s->get("d.work", "item").value() == "done");

    auto refreshed = locks.refresh("d.work", "item", "alice", std::chrono::milliseconds(60000));
    REQUIRE(refreshed.ok());
    CHECK(refreshed.value().token == grant.value().token);
    auto listed = locks.list("d.work");
    REQUIRE(listed.ok());
    REQUIRE(listed.value().size() == 1);
    CHECK(listed.value()[0].key == "item");

    ok(s->begin());
    CHECK(locks.acquire("d.work", "other", a).status().code() ==
          mvkv::StatusCode::kIllegalOperation);
    ok(s->abort());
    auto released = locks.releaseAll("alice");
    REQUIRE(released.ok());
    CHECK(released.value() == 1);
    CHECK(locks.release("d.work", "item", "alice").code() == mvkv::StatusCode::kNotFound);
    CHECK(locks.list("d.work").value().empty());
}

TEST_CASE("api: TTL collections: explicit expiry, a pass, collMod; capped with TTL refused") {
    auto e = open();
    auto s = session(*e);
    mvkv::CollectionOptions ttl;
    ttl.expireAfterSeconds = 3600;
    ok(s->createCollection("t.sessions", ttl));
    ok(s->createCollection("t.plain"));
    mvkv::CollectionOptions both = ttl;
    both.capped = true;
    both.cappedSizeBytes = 1024;
    CHECK(s->createCollection("t.both", both).code() == mvkv::StatusCode::kInvalidArgument);
    CHECK(s->createCollection("t.sessions", ttl).code() == mvkv::StatusCode::kNamespaceExists);

    mvkv::WriteOptions past;
    past.expireAtMs = 1;  // long expired
    ok(s->put("t.sessions", "old", "x", past));
    ok(s->put("t.sessions", "new", "y"));  // expires in an hour
    CHECK(s->put("t.plain", "k", "v", past).code() == mvkv::StatusCode::kInvalidArgument);
    std::string value;
    std::optional<int64_t> expiresAt;
    ok(s->get("t.sessions", "old", &value, &expiresAt));
    CHECK(value == "x");
    CHECK(expiresAt == std::optional<int64_t>(1));
    ok(s->get("t.sessions", "new", &value, &expiresAt));
    REQUIRE(expiresAt.has_value());
    CHECK(*expiresAt > e->wallClockMs());
    CHECK(s->get("t.plain", "none", &value, &expiresAt).code() == mvkv::StatusCode::kNotFound);
    CHECK(value == "y");  // unchanged on failure

    auto pass = e->runTtlPass();
    REQUIRE_MESSAGE(pass.ok(), pass.status().toString());
    CHECK(pass.value().deleted == 1);
    CHECK(pass.value().collections >= 1);
    CHECK(s->get("t.sessions", "old").status().code() == mvkv::StatusCode::kNotFound);
    CHECK(s->get("t.sessions", "new").ok());

    ok(s->setExpireAfterSeconds("t.sessions", 60));
    CHECK(s->setExpireAfterSeconds("t.plain", 60).code() == mvkv::StatusCode::kInvalidArgument);
    CHECK(s->setExpireAfterSeconds("t.sessions", mvkv::kMaxExpireAfterSeconds + 1).code() ==
          mvkv::StatusCode::kInvalidArgument);
    const mvkv::TtlStatus st = e->ttlStatus();
    CHECK(st.passes >= 1);
    CHECK(st.deletedDocuments >= 1);
    REQUIRE(st.collections.size() == 1);
    CHECK(st.collections[0].ns == "t.sessions");
    CHECK(st.collections[0].expireAfterSeconds == 60);
}

TEST_CASE("api: scan, count, removeRange, keyHistory and a session's info") {
    auto e = open();
    auto s = session(*e);
    ok(s->createCollection("r.c"));
    for (char c = 'a'; c <= 'f'; ++c)
        ok(s->put("r.c", std::string(1, c), std::string("v") + c));
    std::string seen;
    mvkv::ScanOptions o;
    o.range.from = "b";
    o.range.to = "e";  // inclusive
    ok(s->scan("r.c", o, [&](std::string_view k, std::string_view) {
        seen += k;
        return true;
    }));
    CHECK(seen == "bcde");
    seen.clear();
    o.reverse = true;
    o.limit = 2;
    ok(s->scan("r.c", o, [&](std::string_view k, std::string_view) {
        seen += k;
        return true;
    }));
    CHECK(seen == "ed");
    CHECK(s->scan("r.none", {}, [](std::string_view, std::string_view) { return true; }).code() ==
          mvkv::StatusCode::kNamespaceNotFound);
    CHECK(s->count("r.c").value() == 6);
    CHECK(s->count("r.c", {std::string_view("c"), std::nullopt}).value() == 4);
    auto removed = s->removeRange("r.c", {std::string_view("a"), std::string_view("b")});
    REQUIRE(removed.ok());
    CHECK(removed.value() == 2);
    CHECK(s->count("r.c").value() == 4);

    ok(s->put("r.c", "c", "second"));
    auto versions = s->keyHistory("r.c", "c");
    REQUIRE(versions.ok());
    REQUIRE(versions.value().size() >= 2);
    CHECK(versions.value()[0].value == "second");  // newest first
    CHECK(versions.value()[0].state == mvkv::KeyVersion::State::kCommitted);
    CHECK(versions.value()[1].value == "vc");
    CHECK(versions.value()[1].stopTs == versions.value()[0].startTs);
    auto gone = s->keyHistory("r.c", "a");  // removed: its tombstone is newest
    REQUIRE(gone.ok());
    REQUIRE_FALSE(gone.value().empty());
    CHECK(gone.value()[0].tombstone);
    CHECK(s->keyHistory("r.none", "a").status().code() == mvkv::StatusCode::kNamespaceNotFound);

    CHECK_FALSE(s->info().inTransaction);
    ok(s->begin(mvkv::TxnOptions{e->timestamps().clock, false, mvkv::ReadConcern::kLocal, false}));
    ok(s->put("r.c", "x", "1"));
    ok(s->put("r.c", "y", "2"));
    const mvkv::SessionInfo info = s->info();
    CHECK(info.inTransaction);
    CHECK(info.writes == 2);
    CHECK(info.txnId != mvkv::kNoTxnId);
    CHECK(info.readTs == s->readTimestamp());
    CHECK(info.id == s->id());
    ok(s->abort());
}

TEST_CASE("api: the lock table shows a transaction's locks under its session's locker") {
    auto e = open();
    auto s = session(*e);
    auto other = session(*e);
    CHECK(s->lockerId() != other->lockerId());
    ok(s->createCollection("l.c"));
    ok(s->begin());
    ok(s->put("l.c", "k", "v"));  // a transaction keeps its locks until it ends
    bool held = false;
    for (const mvkv::LockTableEntry& r : e->lockTable())
        for (const mvkv::LockTableEntry::Request& g : r.granted)
            if (g.lockerId == s->lockerId() && r.resource.find("l.c") != std::string::npos) {
                held = true;
                CHECK(g.mode == "IX");
            }
    CHECK(held);
    ok(s->commit().status());
    for (const mvkv::LockTableEntry& r : e->lockTable())
        for (const mvkv::LockTableEntry::Request& g : r.granted)
            CHECK(g.lockerId != s->lockerId());
}

TEST_CASE("api: slow-op log, profiling levels, names and reserved opids") {
    auto e = open();
    auto s = session(*e);
    s->setName("worker");
    ok(s->createCollection("p.c"));
    CHECK(e->setSlowOp(-1, 1.0).code() == mvkv::StatusCode::kInvalidArgument);
    CHECK(e->setSlowOp(0, 1.5).code() == mvkv::StatusCode::kInvalidArgument);
    ok(e->setSlowOp(0, 1.0));  // every operation is slow
    ok(s->put("p.c", "k", "v"));
    const std::vector<std::string> lines = e->slowOpLog(1);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("Slow query") != std::string::npos);
    CHECK(lines[0].find("worker") != std::string::npos);

    CHECK(e->profilingSetting("p").level == 0);
    auto set = e->profile("p", 2);
    REQUIRE(set.ok());
    CHECK(set.value().was == 0);
    CHECK(set.value().level == 2);
    CHECK(set.value().slowMs == 0);
    CHECK(e->profilingSetting("p").level == 2);
    CHECK(e->profile("p", 3).status().code() == mvkv::StatusCode::kInvalidArgument);

    // A reserved opid is the next operation's: killOp before it starts.
    const uint64_t opid = s->reserveOpid();
    ok(e->killOp(opid));
    CHECK(s->put("p.c", "k2", "v").code() == mvkv::StatusCode::kInterrupted);
    const uint64_t dropped = s->reserveOpid();
    s->dropReservedOpid();
    CHECK(e->killOp(dropped).code() == mvkv::StatusCode::kNotFound);
    ok(s->put("p.c", "k2", "v"));
}

TEST_CASE("api: the repair record, database names, statsJson and the history figures") {
    auto mem = open();
    CHECK(mem->repairRecord().status().code() == mvkv::StatusCode::kIllegalOperation);
    CHECK(mem->clearRepairRecord().status().code() == mvkv::StatusCode::kIllegalOperation);
    CHECK(mvkv::checkDatabaseName("app").ok());
    CHECK(mvkv::checkDatabaseName("a.b").code() == mvkv::StatusCode::kInvalidArgument);
    CHECK(mvkv::checkDatabaseName("").code() == mvkv::StatusCode::kInvalidArgument);
    const std::string json = mem->statsJson();
    CHECK(json.front() == '{');
    CHECK(json.find("\"history\"") != std::string::npos);

    TempPath dir;
    mvkv::EngineOptions o;
    o.path = dir.path;
    o.syncMode = mvkv::SyncMode::kNone;
    auto e = open(o);
    auto record = e->repairRecord();
    REQUIRE(record.ok());
    CHECK(record.value() == "[]");
    auto cleared = e->clearRepairRecord();
    REQUIRE(cleared.ok());
    CHECK(cleared.value() == 0);
    {
        auto s = session(*e);
        ok(s->createCollection("h.c"));
        ok(s->put("h.c", "k", "1"));
        ok(s->put("h.c", "k", "2"));
        ok(e->checkpoint());
        const mvkv::EngineStats st = e->stats();
        CHECK(st.lastCheckpointNumber >= 1);
        CHECK(st.lastCheckpointEntries >= 1);
        CHECK(st.lastCheckpointBytes > 0);
        ok(e->sweepHistory());
        CHECK(e->stats().historyVersionsMoved + e->stats().historyVersionsFreed >= 1);
    }
    ok(e->close());
}
