// Operations you can see, read and stop (issue 16, docs/operations.md): the
// slow-op log and the profiler parsed back field by field, currentOp and
// killOp, yielding, serverStatus. Time never passes for real: an injected
// operation clock (EngineOptions::clock) makes operations "slow", and other
// threads are waited for by polling currentOp until they show what the test
// expects. The multi-threaded cases are in doctest's "concurrency" suite.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <latch>
#include <limits>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/engine_test_util.h"
#include "tests/temp_dir.h"
#include "tests/test_seed.h"

using namespace mvkv;
using namespace mvkv::engine;
using namespace mvkv::engine::testing;
using json = nlohmann::json;
using std::chrono::milliseconds;

namespace {

constexpr int64_t kMs = 1000;  // the operation clock counts microseconds

/// An operation clock that moves `step` microseconds forward at every read.
/// An operation reads it once as it starts and once as it ends
/// (engine/session_ops.cpp), so a single-key operation lasts exactly one
/// step. Any thread may read it.
struct StepClock {
    std::atomic<int64_t> now{1'000'000};
    std::atomic<int64_t> step{0};
    std::function<int64_t()> fn() {
        return [this] {
            int64_t st = step.load();
            return now.fetch_add(st) + st;
        };
    }
};

/// What the harness's log sink received.
struct SinkLines {
    std::mutex mutex;
    std::vector<std::string> lines;
    std::function<void(std::string_view)> fn() {
        return [this](std::string_view l) {
            std::lock_guard<std::mutex> g(mutex);
            lines.emplace_back(l);
        };
    }
    std::vector<std::string> all() {
        std::lock_guard<std::mutex> g(mutex);
        return lines;
    }
};

/// Polls `pred` until it holds; fails the test after a generous bound (the
/// bound is a hang guard, not a timing the test depends on).
bool waitFor(const std::function<bool()>& pred) {
    auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!pred()) {
        if (std::chrono::steady_clock::now() > limit)
            return false;
        std::this_thread::sleep_for(milliseconds(1));
    }
    return true;
}

json inprog(Engine& e, bool all = false) {
    json doc = json::parse(e.currentOp(all));
    REQUIRE(doc["ok"] == 1);
    REQUIRE(doc["inprog"].is_array());
    return doc["inprog"];
}

/// The currentOp entry of a running operation whose command document has
/// `command` as its first field, if any.
std::optional<json> findOp(Engine& e, std::string_view command, bool all = false) {
    for (const json& op : inprog(e, all)) {
        if (op.value("type", "") == "op" && op["command"].contains(std::string(command)))
            return op;
    }
    return std::nullopt;
}

/// Waits until an operation running `command` waits for a lock; returns its entry.
json waitForLockWaiter(Engine& e, std::string_view command) {
    std::optional<json> found;
    REQUIRE(waitFor([&] {
        found = findOp(e, command);
        return found && (*found)["waitingForLock"] == true;
    }));
    return *found;
}

/// The lines of the slow-op ring whose command is `command`.
std::vector<json> slowLines(Engine& e, std::string_view command) {
    std::vector<json> out;
    for (const std::string& l : e.slowOpLog().recent()) {
        json j = json::parse(l);
        if (j["attr"]["command"].contains(std::string(command)))
            out.push_back(std::move(j));
    }
    return out;
}

/// Every entry of `db`.system.profile, in key order (read by a session of
/// its own; the caller turns the profiler off first so this read is not one).
std::vector<json> profileEntries(Engine& e, std::string_view db) {
    auto s = e.openSession();
    std::vector<json> out;
    std::string lastKey;
    REQUIRE_OK(s->scan(fmt::format("{}.system.profile", db), {},
                       [&](std::string_view k, std::string_view v) {
                           CHECK(std::string(k) > lastKey);
                           lastKey = k;
                           out.push_back(json::parse(v));
                           return true;
                       }));
    return out;
}

void fill(Session& s, std::string_view ns, int n) {
    for (int i = 0; i < n; ++i)
        REQUIRE_OK(s.put(ns, fmt::format("k{:04}", i), fmt::format("v{}", i)));
}

json status(Engine& e, std::string_view section = {}) {
    auto s = e.serverStatus(section);
    REQUIRE_MESSAGE(s.ok(), s.status().toString());
    return json::parse(s.value());
}

/// Checks the fields every slow-op line has.
void checkSlowLineShape(const json& l, std::string_view ctx) {
    static const std::regex kDate(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00)");
    REQUIRE(l["t"].is_object());
    CHECK(std::regex_match(l["t"]["$date"].get<std::string>(), kDate));
    CHECK(l["s"] == "I");
    CHECK(l["c"] == "COMMAND");
    CHECK(l["id"] == 51803);
    CHECK(l["ctx"] == std::string(ctx));
    CHECK(l["msg"] == "Slow query");
    const json& a = l["attr"];
    for (const char* f : {"type", "ns", "command", "keysExamined", "docsExamined", "nreturned",
                          "numYields", "writeConflicts", "locks", "storage", "durationMillis"})
        CHECK_MESSAGE(a.contains(f), "attr has no " << f << ": " << l.dump());
    CHECK(a["command"].is_object());
    CHECK(a["locks"].is_object());
    CHECK(a["storage"].is_object());
}

}  // namespace

// ---------------------------------------------------------------------------
// 1. The slow-op log
// ---------------------------------------------------------------------------

TEST_CASE("slow-op log: an operation is logged iff it ran longer than slowms, field by field") {
    StepClock clock;
    SinkLines sink;
    EngineOptions o;
    o.clock = clock.fn();
    o.logSink = sink.fn();
    o.slowOpThreshold = milliseconds(100);
    o.yieldPeriod = milliseconds(0);  // scans read the clock; no yield by time here
    auto engine = openEngine(o);
    auto s = engine->openSession();
    s->setName("app-1");
    REQUIRE_OK(s->createCollection("app.c"));  // step 0: 0 ms
    CHECK(engine->slowOpLog().recent().empty());

    SUBCASE("at slowms exactly, not logged; one microsecond more, logged") {
        clock.step = 100 * kMs;
        REQUIRE_OK(s->put("app.c", "k1", "v1"));
        CHECK(engine->slowOpLog().recent().empty());
        clock.step = 100 * kMs + 1;
        REQUIRE_OK(s->put("app.c", "k1", "v1"));
        CHECK(engine->slowOpLog().recent().size() == 1);
        clock.step = 50 * kMs;
        REQUIRE_OK(s->get("app.c", "k1").status());
        CHECK(engine->slowOpLog().recent().size() == 1);
    }

    SUBCASE("a write's line") {
        clock.step = 150 * kMs;
        REQUIRE_OK(s->put("app.c", "k1", "v1"));
        auto lines = engine->slowOpLog().recent();
        REQUIRE(lines.size() == 1);
        json l = json::parse(lines[0]);
        checkSlowLineShape(l, "app-1");
        const json& a = l["attr"];
        CHECK(a["type"] == "update");  // put is an upsert
        CHECK(a["ns"] == "app.c");
        CHECK(a["command"] == json{{"put", "c"}, {"key", "k1"}, {"value", "v1"}, {"valueBytes", 2}});
        CHECK(a["keysExamined"] == 0);
        CHECK(a["docsExamined"] == 0);
        CHECK(a["nreturned"] == 0);
        CHECK(a["numYields"] == 0);
        CHECK(a["writeConflicts"] == 0);
        CHECK(a["durationMillis"] == 150);
        CHECK(a["ok"] == 1);
        // IX all the way down: w per resource type, acquired without a wait;
        // the commit's oplog write is a second one on Global and Database
        // (`local`), as a replicated write's line shows in MongoDB.
        for (const char* type : {"Global", "Database", "Collection"}) {
            INFO(type << ": " << a["locks"].dump());
            REQUIRE(a["locks"].contains(type));
            CHECK(a["locks"][type]["acquireCount"]["w"] == (std::string_view(type) == "Collection" ? 1 : 2));
            CHECK_FALSE(a["locks"][type].contains("acquireWaitCount"));
        }
    }

    SUBCASE("a read's and a scan's lines count what they examined and returned") {
        fill(*s, "app.c", 3);
        clock.step = 150 * kMs;
        REQUIRE(s->get("app.c", "k0001").value() == "v1");
        CHECK(s->get("app.c", "nope").status().code() == StatusCode::kNotFound);
        int visited = 0;
        REQUIRE_OK(s->scan("app.c", {}, [&](std::string_view, std::string_view) {
            ++visited;
            return true;
        }));
        CHECK(visited == 3);
        auto lines = engine->slowOpLog().recent();
        REQUIRE(lines.size() == 3);
        json get = json::parse(lines[0]);
        checkSlowLineShape(get, "app-1");
        CHECK(get["attr"]["type"] == "query");
        CHECK(get["attr"]["command"] == json{{"find", "c"}, {"key", "k0001"}});
        CHECK(get["attr"]["keysExamined"] == 1);
        CHECK(get["attr"]["docsExamined"] == 1);
        CHECK(get["attr"]["nreturned"] == 1);
        CHECK(get["attr"]["durationMillis"] == 150);
        CHECK(get["attr"]["locks"]["Collection"]["acquireCount"]["r"] == 1);

        json miss = json::parse(lines[1]);
        CHECK(miss["attr"]["nreturned"] == 0);
        CHECK(miss["attr"]["ok"] == 0);
        CHECK(miss["attr"]["errName"] == "NotFound");

        json scan = json::parse(lines[2]);
        checkSlowLineShape(scan, "app-1");
        CHECK(scan["attr"]["type"] == "query");
        CHECK(scan["attr"]["command"]["find"] == "c");
        CHECK(scan["attr"]["keysExamined"] == 3);
        CHECK(scan["attr"]["docsExamined"] == 3);
        CHECK(scan["attr"]["nreturned"] == 3);
        CHECK(scan["attr"]["numYields"] == 0);
        CHECK(scan["attr"]["durationMillis"].get<int64_t>() >= 150);
    }

    SUBCASE("sampleRate 0 logs nothing, 1 logs every slow operation") {
        clock.step = 150 * kMs;
        REQUIRE_OK(engine->setSlowOp(100, 0.0));
        for (int i = 0; i < 20; ++i)
            REQUIRE_OK(s->put("app.c", fmt::format("k{}", i), "v"));
        CHECK(engine->slowOpLog().recent().empty());
        REQUIRE_OK(engine->setSlowOp(100, 1.0));
        for (int i = 0; i < 20; ++i)
            REQUIRE_OK(s->put("app.c", fmt::format("k{}", i), "v"));
        CHECK(engine->slowOpLog().recent().size() == 20);
        CHECK(engine->slowOpLog().linesWritten() == 20);
    }

    SUBCASE("a threshold whose microseconds overflow is refused; the largest one logs nothing") {
        clock.step = 150 * kMs;
        const int64_t huge = std::numeric_limits<int64_t>::max();
        CHECK_CODE(engine->setSlowOp(huge, 1.0), StatusCode::kInvalidArgument);
        CHECK_CODE(engine->setSlowOp(huge / 1000 + 1, 1.0), StatusCode::kInvalidArgument);
        CHECK(engine->slowOpLog().slowMs() == 100);
        REQUIRE_OK(engine->setSlowOp(huge / 1000, 1.0));
        REQUIRE_OK(s->put("app.c", "k", "v"));
        CHECK(engine->slowOpLog().recent().empty());
        REQUIRE_OK(engine->setSlowOp(huge / 1000 / 1000, 1.0));  // about 292 years
        REQUIRE_OK(s->put("app.c", "k", "v"));
        CHECK(engine->slowOpLog().recent().empty());
    }

    SUBCASE("setSlowOp moves the threshold and refuses bad input, changing nothing") {
        clock.step = 150 * kMs;
        REQUIRE_OK(engine->setSlowOp(200, 1.0));
        REQUIRE_OK(s->put("app.c", "k", "v"));
        CHECK(engine->slowOpLog().recent().empty());
        CHECK_CODE(engine->setSlowOp(-1, 1.0), StatusCode::kInvalidArgument);
        CHECK_CODE(engine->setSlowOp(100, 1.5), StatusCode::kInvalidArgument);
        CHECK_CODE(engine->setSlowOp(100, -0.1), StatusCode::kInvalidArgument);
        CHECK_CODE(engine->setSlowOp(100, std::nan("")), StatusCode::kInvalidArgument);
        CHECK(engine->slowOpLog().slowMs() == 200);
        CHECK(engine->slowOpLog().sampleRate() == 1.0);
        REQUIRE_OK(s->put("app.c", "k", "v"));
        CHECK(engine->slowOpLog().recent().empty());
        REQUIRE_OK(engine->setSlowOp(0, 1.0));
        REQUIRE_OK(s->put("app.c", "k", "v"));
        CHECK(engine->slowOpLog().recent().size() == 1);
    }

    // The sink received exactly the ring's lines, in order.
    CHECK(sink.all() == engine->slowOpLog().recent());
}

TEST_CASE("slow-op log: impossible options are refused when the engine opens") {
    EngineOptions o;
    o.slowOpThreshold = milliseconds::max();
    CHECK_CODE(Engine::open(o).status(), StatusCode::kInvalidArgument);
    o = {};
    o.slowOpThreshold = milliseconds(-1);
    CHECK_CODE(Engine::open(o).status(), StatusCode::kInvalidArgument);
    o = {};
    o.slowOpSampleRate = 2.0;
    CHECK_CODE(Engine::open(o).status(), StatusCode::kInvalidArgument);
    o = {};
    o.yieldPeriod = milliseconds(-1);
    CHECK_CODE(Engine::open(o).status(), StatusCode::kInvalidArgument);
}

TEST_CASE("slow-op log: on a data directory the line lands in <dir>/mvkv.log") {
    mvkv::testing::TempDir dir("mvkv-oplog-slow");
    StepClock clock;
    EngineOptions o = onDisk(dir.path, oplog::SyncMode::kNone);
    o.clock = clock.fn();
    std::string expected;
    {
        auto engine = openEngine(o);
        auto s = engine->openSession();
        s->setName("disk-writer");
        REQUIRE_OK(s->createCollection("app.c"));
        clock.step = 300 * kMs;
        REQUIRE_OK(s->insert("app.c", "k", "v"));
        auto lines = engine->slowOpLog().recent();
        REQUIRE(lines.size() == 1);
        expected = lines[0];
        json st = status(*engine, "log");
        CHECK(st["log"]["file"] == dir.path + "/mvkv.log");
        CHECK(st["log"]["fileErrors"] == 0);
    }
    std::ifstream in(dir.path + "/mvkv.log");
    REQUIRE(in.good());
    std::vector<std::string> fileLines;
    for (std::string line; std::getline(in, line);)
        fileLines.push_back(line);
    REQUIRE(fileLines.size() == 1);
    CHECK(fileLines[0] == expected);
    json l = json::parse(fileLines[0]);
    checkSlowLineShape(l, "disk-writer");
    CHECK(l["attr"]["type"] == "insert");
    CHECK(l["attr"]["command"]["insert"] == "c");
    CHECK(l["attr"]["durationMillis"] == 300);
}

// ---------------------------------------------------------------------------
// 3. The profiler
// ---------------------------------------------------------------------------

TEST_CASE("profiler: level 2 profiles every operation of its database, never its own writes") {
    StepClock clock;
    EngineOptions o;
    o.clock = clock.fn();
    o.yieldPeriod = milliseconds(0);
    auto engine = openEngine(o);
    auto s = engine->openSession();
    s->setName("profiled-app");
    REQUIRE_OK(s->createCollection("app.c"));
    REQUIRE_OK(s->createCollection("other.c"));

    auto set = engine->profiler().setLevel("app", 2);
    REQUIRE_OK(set.status());
    CHECK(set.value().was == 0);
    CHECK(set.value().level == 2);
    CHECK(engine->profiler().get("app").level == 2);
    CHECK(engine->profiler().get("other").level == 0);
    CHECK(engine->catalog().lookup("app.system.profile"));

    clock.step = 7 * kMs;
    REQUIRE_OK(s->put("app.c", "k1", "v1"));                       // update
    REQUIRE_OK(s->insert("app.c", "k2", "v2"));                    // insert
    REQUIRE(s->get("app.c", "k1").value() == "v1");                // query
    REQUIRE_OK(s->scan("app.c", {}, [](auto, auto) { return true; }));  // query
    REQUIRE(s->count("app.c").value() == 2);                       // command
    REQUIRE_OK(s->remove("app.c", "k2"));                          // remove
    REQUIRE_OK(s->put("other.c", "x", "y"));                       // another database
    constexpr size_t kUserOps = 6;

    set = engine->profiler().setLevel("app", 0);
    REQUIRE_OK(set.status());
    CHECK(set.value().was == 2);
    auto entries = profileEntries(*engine, "app");
    REQUIRE(entries.size() == kUserOps);
    CHECK(engine->profiler().written() == kUserOps);
    CHECK(engine->profiler().dropped() == 0);
    const char* ops[] = {"update", "insert", "query", "query", "command", "remove"};
    const char* commands[] = {"put", "insert", "find", "find", "count", "delete"};
    std::string lastTs;
    uint64_t lastOpid = 0;
    for (size_t i = 0; i < entries.size(); ++i) {
        const json& e = entries[i];
        INFO(i << ": " << e.dump());
        for (const char* f : {"op", "ns", "command", "keysExamined", "docsExamined", "nreturned",
                              "numYield", "writeConflicts", "locks", "millis", "ts", "client",
                              "appName"})
            CHECK_MESSAGE(e.contains(f), "no " << f);
        CHECK(e["op"] == ops[i]);
        CHECK(e["ns"] == "app.c");
        CHECK(e["command"][commands[i]] == "c");
        CHECK(e["client"] == "profiled-app");
        CHECK(e["appName"] == "profiled-app");
        CHECK(e["writeConflicts"] == 0);
        CHECK(e["numYield"] == 0);
        CHECK(e["locks"]["Collection"]["acquireCount"].is_object());
        CHECK(e["millis"].get<int64_t>() >= 7);
        // Time order: ts never goes back, opids were handed out in order.
        CHECK(e["ts"].get<std::string>() >= lastTs);
        lastTs = e["ts"];
        CHECK(e["opid"].get<uint64_t>() > lastOpid);
        lastOpid = e["opid"];
    }
    CHECK(entries[0]["millis"] == 7);
    CHECK(entries[2]["keysExamined"] == 1);
    CHECK(entries[2]["nreturned"] == 1);
    CHECK(entries[3]["nreturned"] == 2);
    CHECK(entries[3]["docsExamined"] == 2);

    // The read above was not profiled (level 0), nor was other.c ever.
    CHECK(profileEntries(*engine, "app").size() == kUserOps);
    CHECK_FALSE(engine->catalog().lookup("other.system.profile"));
}

TEST_CASE("profiler: level 1 profiles what is slower than slowms, sampled by sampleRate") {
    StepClock clock;
    EngineOptions o;
    o.clock = clock.fn();
    o.slowOpThreshold = milliseconds(100);
    auto engine = openEngine(o);
    auto s = engine->openSession();
    REQUIRE_OK(s->createCollection("app.c"));
    auto set = engine->profiler().setLevel("app", 1);
    REQUIRE_OK(set.status());
    CHECK(set.value().slowMs == 100);
    CHECK(set.value().sampleRate == 1.0);

    clock.step = 50 * kMs;
    REQUIRE_OK(s->put("app.c", "fast", "v"));  // not slow
    clock.step = 150 * kMs;
    REQUIRE_OK(s->put("app.c", "slow", "v"));  // slow
    REQUIRE_OK(engine->setSlowOp(100, 0.0));
    REQUIRE_OK(s->put("app.c", "sampled-out", "v"));  // slow, sampled out
    REQUIRE_OK(engine->setSlowOp(100, 1.0));
    REQUIRE_OK(s->put("app.c", "slow2", "v"));  // slow
    REQUIRE_OK(engine->setSlowOp(200, 1.0));
    REQUIRE_OK(s->put("app.c", "under-new-slowms", "v"));  // 150 < 200
    CHECK(engine->profiler().get("app").slowMs == 200);

    REQUIRE_OK(engine->profiler().setLevel("app", 0).status());
    auto entries = profileEntries(*engine, "app");
    REQUIRE(entries.size() == 2);
    CHECK(entries[0]["command"]["key"] == "slow");
    CHECK(entries[0]["millis"] == 150);
    CHECK(entries[1]["command"]["key"] == "slow2");
}

TEST_CASE("profiler: its writes count in no opcounter, and its entries survive a reopen") {
    mvkv::testing::TempDir dir("mvkv-ops-profile");
    EngineOptions o = onDisk(dir.path, oplog::SyncMode::kNone);
    {
        auto engine = openEngine(o);
        auto s = engine->openSession();
        REQUIRE_OK(s->createCollection("app.c"));
        REQUIRE_OK(s->put("app.c", "k", "v"));
        REQUIRE_OK(engine->profiler().setLevel("app", 2).status());
        json before = status(*engine, "opcounters")["opcounters"];
        for (int i = 0; i < 5; ++i)
            REQUIRE_OK(s->get("app.c", "k").status());
        json after = status(*engine, "opcounters")["opcounters"];
        CHECK(after["query"].get<int64_t>() - before["query"].get<int64_t>() == 5);
        // Five entries were inserted into app.system.profile, by the profiler.
        CHECK(engine->profiler().written() == 5);
        CHECK(after["insert"] == before["insert"]);
        CHECK(after["command"] == before["command"]);
        REQUIRE_OK(engine->profiler().setLevel("app", 0).status());
    }
    // The profiler's collection and entries are in the oplog like any other.
    auto engine = openEngine(o);
    CHECK(engine->catalog().lookup("app.system.profile"));
    auto entries = profileEntries(*engine, "app");
    REQUIRE(entries.size() == 5);
    for (const json& e : entries)
        CHECK(e["command"] == json{{"find", "c"}, {"key", "k"}});
}

TEST_CASE("profiler: dropping a profiled database drops its level too (as MongoDB does)") {
    auto engine = openEngine();
    auto s = engine->openSession();
    REQUIRE_OK(s->createCollection("app.c"));
    REQUIRE_OK(engine->profiler().setLevel("app", 2).status());
    REQUIRE_OK(s->put("app.c", "k", "v"));
    REQUIRE_OK(s->dropDatabase("app"));
    // The drop's own entry must not bring the database back.
    CHECK(engine->listDatabases().empty());
    CHECK(engine->profiler().get("app").level == 0);
    CHECK_FALSE(engine->profiler().anyOn());
}

TEST_CASE("profiler: level 0 writes nothing; bad levels and databases are refused") {
    auto engine = openEngine();
    auto s = engine->openSession();
    REQUIRE_OK(s->createCollection("app.c"));
    REQUIRE_OK(engine->profiler().setLevel("app", 0).status());
    REQUIRE_OK(s->put("app.c", "k", "v"));
    CHECK_FALSE(engine->catalog().lookup("app.system.profile"));
    CHECK(engine->profiler().written() == 0);
    CHECK_CODE(engine->profiler().setLevel("app", 3).status(), StatusCode::kInvalidArgument);
    CHECK_CODE(engine->profiler().setLevel("app", -1).status(), StatusCode::kInvalidArgument);
    CHECK_CODE(engine->profiler().setLevel("local", 2).status(), StatusCode::kInvalidArgument);
    CHECK_CODE(engine->profiler().setLevel("", 2).status(), StatusCode::kInvalidArgument);
    CHECK(engine->profiler().get("app").level == 0);
    CHECK_FALSE(engine->profiler().anyOn());
}

// ---------------------------------------------------------------------------
// 5. killOp that needs no second thread
// ---------------------------------------------------------------------------

TEST_CASE("killOp: opid 0 is InvalidArgument; a finished or unknown opid is NotFound") {
    auto engine = openEngine();
    auto s = engine->openSession();
    REQUIRE_OK(s->createCollection("app.c"));
    CHECK_CODE(engine->killOp(0), StatusCode::kInvalidArgument);
    uint64_t opid = s->reserveOpid();
    CHECK(opid > 0);
    REQUIRE_OK(s->put("app.c", "k", "v"));
    CHECK_CODE(engine->killOp(opid), StatusCode::kNotFound);
    CHECK_CODE(engine->killOp(opid + 1000), StatusCode::kNotFound);
    // The session is unharmed.
    REQUIRE_OK(s->put("app.c", "k", "w"));
    CHECK(s->get("app.c", "k").value() == "w");
    CHECK(inprog(*engine).empty());
}

TEST_CASE("killOp of a reserved opid: the read or write that takes it stops before it acts") {
    auto engine = openEngine();
    auto s = engine->openSession();
    REQUIRE_OK(s->createCollection("app.c"));
    REQUIRE_OK(s->put("app.c", "k", "v"));
    // Its locks are granted at once (no wait to notice the kill): the
    // operation still stops before it reads or writes anything.
    REQUIRE_OK(engine->killOp(s->reserveOpid()));
    CHECK_CODE(s->get("app.c", "k").status(), StatusCode::kInterrupted);
    REQUIRE_OK(engine->killOp(s->reserveOpid()));
    CHECK_CODE(s->put("app.c", "k", "killed"), StatusCode::kInterrupted);
    CHECK(s->get("app.c", "k").value() == "v");
    REQUIRE_OK(engine->killOp(s->reserveOpid()));
    CHECK_CODE(s->removeRange("app.c", {}).status(), StatusCode::kInterrupted);
    CHECK(s->count("app.c").value() == 1);
}

// ---------------------------------------------------------------------------
// 6. Yielding, single-threaded parts
// ---------------------------------------------------------------------------

TEST_CASE("yielding: numYields counts, an explicit transaction's scan never yields") {
    StepClock clock;
    EngineOptions o;
    o.clock = clock.fn();
    o.slowOpThreshold = milliseconds(0);  // every operation that takes a step is logged
    o.yieldIterations = 10;
    o.yieldPeriod = milliseconds(0);
    auto engine = openEngine(o);
    auto s = engine->openSession();
    REQUIRE_OK(s->createCollection("app.c"));
    constexpr int kKeys = 1000;
    fill(*s, "app.c", kKeys);
    clock.step = 1 * kMs;
    uint64_t yieldsBefore = status(*engine, "metrics")["metrics"]["operation"]["yields"];

    int visited = 0;
    REQUIRE_OK(s->scan("app.c", {}, [&](auto, auto) {
        ++visited;
        return true;
    }));
    CHECK(visited == kKeys);
    auto lines = slowLines(*engine, "find");
    REQUIRE(lines.size() == 1);
    // The walk reads 128 keys per batch and yields between batches once
    // yieldIterations (10) keys went by: after every batch but the last.
    const uint64_t expectedYields = (kKeys - 1) / 128;
    CHECK(lines[0]["attr"]["numYields"] == expectedYields);
    CHECK(lines[0]["attr"]["nreturned"] == kKeys);
    // A yield takes the locks again: one IS per batch.
    CHECK(lines[0]["attr"]["locks"]["Collection"]["acquireCount"]["r"] == expectedYields + 1);
    uint64_t yieldsAfter = status(*engine, "metrics")["metrics"]["operation"]["yields"];
    CHECK(yieldsAfter - yieldsBefore == expectedYields);

    auto n = s->count("app.c");
    REQUIRE(n.ok());
    CHECK(n.value() == kKeys);
    auto countLines = slowLines(*engine, "count");
    REQUIRE(countLines.size() == 1);
    CHECK(countLines[0]["attr"]["numYields"] == expectedYields);

    REQUIRE_OK(s->begin());
    visited = 0;
    REQUIRE_OK(s->scan("app.c", {}, [&](auto, auto) {
        ++visited;
        return true;
    }));
    CHECK(visited == kKeys);
    REQUIRE_OK(s->commit());
    lines = slowLines(*engine, "find");
    REQUIRE(lines.size() == 2);
    CHECK(lines[1]["attr"]["numYields"] == 0);
    CHECK(lines[1]["attr"]["nreturned"] == kKeys);
    CHECK(lines[1]["attr"]["locks"]["Collection"]["acquireCount"]["r"] == 1);
}

TEST_CASE("removeRange: outside a transaction key by key, inside one atomic") {
    EngineOptions o;
    o.yieldIterations = 10;
    auto engine = openEngine(o);
    auto s = engine->openSession();
    auto other = engine->openSession();
    REQUIRE_OK(s->createCollection("app.c"));
    fill(*s, "app.c", 500);

    SUBCASE("both ends inclusive") {
        auto r = s->removeRange("app.c", {"k0010", "k0019"});
        REQUIRE(r.ok());
        CHECK(r.value() == 10);
        CHECK(s->count("app.c").value() == 490);
        CHECK(getOr(*s, "app.c", "k0009") == "v9");
        CHECK(getOr(*s, "app.c", "k0010") == "<NotFound>");
        CHECK(getOr(*s, "app.c", "k0019") == "<NotFound>");
        CHECK(getOr(*s, "app.c", "k0020") == "v20");
        // Nothing left in the range: zero, not an error.
        CHECK(s->removeRange("app.c", {"k0010", "k0019"}).value() == 0);
    }

    SUBCASE("outside a transaction, every key, yielding on the way") {
        auto r = s->removeRange("app.c", {});
        REQUIRE(r.ok());
        CHECK(r.value() == 500);
        CHECK(other->count("app.c").value() == 0);
        json m = status(*engine, "metrics")["metrics"]["operation"];
        CHECK(m["yields"].get<uint64_t>() >= 1);
    }

    SUBCASE("inside a transaction: atomic; abort restores every key") {
        REQUIRE_OK(s->begin());
        auto r = s->removeRange("app.c", {});
        REQUIRE(r.ok());
        CHECK(r.value() == 500);
        CHECK(s->count("app.c").value() == 0);
        CHECK(other->count("app.c").value() == 500);  // not visible before commit
        REQUIRE_OK(s->abort());
        CHECK(s->count("app.c").value() == 500);
        CHECK(getOr(*s, "app.c", "k0000") == "v0");
        CHECK(getOr(*s, "app.c", "k0499") == "v499");
    }

    SUBCASE("inside a transaction: commit removes every key at once") {
        REQUIRE_OK(s->begin());
        CHECK(s->removeRange("app.c", {"k0100", std::nullopt}).value() == 400);
        CHECK(other->count("app.c").value() == 500);
        REQUIRE_OK(s->commit());
        CHECK(other->count("app.c").value() == 100);
    }
}

// ---------------------------------------------------------------------------
// 7. serverStatus, single-threaded parts
// ---------------------------------------------------------------------------

TEST_CASE("serverStatus: opcounters count each kind of operation") {
    auto engine = openEngine();
    auto s = engine->openSession();
    json before = status(*engine, "opcounters")["opcounters"];
    REQUIRE_OK(s->createCollection("app.c"));  // command
    REQUIRE_OK(s->insert("app.c", "a", "1"));  // insert
    REQUIRE_OK(s->insert("app.c", "b", "2"));  // insert
    REQUIRE_OK(s->put("app.c", "c", "3"));     // update (an upsert)
    REQUIRE_OK(s->update("app.c", "a", "9"));  // update
    REQUIRE_OK(s->remove("app.c", "b"));       // delete
    REQUIRE_OK(s->get("app.c", "a").status());  // query
    REQUIRE_OK(s->scan("app.c", {}, [](auto, auto) { return true; }));  // query
    REQUIRE(s->count("app.c").value() == 2);    // command
    {
        auto c = s->openCursor("app.c");  // query
        REQUIRE_OK(c.status());
        REQUIRE_OK(c.value()->first());  // getmore
        REQUIRE_OK(c.value()->next());   // getmore
        REQUIRE_OK(c.value()->next());   // getmore
        CHECK_FALSE(c.value()->valid());
    }
    json after = status(*engine, "opcounters")["opcounters"];
    auto delta = [&](const char* f) { return after[f].get<int64_t>() - before[f].get<int64_t>(); };
    CHECK(delta("insert") == 2);
    CHECK(delta("update") == 2);
    CHECK(delta("delete") == 1);
    CHECK(delta("query") == 3);
    CHECK(delta("getmore") == 3);
    CHECK(delta("command") == 2);

    // A closed session's counts stay.
    s.reset();
    json closed = status(*engine, "opcounters")["opcounters"];
    CHECK(closed == after);
}

TEST_CASE("cursor steps inside withTransaction add to its operation, not to getmore") {
    auto engine = openEngine();
    auto s = engine->openSession();
    REQUIRE_OK(s->createCollection("app.c"));
    for (const char* k : {"a", "b", "c", "d"})
        REQUIRE_OK(s->put("app.c", k, "v"));
    json before = status(*engine, "opcounters")["opcounters"];
    int seen = 0;
    REQUIRE_OK(s->withTransaction([&](Session& x) {
        auto c = x.openCursor("app.c");
        if (!c.ok())
            return c.status();
        for (Status st = c.value()->first(); c.value()->valid(); st = c.value()->next()) {
            if (!st.ok())
                return st;
            ++seen;
        }
        return Status::OK();
    }));
    CHECK(seen == 4);
    json after = status(*engine, "opcounters")["opcounters"];
    // The body's cursor calls are part of the transaction's operation (a
    // command), as every operation inside the body is: no getmore of their own.
    CHECK(after["getmore"].get<int64_t>() == before["getmore"].get<int64_t>());
}

TEST_CASE("serverStatus: transactions open, committed and aborted") {
    auto engine = openEngine();
    auto a = engine->openSession();
    auto b = engine->openSession();
    REQUIRE_OK(a->createCollection("app.c"));
    json t = status(*engine, "transactions")["transactions"];
    CHECK(t["currentOpen"] == 0);
    REQUIRE_OK(a->begin());
    REQUIRE_OK(b->begin());
    REQUIRE_OK(a->put("app.c", "a", "1"));
    t = status(*engine, "transactions")["transactions"];
    CHECK(t["currentOpen"] == 2);
    CHECK(t["currentActive"] == 0);  // neither runs an operation now
    CHECK(t["currentInactive"] == 2);
    CHECK(t["totalStarted"] == 2);
    REQUIRE_OK(a->commit());
    REQUIRE_OK(b->abort());
    t = status(*engine, "transactions")["transactions"];
    CHECK(t["currentOpen"] == 0);
    CHECK(t["totalCommitted"] == 1);
    CHECK(t["totalAborted"] == 1);
    REQUIRE_OK(a->withTransaction([](Session& x) { return x.put("app.c", "b", "2"); }));
    t = status(*engine, "transactions")["transactions"];
    CHECK(t["totalCommitted"] == 2);
    CHECK(t["totalStarted"] == 3);
}

TEST_CASE("serverStatus: every section of the issue; one at a time; unknown is InvalidArgument") {
    mvkv::testing::TempDir dir("mvkv-ops-status");
    auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
    const char* sections[] = {"globalLock",   "locks",        "tickets",
                              "concurrentTransactions", "opcounters", "metrics",
                              "transactions", "historyStore", "oplog",
                              "checkpoint",   "profiler"};
    json all = status(*engine);
    CHECK(all["ok"] == 1);
    for (const char* name : sections) {
        INFO(name);
        CHECK(all.contains(name));
        CHECK_FALSE(all[name].is_null());
        json one = status(*engine, name);
        CHECK(one["ok"] == 1);
        CHECK(one.size() == 2);
        CHECK(one.contains(name));
    }
    for (const char* f : {"total", "readers", "writers"}) {
        CHECK(all["globalLock"]["currentQueue"].contains(f));
        CHECK(all["globalLock"]["activeClients"].contains(f));
    }
    for (const char* f : {"insert", "query", "update", "delete", "getmore", "command"})
        CHECK(all["opcounters"].contains(f));
    CHECK(all["metrics"]["operation"].contains("writeConflicts"));
    CHECK(all["metrics"]["queryExecutor"].contains("scanned"));
    for (const char* rw : {"read", "write"})
        for (const char* f : {"out", "available", "totalTickets"})
            CHECK(all["concurrentTransactions"][rw].contains(f));
    for (const char* f : {"currentActive", "currentOpen", "totalCommitted", "totalAborted"})
        CHECK(all["transactions"].contains(f));

    auto bad = engine->serverStatus("nosuchsection");
    CHECK_CODE(bad.status(), StatusCode::kInvalidArgument);
    CHECK(bad.status().message().find("opcounters") != std::string::npos);
}

// ---------------------------------------------------------------------------
// Many threads: lock waits, currentOp, killOp, yields (TSan runs these)
// ---------------------------------------------------------------------------

TEST_SUITE("concurrency") {

TEST_CASE("a lock wait: currentOp shows the waiter, the slow line counts the wait") {
    StepClock clock;
    EngineOptions o;
    o.clock = clock.fn();
    o.slowOpThreshold = milliseconds(100);
    auto engine = openEngine(o);
    auto holder = engine->openSession();
    holder->setName("holder");
    auto dropper = engine->openSession();
    dropper->setName("dropper");
    REQUIRE_OK(holder->createCollection("app.c"));
    REQUIRE_OK(holder->begin());
    REQUIRE_OK(holder->put("app.c", "k", "v"));  // IX on app.c until commit
    const SessionInfo holderInfo = holder->info();
    clock.step = 150 * kMs;  // from now on every operation is slow

    // The holder's idle transaction: only with `all`.
    CHECK(inprog(*engine).empty());
    json idle = inprog(*engine, true);
    REQUIRE(idle.size() == 1);
    CHECK(idle[0]["type"] == "idleSession");
    CHECK(idle[0]["active"] == false);
    CHECK(idle[0]["client"] == "holder");
    CHECK(idle[0]["waitingForLock"] == false);
    CHECK(idle[0]["locks"] == json{{"Global", "w"}, {"Database", "w"}, {"Collection", "w"}});
    CHECK(idle[0]["transaction"]["txnId"] == holderInfo.txnId);
    CHECK(idle[0]["transaction"]["txnId"].get<uint64_t>() != 0);
    CHECK(idle[0]["transaction"]["readTimestamp"] == holderInfo.readTs);
    CHECK(idle[0]["transaction"]["timeOpenMicros"].get<int64_t>() > 0);

    Status dropStatus;
    std::thread t([&] { dropStatus = dropper->dropCollection("app.c"); });
    json w = waitForLockWaiter(*engine, "drop");
    CHECK(w["op"] == "command");
    CHECK(w["ns"] == "app.c");
    CHECK(w["client"] == "dropper");
    CHECK(w["active"] == true);
    CHECK(w["opid"].get<uint64_t>() > 0);
    CHECK(w["microsecs_running"].get<int64_t>() > 0);
    CHECK(w["lockWaitingFor"]["type"] == "Collection");
    CHECK(w["lockWaitingFor"]["mode"] == "X");
    CHECK(w["lockWaitingFor"]["resource"].get<std::string>().find("app.c") != std::string::npos);
    // It holds the intents above the collection while it waits.
    CHECK(w["locks"]["Global"] == "w");
    CHECK(w["locks"]["Database"] == "w");
    // The queue as serverStatus counts it.
    json gl = status(*engine, "globalLock")["globalLock"];
    CHECK(gl["currentQueue"]["total"] == 1);
    CHECK(gl["currentQueue"]["writers"] == 1);
    CHECK(gl["currentQueue"]["readers"] == 0);
    CHECK(gl["activeClients"]["writers"].get<int64_t>() >= 1);
    // The holder's transaction appears with `all` beside the waiter.
    json everything = inprog(*engine, true);
    CHECK(everything.size() == 2);

    REQUIRE_OK(holder->commit());
    t.join();
    REQUIRE_OK(dropStatus);
    CHECK(status(*engine, "globalLock")["globalLock"]["currentQueue"]["total"] == 0);

    auto lines = slowLines(*engine, "drop");
    REQUIRE(lines.size() == 1);
    checkSlowLineShape(lines[0], "dropper");
    const json& coll = lines[0]["attr"]["locks"]["Collection"];
    INFO(lines[0].dump());
    CHECK(coll["acquireCount"]["W"] == 1);
    CHECK(coll["acquireWaitCount"]["W"] == 1);
    CHECK(coll["timeAcquiringMicros"]["W"].get<int64_t>() > 0);
    CHECK(lines[0]["attr"]["opid"] == w["opid"]);
    CHECK_FALSE(lines[0]["attr"]["locks"]["Global"].contains("acquireWaitCount"));
}

TEST_CASE("killOp of a lock waiter: Interrupted, and the holder carries on") {
    auto engine = openEngine();
    auto holder = engine->openSession();
    auto waiter = engine->openSession();
    REQUIRE_OK(holder->createCollection("app.c"));
    REQUIRE_OK(holder->begin());
    REQUIRE_OK(holder->put("app.c", "k", "v"));
    Status dropStatus;
    std::thread t([&] { dropStatus = waiter->dropCollection("app.c"); });
    json w = waitForLockWaiter(*engine, "drop");
    uint64_t opid = w["opid"];
    REQUIRE_OK(engine->killOp(opid));
    t.join();
    CHECK_CODE(dropStatus, StatusCode::kInterrupted);
    CHECK_CODE(engine->killOp(opid), StatusCode::kNotFound);
    REQUIRE_OK(holder->commit());
    CHECK(engine->catalog().lookup("app.c"));
    // The interrupt is forgotten: the waiter's next operation runs.
    CHECK(waiter->get("app.c", "k").value() == "v");
    CHECK(status(*engine, "metrics")["metrics"]["operation"]["killed"] == 1);
}

TEST_CASE("killOp of a write retrying on a hot key") {
    auto engine = openEngine();
    auto holder = engine->openSession();
    auto writer = engine->openSession();
    writer->setRetryTimeout(milliseconds(600'000));  // it retries until killed
    REQUIRE_OK(holder->createCollection("app.c"));
    REQUIRE_OK(holder->begin());
    REQUIRE_OK(holder->put("app.c", "hot", "holder"));  // uncommitted
    Status putStatus;
    std::thread t([&] { putStatus = writer->put("app.c", "hot", "writer"); });
    std::optional<json> w;
    REQUIRE(waitFor([&] {
        w = findOp(*engine, "put");
        return w && (*w)["writeConflicts"].get<uint64_t>() >= 1;
    }));
    CHECK((*w)["waitingForLock"] == false);
    CHECK((*w)["op"] == "update");
    CHECK((*w)["command"]["key"] == "hot");
    REQUIRE_OK(engine->killOp((*w)["opid"]));
    t.join();
    CHECK_CODE(putStatus, StatusCode::kInterrupted);
    CHECK(writer->lastOpWriteConflicts() >= 1);
    REQUIRE_OK(holder->commit());
    CHECK(getOr(*writer, "app.c", "hot") == "holder");
}

TEST_CASE("a ticket waiter: counted in currentQueue, killOp stops it") {
    EngineOptions o;
    o.locks.writeTickets = 1;
    auto engine = openEngine(o);
    auto holder = engine->openSession();
    auto waiter = engine->openSession();
    REQUIRE_OK(holder->createCollection("app.c"));
    REQUIRE_OK(holder->begin());
    REQUIRE_OK(holder->put("app.c", "a", "1"));  // the one write ticket, until commit
    Status putStatus;
    std::thread t([&] { putStatus = waiter->put("app.c", "b", "2"); });
    REQUIRE(waitFor([&] {
        return status(*engine, "globalLock")["globalLock"]["currentQueue"]["writers"] == 1;
    }));
    auto op = findOp(*engine, "put");
    REQUIRE(op);
    json tickets = status(*engine, "concurrentTransactions")["concurrentTransactions"];
    CHECK(tickets["write"]["out"] == 1);
    CHECK(tickets["write"]["available"] == 0);
    CHECK(tickets["write"]["totalTickets"] == 1);
    REQUIRE_OK(engine->killOp((*op)["opid"]));
    t.join();
    CHECK_CODE(putStatus, StatusCode::kInterrupted);
    CHECK(status(*engine, "globalLock")["globalLock"]["currentQueue"]["total"] == 0);
    REQUIRE_OK(holder->commit());
    REQUIRE_OK(waiter->put("app.c", "b", "2"));
    CHECK(getOr(*holder, "app.c", "b") == "2");
}

/// A scan on `session` in a thread whose visitor stops at the first key
/// until released: the test kills it meanwhile.
struct BlockedScan {
    std::latch started{1};
    std::latch release{1};
    std::atomic<int> visited{0};
    Status result;
    std::thread thread;
    BlockedScan(Session& session, std::string_view ns) {
        thread = std::thread([this, &session, ns] {
            bool first = true;
            result = session.scan(ns, {}, [&](std::string_view, std::string_view) {
                visited.fetch_add(1);
                if (first) {
                    first = false;
                    started.count_down();
                    release.wait();
                }
                return true;
            });
        });
    }
    ~BlockedScan() {
        if (thread.joinable()) {
            release.count_down();
            thread.join();
        }
    }
    Status finish() {
        release.count_down();
        thread.join();
        return result;
    }
};

TEST_CASE("killOp of a long scan: it stops within a batch") {
    EngineOptions o;
    o.yieldIterations = 0;  // no yields: the interrupt check alone stops it
    o.yieldPeriod = milliseconds(0);
    auto engine = openEngine(o);
    auto s = engine->openSession();
    auto scanner = engine->openSession();
    REQUIRE_OK(s->createCollection("app.c"));
    constexpr int kKeys = 2000;
    fill(*s, "app.c", kKeys);
    BlockedScan scan(*scanner, "app.c");
    scan.started.wait();
    auto op = findOp(*engine, "find");
    REQUIRE(op);
    CHECK((*op)["op"] == "query");
    CHECK((*op)["nreturned"] == 1);
    REQUIRE_OK(engine->killOp((*op)["opid"]));
    CHECK_CODE(scan.finish(), StatusCode::kInterrupted);
    CHECK(scan.visited.load() <= 128);  // the interrupt is checked every batch of 128
    CHECK_FALSE(findOp(*engine, "find"));
    CHECK(scanner->count("app.c").value() == kKeys);
}

TEST_CASE("killOp of an operation inside an explicit transaction aborts the transaction") {
    auto engine = openEngine();
    auto s = engine->openSession();
    auto txnSession = engine->openSession();
    REQUIRE_OK(s->createCollection("app.c"));
    fill(*s, "app.c", 300);
    REQUIRE_OK(txnSession->begin());
    REQUIRE_OK(txnSession->put("app.c", "written-in-txn", "x"));
    REQUIRE_OK(txnSession->remove("app.c", "k0000"));
    BlockedScan scan(*txnSession, "app.c");
    scan.started.wait();
    auto op = findOp(*engine, "find");
    REQUIRE(op);
    CHECK((*op)["transaction"]["txnId"].get<uint64_t>() != 0);
    REQUIRE_OK(engine->killOp((*op)["opid"]));
    Status st = scan.finish();
    CHECK_CODE(st, StatusCode::kInterrupted);
    CHECK(st.message().find("aborted") != std::string::npos);
    CHECK_FALSE(txnSession->inTransaction());
    CHECK_CODE(txnSession->commit(), StatusCode::kIllegalOperation);
    CHECK(getOr(*s, "app.c", "written-in-txn") == "<NotFound>");
    CHECK(getOr(*s, "app.c", "k0000") == "v0");
    CHECK(inprog(*engine, true).empty());
    // Its locks went with it: a drop is not blocked.
    REQUIRE_OK(s->dropCollection("app.c"));
    json t = status(*engine, "transactions")["transactions"];
    CHECK(t["totalAborted"] == 1);
    CHECK(t["currentOpen"] == 0);
}

TEST_CASE("yielding lets a drop in mid-scan; the scan ends with QueryPlanKilled") {
    StepClock clock;
    EngineOptions o;
    o.clock = clock.fn();
    o.slowOpThreshold = milliseconds(0);
    o.yieldIterations = 10;
    o.yieldPeriod = milliseconds(0);
    auto engine = openEngine(o);
    auto s = engine->openSession();
    auto scanner = engine->openSession();
    auto dropper = engine->openSession();
    REQUIRE_OK(s->createCollection("app.c"));
    constexpr int kKeys = 1000;
    fill(*s, "app.c", kKeys);
    clock.step = 1 * kMs;

    BlockedScan scan(*scanner, "app.c");
    scan.started.wait();  // the scan holds IS on app.c in its visitor
    Status dropStatus;
    std::thread t([&] { dropStatus = dropper->dropCollection("app.c"); });
    json w = waitForLockWaiter(*engine, "drop");
    CHECK(w["lockWaitingFor"]["mode"] == "X");
    // The drop gets its lock at the scan's next yield (the end of the first
    // batch), not at the end of the scan.
    Status scanStatus = scan.finish();
    t.join();
    REQUIRE_OK(dropStatus);
    CHECK_CODE(scanStatus, StatusCode::kQueryPlanKilled);
    CHECK(scanStatus.message().find("dropped") != std::string::npos);
    CHECK(scan.visited.load() == 128);
    CHECK_FALSE(engine->catalog().lookup("app.c"));

    auto lines = slowLines(*engine, "find");
    REQUIRE(lines.size() == 1);
    CHECK(lines[0]["attr"]["numYields"] == 1);
    CHECK(lines[0]["attr"]["nreturned"] == 128);
    CHECK(lines[0]["attr"]["errName"] == "QueryPlanKilled");
}

TEST_CASE("many sessions under currentOp, serverStatus and random killOps") {
    const uint32_t seed = mvkv::testing::testSeed();
    EngineOptions o;
    o.slowOpThreshold = milliseconds(3'600'000);  // no slow line hands out opids
    o.yieldIterations = 20;
    auto engine = openEngine(o);
    {
        auto setup = engine->openSession();
        REQUIRE_OK(setup->createCollection("app.c"));
        fill(*setup, "app.c", 300);
    }
    constexpr int kWorkers = 4;
    constexpr int kOpsEach = 400;
    std::atomic<int> workersDone{0};
    std::atomic<int> badStatuses{0};
    std::mutex reservedMutex;
    std::vector<uint64_t> reserved;  // every opid a worker reserved
    std::vector<std::thread> threads;
    for (int w = 0; w < kWorkers; ++w) {
        threads.emplace_back([&, w] {
            auto s = engine->openSession();
            s->setName(fmt::format("worker{}", w));
            std::mt19937 rng(seed + static_cast<uint32_t>(w));
            std::vector<uint64_t> mine;
            auto ok = [&](const Status& st) {
                // Interrupted by a random killOp; NotFound for a key another
                // step removed. Nothing else is expected.
                if (!st.ok() && st.code() != StatusCode::kInterrupted &&
                    st.code() != StatusCode::kNotFound) {
                    badStatuses.fetch_add(1);
                    MESSAGE("worker " << w << ": " << st.toString());
                }
            };
            for (int i = 0; i < kOpsEach; ++i) {
                std::string key = fmt::format("w{}-{:03}", w, rng() % 50);
                switch (rng() % 8) {
                    case 0:
                        ok(s->put("app.c", key, "v"));
                        break;
                    case 1:
                        ok(s->get("app.c", key).status());
                        break;
                    case 2:
                        ok(s->scan("app.c", {}, [](auto, auto) { return true; }));
                        break;
                    case 3:
                        ok(s->count("app.c").status());
                        break;
                    case 4:
                        ok(s->removeRange("app.c", {key, key}).status());
                        break;
                    case 5: {
                        ok(s->begin());
                        Status st = s->put("app.c", key, "t");
                        ok(st);
                        if (s->inTransaction())
                            ok(rng() % 2 ? s->commit() : s->abort());
                        break;
                    }
                    case 6: {
                        uint64_t id = s->reserveOpid();
                        if (!mine.empty() && id <= mine.back()) {
                            badStatuses.fetch_add(1);
                            MESSAGE("reserved opids go back: " << mine.back() << " then " << id);
                        }
                        mine.push_back(id);
                        ok(s->remove("app.c", key));
                        break;
                    }
                    default: {
                        auto c = s->openCursor("app.c");
                        ok(c.status());
                        if (c.ok()) {
                            ok(c.value()->first());
                            for (int j = 0; j < 5 && c.value()->valid(); ++j)
                                ok(c.value()->next());
                        }
                        break;
                    }
                }
            }
            std::lock_guard<std::mutex> g(reservedMutex);
            reserved.insert(reserved.end(), mine.begin(), mine.end());
            workersDone.fetch_add(1);
        });
    }

    // The monitor: the opids it sees, in the order it first saw them.
    std::vector<std::pair<int, uint64_t>> firstSeen;  // (call number, opid)
    std::map<uint64_t, uint64_t> connectionOf;        // opid -> connectionId
    std::set<std::string> known = {"query", "getmore", "insert", "update", "remove", "command"};
    int calls = 0, malformed = 0, kills = 0;
    uint64_t maxOpid = 0;
    std::mt19937 rng(seed);
    while (workersDone.load() < kWorkers) {
        ++calls;
        bool all = rng() % 2;
        json doc = json::parse(engine->currentOp(all));
        std::set<uint64_t> inThisCall;
        for (const json& e : doc["inprog"]) {
            bool good = e.contains("client") && e["client"].is_string() &&
                        e.contains("connectionId") && e["waitingForLock"].is_boolean() &&
                        e["locks"].is_object() && e.contains("type");
            if (good && e["type"] == "op") {
                good = e["opid"].is_number_unsigned() && e["opid"].get<uint64_t>() > 0 &&
                       e["active"] == true && known.count(e["op"].get<std::string>()) &&
                       e["ns"].is_string() && e["command"].is_object() &&
                       e["microsecs_running"].get<int64_t>() >= 0 &&
                       e["numYields"].is_number() && e["lockStats"].is_object();
                if (good) {
                    uint64_t id = e["opid"];
                    good = inThisCall.insert(id).second;  // unique within a call
                    auto [it, fresh] = connectionOf.emplace(id, e["connectionId"].get<uint64_t>());
                    good = good && it->second == e["connectionId"].get<uint64_t>();
                    if (fresh)
                        firstSeen.emplace_back(calls, id);
                    maxOpid = std::max(maxOpid, id);
                }
            } else if (good) {
                good = e["type"] == "idleSession" && all && e["transaction"].is_object() &&
                       e["transaction"]["timeOpenMicros"].get<int64_t>() >= 0;
            }
            if (!good) {
                ++malformed;
                MESSAGE("malformed inprog entry: " << e.dump());
            }
        }
        json st = json::parse(engine->serverStatus().value());
        if (!st["opcounters"].is_object() || !st["globalLock"]["currentQueue"].is_object())
            ++malformed;
        uint64_t victim = 1 + rng() % (maxOpid + 5);
        Status k = engine->killOp(victim);
        if (k.ok())
            ++kills;
        else if (k.code() != StatusCode::kNotFound)
            ++malformed;
    }
    for (auto& t : threads)
        t.join();
    MESSAGE("currentOp calls " << calls << ", opids seen " << firstSeen.size() << ", kills "
                               << kills);
    CHECK(badStatuses.load() == 0);
    CHECK(malformed == 0);

    // Opids are unique: no reserved opid was reserved twice, nor seen on
    // two connections (checked above).
    std::sort(reserved.begin(), reserved.end());
    CHECK(std::adjacent_find(reserved.begin(), reserved.end()) == reserved.end());
    // Handed out in increasing order: only currentOp and serverStatus (on
    // this thread) and reserveOpid hand out opids, so an opid the monitor
    // had not reserved and first saw at call k is above every opid it saw
    // at earlier calls.
    std::set<uint64_t> reservedSet(reserved.begin(), reserved.end());
    uint64_t maxBefore = 0, maxThisCall = 0;
    int call = 0, outOfOrder = 0;
    for (auto [k, id] : firstSeen) {
        if (k != call) {
            maxBefore = std::max(maxBefore, maxThisCall);
            call = k;
        }
        if (!reservedSet.count(id) && id <= maxBefore) {
            ++outOfOrder;
            MESSAGE("opid " << id << " first seen at call " << k << " after " << maxBefore);
        }
        maxThisCall = std::max(maxThisCall, id);
    }
    CHECK(outOfOrder == 0);
    CHECK(inprog(*engine, true).empty());
}

}  // TEST_SUITE("concurrency")
