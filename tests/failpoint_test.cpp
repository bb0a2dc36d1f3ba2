// Failpoints (mvkv/failpoint.h, docs/failpoints.md): the modes, the text
// form and its errors, waiting for a failpoint, and each engine failpoint
// doing what its description says: forced write conflicts, hangs that hold
// an operation until released, I/O errors after which the engine refuses
// durable writes and a reopen keeps every acknowledged commit, and crash
// points that kill the process where named.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "failpoint/failpoints.h"
#include "mvkv/failpoint.h"
#include "tests/engine_test_util.h"
#include "tests/failpoints_off.h"
#include "tests/temp_dir.h"

using namespace mvkv;
using namespace mvkv::engine;
using namespace mvkv::engine::testing;
using mvkv::testing::TempDir;
using namespace std::chrono_literals;

namespace {

using mvkv::testing::AllOff;

FailPointInfo infoOf(std::string_view name) {
    for (const FailPointInfo& f : listFailPoints())
        if (f.name == name)
            return f;
    FAIL("no failpoint " << name);
    return {};
}

void set(std::string_view name, std::string_view text) {
    auto r = configureFailPoint(name, text);
    REQUIRE_MESSAGE(r.ok(), r.status().toString());
}

constexpr auto kLong = 10s;  // a bound on waits that only a bug reaches

}  // namespace

TEST_CASE("failpoint: modes fire as MongoDB's do") {
    AllOff off;
    auto& fp = failpoint::pauseTtlMonitor;  // no engine runs here
    CHECK_FALSE(fp.check());

    set("pauseTtlMonitor", "alwaysOn");
    for (int i = 0; i < 5; ++i)
        CHECK(fp.check());

    set("pauseTtlMonitor", "times 3");
    int fired = 0;
    for (int i = 0; i < 10; ++i)
        fired += fp.check() ? 1 : 0;
    CHECK(fired == 3);
    CHECK(infoOf("pauseTtlMonitor").mode.kind == FailPointModeKind::kOff);  // turned itself off
    CHECK_FALSE(fp.armed());

    set("pauseTtlMonitor", "skip 2");
    CHECK_FALSE(fp.check());
    CHECK_FALSE(fp.check());
    CHECK(fp.check());
    CHECK(fp.check());

    set("pauseTtlMonitor", "activationProbability 0");
    for (int i = 0; i < 100; ++i)
        CHECK_FALSE(fp.check());
    set("pauseTtlMonitor", "activationProbability 1");
    for (int i = 0; i < 100; ++i)
        CHECK(fp.check());

    const uint64_t before = infoOf("pauseTtlMonitor").timesEntered;
    set("pauseTtlMonitor", "off");
    CHECK_FALSE(fp.check());
    CHECK(infoOf("pauseTtlMonitor").timesEntered == before);
}

TEST_CASE("failpoint: a per-key failpoint fires for its key only, and other keys use up nothing") {
    AllOff off;
    set("writeConflictOnKey", "times 1 key=k1");
    CHECK_FALSE(failpoint::writeConflictOnKey.checkKey("k2"));
    CHECK_FALSE(failpoint::writeConflictOnKey.checkKey("k10"));
    CHECK(failpoint::writeConflictOnKey.checkKey("k1"));
    CHECK_FALSE(failpoint::writeConflictOnKey.checkKey("k1"));  // times 1: used up
    set("writeConflictOnKey", "alwaysOn");                      // no key: every key
    CHECK(failpoint::writeConflictOnKey.checkKey("anything"));
}

TEST_CASE("failpoint: bad names, modes and data are refused and change nothing") {
    AllOff off;
    auto unknown = configureFailPoint("noSuchFailPoint", "alwaysOn");
    CHECK(unknown.status().code() == StatusCode::kNotFound);
    CHECK(unknown.status().message().find("writeConflictOnKey") != std::string::npos);
    for (const char* bad : {"", "sometimes", "times", "times x", "times 0", "skip -1",
                            "activationProbability", "activationProbability 1.5",
                            "activationProbability -0.1", "alwaysOn delay_ms=-5",
                            "alwaysOn delay_ms=abc", "alwaysOn colour=red"}) {
        CAPTURE(std::string(bad));
        auto r = configureFailPoint("hangBeforeCommit", bad);
        CHECK(r.status().code() == StatusCode::kInvalidArgument);
        CHECK(infoOf("hangBeforeCommit").mode.kind == FailPointModeKind::kOff);
    }
    // All or nothing: the good entry before a bad one is not applied.
    Status s = configureFailPoints("pauseTtlMonitor alwaysOn; hangBeforeCommit times");
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK(infoOf("pauseTtlMonitor").mode.kind == FailPointModeKind::kOff);
    CHECK(configureFailPoints("pauseTtlMonitor times 2 ; ;pauseHistorySweep skip 1 key=x").ok());
    CHECK(infoOf("pauseTtlMonitor").mode.n == 2);
    CHECK(infoOf("pauseHistorySweep").mode.kind == FailPointModeKind::kSkip);
    CHECK(infoOf("pauseHistorySweep").data.key == "x");
}

TEST_CASE("failpoint: waitForFailPoint returns once fired, Busy when its time passes first") {
    AllOff off;
    const uint64_t at = configureFailPoint("pauseTtlMonitor", "alwaysOn").value();
    CHECK(waitForFailPoint("pauseTtlMonitor", at + 1, 0ms).code() == StatusCode::kBusy);
    std::thread t([] {
        for (int i = 0; i < 3; ++i)
            (void)failpoint::pauseTtlMonitor.check();
    });
    CHECK(waitForFailPoint("pauseTtlMonitor", at + 3, kLong).ok());
    t.join();
    CHECK(waitForFailPoint("noSuch", 1, 0ms).code() == StatusCode::kNotFound);
}

TEST_CASE("failpoint: writeConflictOnKey makes a transaction's write of its key conflict") {
    AllOff off;
    auto e = openEngine();
    auto s = e->openSession();
    mustOk(s->createCollection("a.b"));
    set("writeConflictOnKey", "times 1 key=k");
    mustOk(s->begin());
    mustOk(s->put("a.b", "other", "1"));
    Status w = s->put("a.b", "k", "2");
    CHECK(w.code() == StatusCode::kWriteConflict);
    CHECK(w.message().find("writeConflictOnKey") != std::string::npos);
    CHECK_FALSE(s->inTransaction());  // aborted, as a real conflict aborts it
    CHECK(getOr(*s, "a.b", "other") == "<NotFound>");
    // An implicit write retries its conflicts: it gets through after two.
    set("writeConflictOnKey", "times 2 key=k");
    mustOk(s->put("a.b", "k", "3"));
    CHECK(infoOf("writeConflictOnKey").mode.kind == FailPointModeKind::kOff);
    CHECK(getOr(*s, "a.b", "k") == "3");
}

TEST_CASE("failpoint: hangBeforeCommit and hangAfterOplogAppend hold a commit until released") {
    AllOff off;
    TempDir dir("mvkv-failpoint-test");
    auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
    auto s = e->openSession();
    mustOk(s->createCollection("a.b"));
    for (const char* name : {"hangBeforeCommit", "hangAfterOplogAppend"}) {
        CAPTURE(std::string(name));
        const uint64_t at = configureFailPoint(name, "times 1").value();
        std::atomic<bool> done{false};
        std::thread writer([&] {
            auto w = e->openSession();
            mustOk(w->put("a.b", name, "v"));
            done = true;
        });
        REQUIRE(waitForFailPoint(name, at + 1, kLong).ok());
        // Held: not visible to a reader (after the append too: visibility
        // comes after it).
        CHECK_FALSE(done.load());
        CHECK(getOr(*s, "a.b", name) == "<NotFound>");
        set(name, "off");  // releases the hang
        writer.join();
        CHECK(done.load());
        CHECK(getOr(*s, "a.b", name) == "v");
    }
    // With delay_ms it sleeps instead of hanging: it returns by itself.
    set("hangBeforeCommit", "times 1 delay_ms=1");
    mustOk(s->put("a.b", "delayed", "v"));
}

TEST_CASE("failpoint: hangInLockAcquisition holds a lock request, fast paths included") {
    AllOff off;
    auto e = openEngine();
    auto s = e->openSession();
    mustOk(s->createCollection("a.b"));
    const uint64_t at = configureFailPoint("hangInLockAcquisition", "times 1").value();
    std::atomic<bool> done{false};
    std::thread reader([&] {
        auto r = e->openSession();
        CHECK(getOr(*r, "a.b", "k") == "<NotFound>");
        done = true;
    });
    REQUIRE(waitForFailPoint("hangInLockAcquisition", at + 1, kLong).ok());
    CHECK_FALSE(done.load());
    set("hangInLockAcquisition", "off");
    reader.join();
    CHECK(done.load());
}

TEST_CASE("failpoint: a failed oplog fsync or write fails the commit, stops durable writes, and a reopen keeps every acknowledged commit") {
    for (const char* name : {"failOplogFsync", "failOplogWrite"}) {
        CAPTURE(std::string(name));
        AllOff off;
        TempDir dir("mvkv-failpoint-test");
        {
            auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kFsync));
            auto s = e->openSession();
            mustOk(s->createCollection("a.b"));
            for (int i = 0; i < 10; ++i)
                mustOk(s->put("a.b", "acked" + std::to_string(i), "v"));
            set(name, "times 1");
            Status failed = s->put("a.b", "failed", "v");
            CHECK(failed.code() == StatusCode::kIOError);
            CHECK(failed.message().find(name) != std::string::npos);
            CHECK(getOr(*s, "a.b", "failed") == "<NotFound>");  // not acknowledged, not visible
            // The failpoint is off again, yet the engine does not retry the
            // sync on the same file: every later durable commit is refused.
            CHECK(infoOf(name).mode.kind == FailPointModeKind::kOff);
            Status after = s->put("a.b", "after", "v");
            CHECK(after.code() == StatusCode::kIOError);
            CHECK(getOr(*s, "a.b", "acked3") == "v");  // reads go on
        }
        auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kFsync));
        auto s = e->openSession();
        for (int i = 0; i < 10; ++i)
            CHECK(getOr(*s, "a.b", "acked" + std::to_string(i)) == "v");
        CHECK(getOr(*s, "a.b", "after") == "<NotFound>");
        mustOk(s->put("a.b", "new", "v"));  // the reopened engine writes again
    }
}

TEST_CASE("failpoint: failCheckpointWrite fails the checkpoint, leaves no file, and the next one succeeds") {
    AllOff off;
    TempDir dir("mvkv-failpoint-test");
    auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
    auto s = e->openSession();
    mustOk(s->createCollection("a.b"));
    mustOk(s->put("a.b", "k", "v"));
    set("failCheckpointWrite", "times 1");
    Status c = e->checkpoint();
    CHECK(c.code() == StatusCode::kIOError);
    CHECK(c.message().find("failCheckpointWrite") != std::string::npos);
    size_t files = 0;
    for (const auto& f : std::filesystem::directory_iterator(dir.path))
        files += f.path().filename().string().starts_with("checkpoint") ? 1 : 0;
    CHECK(files == 0);
    mustOk(s->put("a.b", "k2", "v"));  // writes go on
    mustOk(e->checkpoint());
}

TEST_CASE("failpoint: hangBeforeCheckpointRename holds a checkpoint while commits go on") {
    AllOff off;
    TempDir dir("mvkv-failpoint-test");
    auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
    auto s = e->openSession();
    mustOk(s->createCollection("a.b"));
    mustOk(s->put("a.b", "k", "v"));
    const uint64_t at = configureFailPoint("hangBeforeCheckpointRename", "times 1").value();
    Status result = Status::Internal("not run");
    std::thread checkpointer([&] { result = e->checkpoint(); });
    REQUIRE(waitForFailPoint("hangBeforeCheckpointRename", at + 1, kLong).ok());
    mustOk(s->put("a.b", "during", "v"));
    set("hangBeforeCheckpointRename", "off");
    checkpointer.join();
    CHECK(result.ok());
    CHECK(e->stats().checkpoint.count == 1);
}

TEST_CASE("failpoint: pauseHistorySweep and pauseTtlMonitor skip background passes, not explicit ones") {
    AllOff off;
    EngineOptions o;
    o.historySweepInterval = 1ms;
    auto e = openEngine(o);
    const uint64_t at = configureFailPoint("pauseHistorySweep", "alwaysOn").value();
    REQUIRE(waitForFailPoint("pauseHistorySweep", at + 3, kLong).ok());
    const uint64_t passes = e->stats().history.sweepPasses;
    REQUIRE(waitForFailPoint("pauseHistorySweep", at + 6, kLong).ok());
    // A background pass that began before the failpoint fired may end now,
    // but none begins while it is on.
    CHECK(e->stats().history.sweepPasses <= passes + 1);
    e->sweepHistory();  // explicit: runs
    CHECK(e->stats().history.sweepPasses >= passes + 1);
}

TEST_CASE("failpoint: abortProcess kills the process at the named crash point, and the directory reopens") {
    AllOff off;
    for (const char* point : {"afterOplogAppend", "beforeCheckpointRename", "afterCheckpointRename"}) {
        CAPTURE(std::string(point));
        TempDir dir("mvkv-failpoint-test");
        pid_t pid = fork();
        if (pid == 0) {
            auto r = Engine::open(onDisk(dir.path, oplog::SyncMode::kFsync));
            if (!r.ok()) _exit(2);
            auto& e = *r.value();
            auto s = e.openSession();
            if (!s->createCollection("a.b").ok() || !s->put("a.b", "acked", "v").ok()) _exit(3);
            if (!configureFailPoint("abortProcess", std::string("alwaysOn key=") + point).ok())
                _exit(4);
            (void)s->put("a.b", "last", "v");
            (void)e.checkpoint();
            _exit(0);  // the crash point was never reached
        }
        int st = 0;
        waitpid(pid, &st, 0);
        REQUIRE(WIFSIGNALED(st));
        CHECK(WTERMSIG(st) == SIGKILL);
        auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kFsync));
        auto s = e->openSession();
        CHECK(getOr(*s, "a.b", "acked") == "v");
        // Killed after the append (fsync mode): the record is in the log, so
        // the unacknowledged commit comes back; later points follow it.
        CHECK(getOr(*s, "a.b", "last") == "v");
    }
}

// The environment is read once per process, at its first Engine::open:
// each case runs in a fresh process (this binary again, running only the
// skipped case below).
TEST_CASE("failpoint: MVKV_FAILPOINTS configures failpoints at the first open, and a bad one fails it") {
    TempDir dir("mvkv-failpoint-test");
    for (const char* expect : {"good", "bad"}) {
        CAPTURE(std::string(expect));
        // The child case leaves it: a filter that ran nothing would pass too.
        const std::string marker = dir.path + "/ran-" + expect;
        pid_t pid = fork();
        if (pid == 0) {
            setenv("MVKV_FAILPOINT_TEST_EXPECT", expect, 1);
            setenv("MVKV_FAILPOINT_TEST_MARKER", marker.c_str(), 1);
            setenv("MVKV_FAILPOINTS",
                   std::string(expect) == "bad"
                       ? "pauseTtlMonitor times 2; noSuchPoint alwaysOn"
                       : "pauseTtlMonitor times 2; writeConflictOnKey alwaysOn key=x",
                   1);
            execl("/proc/self/exe", "failpoint_test", "--no-skip=true",
                  "--test-case=failpoint environment child*", "--exit=true", nullptr);
            _exit(127);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        REQUIRE(WIFEXITED(st));
        CHECK(WEXITSTATUS(st) == 0);
        CHECK(std::filesystem::exists(marker));
    }
}

TEST_CASE("failpoint environment child (run by the case above)" * doctest::skip()) {
    const char* expect = std::getenv("MVKV_FAILPOINT_TEST_EXPECT");
    REQUIRE(expect != nullptr);
    std::ofstream(std::getenv("MVKV_FAILPOINT_TEST_MARKER")) << "ran\n";
    auto r = Engine::open(EngineOptions{});
    if (std::string(expect) == "bad") {
        CHECK(r.status().code() == StatusCode::kNotFound);
        CHECK(r.status().message().find("MVKV_FAILPOINTS") != std::string::npos);
        CHECK(infoOf("pauseTtlMonitor").mode.kind == FailPointModeKind::kOff);  // all or nothing
        return;
    }
    REQUIRE_MESSAGE(r.ok(), r.status().toString());
    CHECK(infoOf("pauseTtlMonitor").mode.n == 2);
    CHECK(infoOf("writeConflictOnKey").data.key == "x");
}
