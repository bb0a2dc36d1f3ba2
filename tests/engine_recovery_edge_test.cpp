// Recovery and oplog edge cases found in review, each once a way to lose an
// acknowledged commit or to leave a directory that would not open: a
// segment-numbering gap after a cut, a transaction spanning a dropped
// collection, a drop racing a checkpoint, a catalog command that could not be
// logged, a checkpoint whose log position was not yet on disk, commits behind
// what an oplog reader already read, and checkpointsKept = 0.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "checkpoint/checkpoint_file.h"
#include "lockmgr/raii_locks.h"
#include "oplog/log_format.h"
#include "oplog/oplog_cursor.h"
#include "tests/engine_test_util.h"
#include "tests/temp_dir.h"

using namespace mvkv;
using namespace mvkv::engine;
using namespace mvkv::engine::testing;
using mvkv::testing::TempDir;
using namespace std::chrono_literals;

namespace {


EngineOptions smallSegmentsNoSync(const std::string& path) {
    EngineOptions o = onDisk(path, oplog::SyncMode::kNone);
    o.oplogSegmentBytes = 4096;
    return o;
}

}  // namespace

TEST_CASE("edge: a segment cut away at recovery leaves no numbering gap for the next one") {
    TempDir dir("mvkv-edge-test");
    uint64_t seg;
    {
        auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
        auto s = e->openSession();
        mustOk(s->createCollection("a.b"));
        mustOk(s->put("a.b", "k1", "v1"));
        seg = e->oplog()->end().segment;
    }
    // crash right after the writer created the next segment file (before its header)
    { std::ofstream(dir.path + "/" + oplog::segmentFileName(seg + 1)); }
    {
        auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
        CHECK(e->recovery().tailCut);
        auto s = e->openSession();
        CHECK(getOr(*s, "a.b", "k1") == "v1");
        mustOk(s->put("a.b", "k2", "v2"));  // acknowledged (write mode)
    }
    {
        auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
        auto s = e->openSession();
        CHECK(getOr(*s, "a.b", "k2") == "v2");
    }
}

TEST_CASE("edge: a transaction over two collections, the first dropped before the checkpoint, keeps the other write") {
    TempDir dir("mvkv-edge-test");
    {
        auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
        auto s = e->openSession();
        mustOk(s->createCollection("a.gone"));
        mustOk(s->createCollection("a.keep"));
        mustOk(s->begin());
        mustOk(s->put("a.keep", "k0", "v0"));
        mustOk(s->commit(5));
        mustOk(e->setStableTimestamp(5));
        mustOk(s->begin());
        mustOk(s->put("a.gone", "x", "1"));
        mustOk(s->put("a.keep", "k", "v"));
        mustOk(s->commit(10));
        mustOk(s->dropCollection("a.gone"));
        mustOk(e->checkpoint());  // C = stable = 5
    }
    {
        auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
        auto s = e->openSession();
        CHECK(getOr(*s, "a.keep", "k") == "v");
    }
}

TEST_CASE("edge: a transaction over two collections, the second dropped before the checkpoint, still opens") {
    TempDir dir("mvkv-edge-test");
    {
        auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
        auto s = e->openSession();
        mustOk(s->createCollection("a.gone"));
        mustOk(s->createCollection("a.keep"));
        mustOk(s->begin());
        mustOk(s->put("a.keep", "k0", "v0"));
        mustOk(s->commit(5));
        mustOk(e->setStableTimestamp(5));
        mustOk(s->begin());
        mustOk(s->put("a.keep", "k", "v"));
        mustOk(s->put("a.gone", "x", "1"));
        mustOk(s->commit(10));
        mustOk(s->dropCollection("a.gone"));
        mustOk(e->checkpoint());
    }
    {
        auto r = Engine::open(onDisk(dir.path, oplog::SyncMode::kWrite));
        CHECK_MESSAGE(r.ok(), r.status().toString());
    }
}

TEST_CASE("edge: a commit below what an oplog reader read is refused, even holding an equal timestamp") {
    TempDir dir("mvkv-edge-test");
    auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
    auto s = e->openSession();
    auto h = e->openSession();
    mustOk(s->createCollection("a.b"));
    mustOk(s->begin());
    mustOk(s->put("a.b", "k1", "v"));
    mustOk(s->commit(100));
    e->oplog()->refreshVisibility();
    auto cur = e->openOplogCursor({}).value();
    std::vector<oplog::OplogEntry> out;
    mustOk(cur->next(&out, 1000));
    REQUIRE(!out.empty());
    CHECK(out.back().ts == 100);
    // Holding 100 (what the reader read) is refused, and so is 99.
    mustOk(h->begin());
    CHECK(h->timestampTransaction(100).code() == StatusCode::kInvalidArgument);
    mustOk(h->abort());
    mustOk(s->begin());
    mustOk(s->put("a.b", "k2", "v"));
    CHECK(s->timestampTransaction(100).code() == StatusCode::kInvalidArgument);
    Status c = s->commit(99);
    CHECK(c.code() == StatusCode::kInvalidArgument);
    CHECK(c.message().find("timestamp order") != std::string::npos);
    // Nothing new for the reader, and nothing a fresh reader sees that it did not.
    e->oplog()->refreshVisibility();
    out.clear();
    mustOk(cur->next(&out, 1000));
    CHECK(out.empty());
    auto fresh = e->openOplogCursor({}).value();
    mustOk(fresh->next(&out, 1000));
    CHECK(out.size() == 2);  // the create and ts 100
}

TEST_CASE("edge: checkpointsKept = 0 is refused (it would leave a capped log with no checkpoint)") {
    TempDir dir("mvkv-edge-test");
    EngineOptions o = onDisk(dir.path, oplog::SyncMode::kWrite);
    o.checkpointsKept = 0;
    auto r = Engine::open(o);
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK(r.status().message().find("checkpointsKept") != std::string::npos);
}

TEST_CASE("edge: a drop waiting to log does not change the catalog under a checkpoint") {
    TempDir dir("mvkv-edge-test");
    {
        auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
        auto s = e->openSession();
        mustOk(s->createCollection("a.c"));
        mustOk(s->begin());
        mustOk(s->put("a.c", "k", "v"));
        mustOk(s->commit(10));
        mustOk(e->setStableTimestamp(5));
        // Another locker holds `local`, so the drop waits to log; it must not
        // have dropped the collection from the catalog meanwhile.
        lockmgr::Locker other(e->lockManager());
        auto hold = std::make_unique<lockmgr::DBLock>(other, "local", lockmgr::LockMode::kS);
        REQUIRE(hold->status().ok());
        std::thread dropper([&] {
            auto d = e->openSession();
            mustOk(d->dropCollection("a.c"));
        });
        std::this_thread::sleep_for(20ms);
        // Wherever the dropper is, it cannot have changed the catalog yet.
        CHECK(e->listCollections("a").size() == 1);
        // The checkpoint's read of a.c waits for the dropper's X lock, which
        // waits for `local`: let it go a moment later, from another thread
        // (the locker is used by one thread at a time).
        std::thread releaser([&] {
            std::this_thread::sleep_for(50ms);
            hold.reset();
        });
        mustOk(e->checkpoint());  // C = 5; the write at 10 is before P
        releaser.join();
        dropper.join();
        CHECK(e->listCollections("a").empty());
    }
    auto r = Engine::open(onDisk(dir.path, oplog::SyncMode::kWrite));
    REQUIRE_MESSAGE(r.ok(), r.status().toString());
    CHECK(r.value()->listCollections("a").empty());
}

TEST_CASE("edge: a create that cannot take the oplog's lock changes nothing") {
    TempDir dir("mvkv-edge-test");
    EngineOptions o = onDisk(dir.path, oplog::SyncMode::kWrite);
    o.lockTimeout = std::chrono::milliseconds(50);
    {
        auto e = openEngine(o);
        auto s = e->openSession();
        {
            lockmgr::Locker other(e->lockManager());
            lockmgr::DBLock hold(other, "local", lockmgr::LockMode::kS);
            REQUIRE(hold.status().ok());
            CHECK(s->createCollection("a.c").code() == StatusCode::kLockTimeout);
        }
        CHECK(e->listCollections("a").empty());
        CHECK(s->put("a.c", "k", "v").code() == StatusCode::kNamespaceNotFound);
        mustOk(s->createCollection("a.c"));
        mustOk(s->put("a.c", "k", "v"));
    }
    auto r = Engine::open(o);
    REQUIRE_MESSAGE(r.ok(), r.status().toString());
    CHECK(getOr(*r.value()->openSession(), "a.c", "k") == "v");
}

TEST_CASE("edge: a crash after a checkpoint in sync none: the log up to its position is on disk, new records come after it") {
    TempDir dir("mvkv-edge-test");
    pid_t pid = fork();
    if (pid == 0) {
        auto r = Engine::open(smallSegmentsNoSync(dir.path));
        if (!r.ok()) _exit(2);
        auto& e = *r.value();
        auto s = e.openSession();
        if (!s->createCollection("a.b").ok()) _exit(3);
        std::string v(1000, 'x');
        for (int i = 0; i < 300; ++i)  // > 256 KiB: written out
            if (!s->put("a.b", "k" + std::to_string(i), v).ok()) _exit(4);
        // now enough to roll into a new segment but stay buffered
        auto before = e.oplog()->end();
        int i = 0;
        while (e.oplog()->end().segment == before.segment || e.oplog()->end().offset < 2000)
            if (!s->put("a.b", "z" + std::to_string(i++), std::string(200, 'y')).ok()) _exit(5);
        if (!e.checkpoint().ok()) _exit(6);
        _exit(0);  // crash: the buffered records never reach the file
    }
    int st = 0;
    waitpid(pid, &st, 0);
    REQUIRE(WIFEXITED(st));
    REQUIRE(WEXITSTATUS(st) == 0);
    {
        auto e = openEngine(smallSegmentsNoSync(dir.path));
        auto s = e->openSession();
        mustOk(s->createCollection("a.new"));
        mustOk(s->put("a.new", "k", "v"));
    }
    auto r = Engine::open(smallSegmentsNoSync(dir.path));
    REQUIRE_MESSAGE(r.ok(), r.status().toString());
    auto s = r.value()->openSession();
    CHECK(getOr(*s, "a.new", "k") == "v");
}

// A commit can log after the checkpoint takes its log position P and finish
// before it chooses its timestamp C: the checkpoint then holds it (C is at
// least its timestamp) and recovery must not replay it again at or below C.
TEST_CASE("edge: a commit logged between the checkpoint's position and its timestamp is not replayed below it") {
    TempDir dir("mvkv-edge-test");
    pid_t pid = fork();
    if (pid == 0) {
        auto r = Engine::open(onDisk(dir.path, oplog::SyncMode::kNone));
        if (!r.ok()) _exit(2);
        auto& e = *r.value();
        auto s = e.openSession();
        if (!s->createCollection("a.b").ok()) _exit(3);
        if (!s->put("a.b", "k", "v1").ok()) _exit(4);
        // Out of log order: ts 1000 reserved first, ts 2000 logged first.
        auto late = e.openSession();
        if (!late->begin().ok() || !late->timestampTransaction(1000).ok() ||
            !late->put("a.b", "j", "late").ok())
            _exit(5);
        if (!s->begin().ok() || !s->put("a.b", "k", "v2").ok() || !s->commit(2000).ok()) _exit(6);
        bool ran = false;
        e.setCheckpointPositionTestHook([&] {
            if (ran) return;
            ran = true;
            std::thread t([&] {
                if (!late->commit().ok()) _exit(7);
                auto other = e.openSession();
                if (!other->put("a.b", "k", "v3").ok()) _exit(8);
            });
            t.join();
        });
        if (!e.checkpoint().ok()) _exit(9);
        if (!ran) _exit(10);
        _exit(0);  // crash: recovery starts from the checkpoint
    }
    int st = 0;
    waitpid(pid, &st, 0);
    REQUIRE(WIFEXITED(st));
    REQUIRE(WEXITSTATUS(st) == 0);
    auto r = Engine::open(onDisk(dir.path, oplog::SyncMode::kNone));
    REQUIRE_MESSAGE(r.ok(), r.status().toString());
    auto& e = *r.value();
    auto s = e.openSession();
    CHECK(getOr(*s, "a.b", "k") == "v3");
    CHECK(getOr(*s, "a.b", "j") == "late");
    CHECK(e.recovery().recordsReplayed == 0);
}

// Replay applies catalog commands without their timestamps: the clock and
// the no-holes point once stopped at the newest data commit, so a command
// that was the log's last record stayed invisible to oplog readers, and the
// next commit took the command's timestamp again (a replica resuming after
// that timestamp would have skipped the commit).
TEST_CASE("edge: a catalog command that was the log's last record is visible after a restart, and later commits come after it") {
    TempDir dir("mvkv-edge-test");
    mvcc::Timestamp commandTs = 0;
    {
        auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
        auto s = e->openSession();
        mustOk(s->createCollection("a.b"));
        mustOk(s->put("a.b", "k", "v"));
        mustOk(s->createCollection("a.c"));  // the last record
        e->oplog()->refreshVisibility();
        auto cur = e->openOplogCursor({}).value();
        std::vector<oplog::OplogEntry> out;
        mustOk(cur->next(&out, 1000));
        REQUIRE(out.size() == 3);
        commandTs = out.back().ts;
    }
    auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
    e->oplog()->refreshVisibility();
    std::vector<oplog::OplogEntry> out;
    mustOk(e->openOplogCursor({}).value()->next(&out, 1000));
    REQUIRE(out.size() == 3);
    CHECK(out.back().ns == "a.c");
    CHECK(e->timestamps().clock >= commandTs);
    auto s = e->openSession();
    mustOk(s->put("a.b", "k2", "v"));
    CHECK(s->lastCommitTs() > commandTs);
}

// A prepared transaction committed into a collection dropped afterwards:
// its commit record holds only writes to the dropped collection, so replay
// filters the whole record out; the prepare record (above the checkpoint's
// timestamp) stayed pending, was rebuilt as prepared into a collection that
// no longer exists, and the directory never opened again.
TEST_CASE("edge: a committed prepared transaction whose collection was dropped is not rebuilt as prepared") {
    TempDir dir("mvkv-edge-test");
    {
        auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
        auto s = e->openSession();
        mustOk(s->createCollection("a.x"));
        mustOk(s->createCollection("a.keep"));
        mustOk(s->begin());
        mustOk(s->put("a.keep", "k0", "v0"));
        mustOk(s->commit(5));
        mustOk(e->setStableTimestamp(5));
        mustOk(s->begin());
        mustOk(s->put("a.x", "k", "v"));
        mustOk(s->prepare(10));
        mustOk(s->commit(10, 10));
        mustOk(s->dropCollection("a.x"));
        mustOk(e->checkpoint());  // C = stable = 5: the prepare (10) is replayed
    }
    auto r = Engine::open(onDisk(dir.path, oplog::SyncMode::kWrite));
    REQUIRE_MESSAGE(r.ok(), r.status().toString());
    auto& e = *r.value();
    CHECK(e.preparedTransactions().empty());
    auto s = e.openSession();
    CHECK(getOr(*s, "a.keep", "k0") == "v0");
    CHECK(s->createCollection("a.x").ok());  // it is gone
}

// Capping once used the oldest kept checkpoint's timestamp alone. A newer
// checkpoint with a lower timestamp (stable set below all_durable, which
// checkpoints follow until stable is set) needs every record above its own
// timestamp: those in (its timestamp, the older one's] were capped away,
// and the next open lost them without a word.
TEST_CASE("edge: capping keeps what every kept checkpoint needs when a newer one has a lower timestamp") {
    TempDir dir("mvkv-edge-test");
    EngineOptions o = onDisk(dir.path, oplog::SyncMode::kWrite);
    o.oplogSegmentBytes = 4096;
    o.oplogCapBytes = 1;
    o.checkpointsKept = 2;
    o.checkpointInterval = std::chrono::milliseconds(0);
    const std::string value(500, 'v');
    {
        auto e = openEngine(o);
        auto s = e->openSession();
        mustOk(s->createCollection("a.b"));
        for (int i = 0; i < 50; ++i) {
            mustOk(s->begin());
            mustOk(s->put("a.b", "k" + std::to_string(i), value));
            mustOk(s->commit(10 + i));
        }
        mustOk(e->checkpoint());  // A: C = all_durable = 59
        mustOk(e->setStableTimestamp(20));
        for (int i = 50; i < 60; ++i) {
            mustOk(s->begin());
            mustOk(s->put("a.b", "k" + std::to_string(i), value));
            mustOk(s->commit(100 + i));
        }
        mustOk(e->checkpoint());  // B: C = stable = 20
        mustOk(e->checkpoint());  // and once more: B is the oldest kept now
    }
    auto e = openEngine(o);
    auto s = e->openSession();
    CHECK(e->recovery().checkpointTs == 20);
    for (int i = 0; i < 60; ++i) {
        CAPTURE(i);
        CHECK(getOr(*s, "a.b", "k" + std::to_string(i)) == value);
    }
}
