// Checkpoints and recovery from them (engine/checkpointer.h, docs/oplog.md):
// a reopened engine loads the newest valid checkpoint and replays the log
// after it; old snapshots read down to the checkpoint's timestamp; a corrupt
// newest checkpoint falls back to the previous one; a crash in the middle of
// a checkpoint loses nothing acknowledged; a checkpoint's timestamp stays
// pinned while oldest moves past it and history is swept (a test hook runs
// between choosing it and reading at it), and a thread that moves oldest
// after every commit fails none of 200 checkpoints (TEST_SUITE
// "concurrency", also run under ThreadSanitizer: tests/meson.build); the
// stats count attempts and failures by reason.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "checkpoint/checkpoint_file.h"
#include "tests/engine_test_util.h"
#include "tests/temp_dir.h"

using namespace mvkv;
using namespace mvkv::engine;
using namespace mvkv::checkpoint;
using namespace mvkv::engine::testing;
using mvkv::testing::TempDir;
using namespace std::chrono_literals;

namespace {


std::string readAt(Engine& e, std::string_view ns, std::string_view key, mvcc::Timestamp ts) {
    auto s = e.openSession();
    Status b = s->begin({ts, false});
    if (!b.ok())
        return "<" + std::string(statusCodeName(b.code())) + ">";
    std::string v = getOr(*s, ns, key);
    mustOk(s->commit());
    return v;
}

void flipByte(const std::string& path, uint64_t offset) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x40);
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(&c, 1);
}

}  // namespace

TEST_CASE("checkpoint: reopen loads it and replays only what came after; old reads go down to it") {
    TempDir dir("mvkv-checkpoint-test");
    {
        auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
        auto s = engine->openSession();
        mustOk(s->createCollection("app.users"));
        mustOk(s->begin());
        mustOk(s->put("app.users", "alice", "a10"));
        mustOk(s->put("app.users", "bob", "b10"));
        mustOk(s->commit(10));
        mustOk(s->begin());
        mustOk(s->put("app.users", "alice", "a20"));
        mustOk(s->remove("app.users", "bob"));
        mustOk(s->commit(20));
        mustOk(engine->setStableTimestamp(20));
        mustOk(s->begin());
        mustOk(s->put("app.users", "carol", "c30"));  // after stable: not in the checkpoint
        mustOk(s->commit(30));
        mustOk(engine->checkpoint());
        CheckpointStats cs = engine->stats().checkpoint;
        CHECK(cs.count == 1);
        CHECK(cs.lastTs == 20);
        CHECK(cs.lastEntries == 1);  // alice (bob was deleted at 20; carol is newer)
        // A commit at or below the checkpoint's timestamp is refused from now on.
        mustOk(s->begin());
        mustOk(s->put("app.users", "x", "x"));
        Status late = s->commit(20);
        CHECK(late.code() == StatusCode::kInvalidArgument);
        mustOk(s->begin());
        mustOk(s->put("app.users", "dave", "d40"));
        mustOk(s->commit(40));
    }
    auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
    const RecoveryStats& r = engine->recovery();
    CHECK(r.checkpointLoaded);
    CHECK(r.checkpointTs == 20);
    CHECK(r.checkpointEntries == 1);
    CHECK(r.recordsReplayed == 2);  // carol at 30, dave at 40; the rest the checkpoint held
    CHECK(r.recordsInLog > r.recordsReplayed);
    auto s = engine->openSession();
    CHECK(scanAll(*s, "app.users") == "alice=a20,carol=c30,dave=d40");
    CHECK(readAt(*engine, "app.users", "carol", 20) == "<NotFound>");
    CHECK(readAt(*engine, "app.users", "carol", 30) == "c30");
    CHECK(readAt(*engine, "app.users", "dave", 30) == "<NotFound>");
    CHECK(readAt(*engine, "app.users", "alice", 20) == "a20");
    // Below the checkpoint the history is gone: refused, not silently empty.
    CHECK(readAt(*engine, "app.users", "alice", 10) == "<InvalidArgument>");
    CHECK(engine->timestamps().oldest == 20);
    // Stable is unset again, so the next checkpoint follows all_durable
    // rather than rewriting this one; stable cannot go below oldest.
    CHECK(engine->timestamps().stable == mvcc::kNoTimestamp);
    CHECK(engine->setStableTimestamp(10).code() == StatusCode::kInvalidArgument);
    mustOk(engine->checkpoint());
    CHECK(engine->stats().checkpoint.lastTs == 40);
}

TEST_CASE("checkpoint: with no stable timestamp it is taken at all_durable") {
    TempDir dir("mvkv-checkpoint-test");
    {
        auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
        auto s = engine->openSession();
        mustOk(s->createCollection("db.c"));
        for (int i = 0; i < 100; ++i)
            mustOk(s->put("db.c", "k" + std::to_string(i), std::to_string(i)));
        mustOk(engine->checkpoint());
        CHECK(engine->stats().checkpoint.lastEntries == 100);
        CHECK(engine->stats().checkpoint.lastTs == engine->timestamps().allDurable);
        mustOk(s->put("db.c", "k0", "after"));
    }
    auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
    CHECK(engine->recovery().checkpointEntries == 100);
    CHECK(engine->recovery().recordsReplayed == 1);
    auto s = engine->openSession();
    CHECK(getOr(*s, "db.c", "k0") == "after");
    CHECK(getOr(*s, "db.c", "k99") == "99");
}

TEST_CASE("checkpoint: a write to a collection dropped and re-created before the checkpoint stays dropped") {
    TempDir dir("mvkv-checkpoint-test");
    {
        auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
        auto s = engine->openSession();
        mustOk(s->createCollection("db.x"));
        mustOk(s->put("db.x", "k0", "v0"));
        mustOk(engine->setStableTimestamp(engine->timestamps().clock));
        // Newer than stable, so logged before the checkpoint but not in it.
        mustOk(s->put("db.x", "old", "of the dropped collection"));
        mustOk(s->dropCollection("db.x"));
        mustOk(s->createCollection("db.x"));
        mustOk(s->put("db.x", "new", "of the new one"));
        mustOk(engine->checkpoint());
    }
    auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
    auto s = engine->openSession();
    CHECK(scanAll(*s, "db.x") == "new=of the new one");
}

TEST_CASE("checkpoint: a corrupt newest checkpoint falls back to the previous one") {
    TempDir dir("mvkv-checkpoint-test");
    {
        auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
        auto s = engine->openSession();
        mustOk(s->createCollection("db.c"));
        mustOk(s->put("db.c", "a", "1"));
        mustOk(engine->checkpoint());
        mustOk(s->put("db.c", "b", "2"));
        mustOk(engine->checkpoint());
        mustOk(s->put("db.c", "c", "3"));
    }
    auto listed = listCheckpoints(dir.path);
    REQUIRE(listed.ok());
    REQUIRE(listed.value().size() == 2);
    const std::string newest = listed.value().front().path;
    for (uint64_t offset : {uint64_t{30}, std::filesystem::file_size(newest) / 2,
                            std::filesystem::file_size(newest) - 3}) {
        CAPTURE(offset);
        flipByte(newest, offset);
        {
            auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
            const RecoveryStats& r = engine->recovery();
            CHECK(r.checkpointsSkipped == 1);
            CHECK(r.checkpointNumber == listed.value().back().number);
            CHECK_FALSE(r.checkpointSkipReason.empty());
            CHECK(scanAll(*engine->openSession(), "db.c") == "a=1,b=2,c=3");
        }
        flipByte(newest, offset);  // repaired: the newest is used again
        auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
        CHECK(engine->recovery().checkpointsSkipped == 0);
        CHECK(engine->recovery().checkpointNumber == listed.value().front().number);
    }
    // Every checkpoint corrupt: the whole log is still there (nothing was
    // capped), so recovery replays it from the start.
    auto all = listCheckpoints(dir.path);
    REQUIRE(all.ok());
    for (const auto& f : all.value())
        flipByte(f.path, 30);
    auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
    CHECK_FALSE(engine->recovery().checkpointLoaded);
    CHECK(engine->recovery().checkpointsSkipped >= 2);
    CHECK(scanAll(*engine->openSession(), "db.c") == "a=1,b=2,c=3");
}

TEST_CASE("checkpoint: a newest checkpoint whose collection options the engine refuses is skipped as corrupt") {
    // The file format checks only its own fields (checkpoint/checkpoint_file.h);
    // the engine checks the options it loads, and falls back as for damage.
    TempDir dir("mvkv-checkpoint-test");
    {
        auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
        auto s = engine->openSession();
        mustOk(s->createCollection("db.c"));
        mustOk(s->put("db.c", "a", "1"));
        mustOk(engine->checkpoint());
        mustOk(s->put("db.c", "b", "2"));
    }
    auto listed = listCheckpoints(dir.path);
    REQUIRE_OK(listed.status());
    REQUIRE(listed.value().size() == 1);
    const uint64_t good = listed.value().front().number;
    CheckpointMeta bad;
    bad.number = good + 1;
    bad.ts = 1;
    bad.collections = {"db.c"};
    bad.options = {StoredCollectionOptions{true, 0, 0, std::nullopt}};  // capped, size 0
    auto writer = CheckpointWriter::create(dir.path, bad);
    REQUIRE_OK(writer.status());
    mustOk(writer.value()->add(0, "z", "9", 1));
    mustOk(writer.value()->finish());
    mustOk(verifyCheckpoint(writer.value()->path(), nullptr));  // a well-formed file

    auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
    const RecoveryStats& r = engine->recovery();
    CHECK(r.checkpointsSkipped == 1);
    CHECK(r.checkpointNumber == good);
    CHECK(r.checkpointSkipReason.find("db.c") != std::string::npos);
    CHECK(scanAll(*engine->openSession(), "db.c") == "a=1,b=2");
}

TEST_CASE("checkpoint: every checkpoint corrupt after the oplog was capped is refused, clearly") {
    TempDir dir("mvkv-checkpoint-test");
    EngineOptions o = onDisk(dir.path, oplog::SyncMode::kWrite);
    o.oplogSegmentBytes = 4096;
    o.oplogCapBytes = 8192;
    o.checkpointsKept = 1;
    {
        auto engine = openEngine(o);
        auto s = engine->openSession();
        mustOk(s->createCollection("db.c"));
        for (int i = 0; i < 300; ++i)
            mustOk(s->put("db.c", "k" + std::to_string(i % 20), std::string(100, 'v')));
        mustOk(engine->checkpoint());
        REQUIRE(engine->oplog()->stats().segmentsDropped > 0);
    }
    auto all = listCheckpoints(dir.path);
    REQUIRE(all.ok());
    for (const auto& f : all.value())
        flipByte(f.path, 30);
    auto refused = Engine::open(o);
    CHECK(refused.status().code() == StatusCode::kCorruption);
    CHECK(refused.status().message().find("cannot be recovered") != std::string::npos);
}

TEST_CASE("checkpoint: SIGKILL during checkpoints loses no acknowledged commit") {
    for (int seed = 1; seed <= 4; ++seed) {
        CAPTURE(seed);
        TempDir dir("mvkv-checkpoint-test");
        int ack[2];
        REQUIRE(pipe(ack) == 0);
        pid_t child = fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            // Two writer threads commit pairs; a third checkpoints without
            // pause (and so caps the small oplog), until the kill.
            close(ack[0]);
            EngineOptions o = onDisk(dir.path, oplog::SyncMode::kFsync);
            o.oplogSegmentBytes = 8192;
            o.oplogCapBytes = 16384;
            auto opened = Engine::open(o);
            if (!opened.ok())
                _exit(2);
            auto engine = std::move(opened).value();
            if (!engine->openSession()->createCollection("db.c").ok())
                _exit(3);
            std::thread checkpoints([&] {
                for (;;)
                    if (!engine->checkpoint().ok())
                        _exit(6);
            });
            auto writer = [&](int w) {
                auto s = engine->openSession();
                for (int i = 0;; ++i) {
                    std::string n = std::to_string(w) + "-" + std::to_string(i);
                    Status st = s->withTransaction([&](Session& t) {
                        Status a = t.put("db.c", "a" + n, n);
                        return a.ok() ? t.put("db.c", "b" + n, n) : a;
                    });
                    if (!st.ok())
                        _exit(4);
                    std::string line = n + "\n";
                    if (write(ack[1], line.data(), line.size()) < 0)
                        _exit(5);
                }
            };
            std::thread w1(writer, 1);
            writer(2);
        }
        close(ack[1]);
        std::mt19937 rng(static_cast<unsigned>(seed));
        const int target = 30 + static_cast<int>(rng() % 300);
        std::vector<std::string> acked;
        std::string buffered;
        char buf[4096];
        while (static_cast<int>(acked.size()) < target) {
            ssize_t n = read(ack[0], buf, sizeof(buf));
            REQUIRE(n > 0);
            buffered.append(buf, size_t(n));
            size_t nl;
            while ((nl = buffered.find('\n')) != std::string::npos) {
                acked.push_back(buffered.substr(0, nl));
                buffered.erase(0, nl + 1);
            }
        }
        kill(child, SIGKILL);
        int status = 0;
        waitpid(child, &status, 0);
        close(ack[0]);
        REQUIRE(WIFSIGNALED(status));
        auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
        auto s = engine->openSession();
        for (const std::string& n : acked) {
            CHECK_MESSAGE(getOr(*s, "db.c", "a" + n) == n, "acknowledged commit ", n, " lost");
            CHECK(getOr(*s, "db.c", "b" + n) == n);
        }
        // No half transaction anywhere.
        auto c = s->openCursor("db.c");
        REQUIRE(c.ok());
        size_t as = 0, bs = 0;
        for (mustOk(c.value()->first()); c.value()->valid(); mustOk(c.value()->next()))
            (c.value()->key()[0] == 'a' ? as : bs) += 1;
        CHECK(as == bs);
        c.value().reset();
        mustOk(s->put("db.c", "after", "crash"));
        mustOk(engine->checkpoint());
    }
}

namespace {

// Every entry of a checkpoint file as "ns:key=value", in file order.
std::string checkpointContents(const std::string& path) {
    CheckpointMeta meta;
    std::string out;
    mustOk(readCheckpoint(path, &meta, [&](uint32_t c, std::string_view k, std::string_view v) {
        out += (out.empty() ? "" : ",") + meta.collections[c] + ":" + std::string(k) + "=" +
               std::string(v);
        return Status::OK();
    }));
    return out;
}

Status commitAt(Session& s, mvcc::Timestamp ts, const std::function<void(Session&)>& writes) {
    if (Status b = s.begin(); !b.ok())
        return b;
    writes(s);
    return s.commit(ts);
}

}  // namespace

TEST_CASE(
    "checkpoint: oldest and stable moved past C and history swept while it runs; it reads the "
    "state at C") {
    TempDir dir("mvkv-checkpoint-test");
    {
        auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
        auto s = engine->openSession();
        mustOk(s->createCollection("db.c"));
        mustOk(commitAt(*s, 10, [](Session& t) {
            mustOk(t.put("db.c", "a", "a10"));
            mustOk(t.put("db.c", "b", "b10"));
            mustOk(t.put("db.c", "c", "c10"));
        }));
        mustOk(commitAt(*s, 20, [](Session& t) {
            mustOk(t.put("db.c", "a", "a20"));
            mustOk(t.remove("db.c", "b"));
        }));
        mustOk(engine->setStableTimestamp(20));
        mustOk(engine->setOldestTimestamp(20));
        int calls = 0;
        engine->setCheckpointTestHook([&](mvcc::Timestamp c) {
            ++calls;
            CHECK(c == 20);
            // Between choosing C and reading at C: replace every version the
            // read needs, move oldest and stable past C, and sweep. Without
            // the pin the sweep would free a20 and c10 (their replacements
            // are at or below oldest) and the read at 20 would be refused.
            auto w = engine->openSession();
            mustOk(commitAt(*w, 30, [](Session& t) {
                mustOk(t.put("db.c", "a", "a30"));
                mustOk(t.put("db.c", "c", "c30"));
            }));
            mustOk(commitAt(*w, 40, [](Session& t) {
                mustOk(t.put("db.c", "b", "b40"));
                mustOk(t.remove("db.c", "c"));
            }));
            mustOk(engine->setStableTimestamp(40));
            mustOk(engine->setOldestTimestamp(40));
            engine->sweepHistory();
            engine->sweepHistory();
            CHECK(engine->timestamps().oldest == 40);
            CHECK(engine->timestamps().pinned == 20);     // the checkpoint's pin
            CHECK(engine->stats().history.pinned == 20);  // the sweep's horizon
            // The pin is the checkpoint's: anyone else's read at 20 is refused.
            CHECK(readAt(*engine, "db.c", "a", 20) == "<InvalidArgument>");
        });
        mustOk(engine->checkpoint());
        CHECK(calls == 1);
        engine->setCheckpointTestHook({});
        CheckpointStats cs = engine->stats().checkpoint;
        CHECK(cs.lastTs == 20);
        CHECK(cs.failures == 0);
        CHECK(engine->timestamps().pinned == 40);  // released with the read
        auto listed = listCheckpoints(dir.path);
        REQUIRE(listed.ok());
        REQUIRE(listed.value().size() == 1);
        CHECK(checkpointContents(listed.value().front().path) == "db.c:a=a20,db.c:c=c10");
        mustOk(commitAt(*s, 50, [](Session& t) { mustOk(t.put("db.c", "d", "d50")); }));
    }
    auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
    const RecoveryStats& r = engine->recovery();
    CHECK(r.checkpointLoaded);
    CHECK(r.checkpointTs == 20);
    CHECK(r.checkpointEntries == 2);
    CHECK(r.recordsReplayed == 3);  // 30, 40 and 50
    CHECK(scanAll(*engine->openSession(), "db.c") == "a=a30,b=b40,d=d50");
    CHECK(readAt(*engine, "db.c", "a", 20) == "a20");
    CHECK(readAt(*engine, "db.c", "c", 30) == "c30");
    CHECK(readAt(*engine, "db.c", "c", 40) == "<NotFound>");
}

TEST_CASE("checkpoint: status counts attempts, failures by reason, the last failure and C") {
    TempDir dir("mvkv-checkpoint-test");
    auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
    auto s = engine->openSession();
    mustOk(s->createCollection("db.c"));
    mustOk(commitAt(*s, 10, [](Session& t) { mustOk(t.put("db.c", "a", "a10")); }));
    mustOk(engine->setStableTimestamp(10));
    mustOk(engine->setOldestTimestamp(10));

    // Busy: a running transaction holds timestamp 11 and oldest moved to it.
    auto holder = engine->openSession();
    mustOk(holder->begin());
    mustOk(holder->timestampTransaction(11));
    mustOk(engine->setStableTimestamp(11));
    mustOk(engine->setOldestTimestamp(11));
    CHECK(engine->checkpoint().code() == StatusCode::kBusy);
    mustOk(holder->abort());

    // IOError: the temp file vanishes before it is renamed into place.
    mustOk(commitAt(*s, 12, [](Session& t) { mustOk(t.put("db.c", "a", "a12")); }));
    mustOk(engine->setStableTimestamp(12));
    engine->setCheckpointTestHook([&](mvcc::Timestamp) {
        for (const auto& e : std::filesystem::directory_iterator(dir.path))
            if (e.path().extension() == ".tmp")
                std::filesystem::remove(e.path());
    });
    Status io = engine->checkpoint();
    CHECK(io.code() == StatusCode::kIOError);
    engine->setCheckpointTestHook({});

    CheckpointStats cs = engine->stats().checkpoint;
    CHECK(cs.started == 2);
    CHECK(cs.count == 0);
    CHECK(cs.failures == 2);
    CHECK(cs.failuresByReason == std::map<std::string, uint64_t>{{"Busy", 1}, {"IOError", 1}});
    CHECK(cs.lastAttemptTs == 12);
    CHECK(cs.lastFailureTs == 12);
    CHECK(cs.lastFailure == io.toString());
    CHECK(cs.lastError == io.message());

    mustOk(engine->checkpoint());
    auto j = nlohmann::json::parse(engine->statsJson())["checkpoint"];
    CHECK(j["started"] == 3);
    CHECK(j["count"] == 1);
    CHECK(j["failures"] == 2);
    CHECK(j["failuresByReason"] == nlohmann::json{{"Busy", 1}, {"IOError", 1}});
    CHECK(j["lastAttemptTimestamp"] == 12);
    CHECK(j["lastTimestamp"] == 12);
    CHECK(j["lastError"] == "");               // the newest attempt succeeded
    CHECK(j["lastFailure"] == io.toString());  // kept
    CHECK(j["lastFailureTimestamp"] == 12);
}

namespace {

// The moving-oldest run (issue 15): a writer commits and, after every
// commit, sets stable = oldest = all_durable (legal: oldest <= stable),
// sweeping history every 16 commits; another thread takes `checkpoints`
// checkpoints. The two are paced by events, not time: before each
// checkpoint the writer is let run kLead commits further, and the
// checkpoint starts once it made kPace of them, so the writer is running
// (committing and moving oldest) while the checkpoint chooses C and reads at
// C, and the run stays bounded. Whether oldest passes C before the read
// begins then depends on scheduling, so every other checkpoint makes sure:
// its test hook (between choosing C and reading at C) waits for the writer's
// next commit, after which oldest is past C. The oplog is small, so
// successful checkpoints cap it. Each checkpoint written is read back and
// compared with the writer's state at its timestamp; at the end the engine
// is reopened from the last checkpoint plus the log and compared with the
// writer's last state.
struct MovingOldestRun {
    int succeeded = 0;
    int oldestPassedC = 0;  // checkpoints that found oldest past C just before their read
    int wrongContents = 0;  // checkpoints written that differ from the state at C
    std::string firstWrong;
    std::map<std::string, int> failures;  // StatusCode name -> count
    std::string firstFailure;
    uint64_t commits = 0;
    uint64_t segmentsDropped = 0;
    bool reopenedEqual = false;
};

MovingOldestRun movingOldestRun(int checkpoints) {
    constexpr uint64_t kPace = 20;
    constexpr uint64_t kLead = 4 * kPace;
    constexpr int kKeys = 64;
    TempDir dir("mvkv-checkpoint-test", TempDir::memoryBacked());
    EngineOptions o = onDisk(dir.path, oplog::SyncMode::kNone);
    o.oplogSegmentBytes = 8192;
    o.oplogCapBytes = 16384;
    std::map<std::string, std::string> expected;  // the writer's; read after the join
    struct Commit {
        mvcc::Timestamp ts;
        std::string key, value;
    };
    std::mutex historyMutex;
    std::vector<Commit> history;  // every commit, in commit order
    MovingOldestRun out;
    Status writerStatus;
    {
        auto engine = openEngine(o);
        mustOk(engine->openSession()->createCollection("db.c"));
        std::atomic<uint64_t> commits{0};
        std::atomic<uint64_t> gate{0};  // the writer commits while commits < gate
        std::atomic<bool> done{false};  // either side stopped
        int attempt = 0;
        // Runs on this thread, inside checkpoint(), just before the read at C.
        engine->setCheckpointTestHook([&](mvcc::Timestamp c) {
            if (attempt % 2 == 1) {
                // Let the writer go on until oldest has passed C. One more
                // commit is not always enough: the writer may already have
                // set stable (the checkpoint's C) to its newest commit and
                // not yet counted it, so the commit counted next moves
                // oldest only up to C.
                for (uint64_t n = commits.load();
                     engine->timestamps().oldest <= c && !done.load(); n = commits.load()) {
                    if (gate.load() <= n) {
                        gate.store(n + kPace);
                        gate.notify_all();
                    }
                    commits.wait(n);
                }
            }
            if (engine->timestamps().oldest > c)
                ++out.oldestPassedC;  // the checkpoints the unpinned code failed
        });
        std::thread writer([&] {
            auto s = engine->openSession();
            for (uint64_t i = 0;; ++i) {
                for (uint64_t g = gate.load(); i >= g && !done.load(); g = gate.load())
                    gate.wait(g);
                if (done.load())
                    break;
                std::string key = fmt::format("k{:02}", i % kKeys);
                std::string value = std::to_string(i);
                writerStatus = s->put("db.c", key, value);
                if (!writerStatus.ok())
                    break;
                expected[key] = value;
                {
                    std::lock_guard lock(historyMutex);
                    history.push_back({s->lastCommitTs(), key, value});
                }
                const mvcc::Timestamp durable = engine->timestamps().allDurable;
                writerStatus = engine->setStableTimestamp(durable);
                if (writerStatus.ok())
                    writerStatus = engine->setOldestTimestamp(durable);
                if (!writerStatus.ok())
                    break;
                if (i % 16 == 15)
                    engine->sweepHistory();
                commits.fetch_add(1);
                commits.notify_all();
            }
            done.store(true);
            commits.fetch_add(1);  // wakes a waiting checkpointer
            commits.notify_all();
        });
        for (int i = 0; i < checkpoints && !done.load(); ++i) {
            const uint64_t base = commits.load();
            gate.store(base + kLead);
            gate.notify_all();
            for (uint64_t n = commits.load(); n < base + kPace && !done.load(); n = commits.load())
                commits.wait(n);
            attempt = i;
            Status st = engine->checkpoint();
            if (st.ok()) {
                ++out.succeeded;
                const mvcc::Timestamp c = engine->stats().checkpoint.lastTs;
                std::map<std::string, std::string> atC;
                {
                    std::lock_guard lock(historyMutex);
                    for (const Commit& h : history)
                        if (h.ts <= c)
                            atC[h.key] = h.value;
                }
                std::string want;
                for (const auto& [k, v] : atC)
                    want += (want.empty() ? "" : ",") + std::string("db.c:") + k + "=" + v;
                auto listed = listCheckpoints(dir.path);
                REQUIRE(listed.ok());
                std::string got = checkpointContents(listed.value().front().path);
                if (got != want && out.wrongContents++ == 0)
                    out.firstWrong =
                        fmt::format("checkpoint at {}: {} instead of {}", c, got, want);
            } else {
                ++out.failures[std::string(statusCodeName(st.code()))];
                if (out.firstFailure.empty())
                    out.firstFailure = st.toString();
            }
        }
        done.store(true);
        gate.store(~uint64_t{0});  // wakes a waiting writer
        gate.notify_all();
        writer.join();
        out.commits = commits.load();
        out.segmentsDropped = engine->oplog()->stats().segmentsDropped;
    }
    REQUIRE_MESSAGE(writerStatus.ok(), writerStatus.toString());
    auto engine = openEngine(o);
    std::string want;
    for (const auto& [k, v] : expected)
        want += (want.empty() ? "" : ",") + k + "=" + v;
    out.reopenedEqual = scanAll(*engine->openSession(), "db.c") == want;
    return out;
}

}  // namespace

// In doctest's "concurrency" suite: tests/meson.build also runs it as
// engine_checkpoint_test_concurrency (under ThreadSanitizer in CI).
TEST_CASE(
    "checkpoint concurrency: oldest = stable = all_durable after every commit; every checkpoint "
    "succeeds" *
    doctest::test_suite("concurrency")) {
    constexpr int kCheckpoints = 200;
    MovingOldestRun r = movingOldestRun(kCheckpoints);
    std::string reasons;
    for (const auto& [code, n] : r.failures)
        reasons += fmt::format(" {}={}", code, n);
    MESSAGE(fmt::format("moving oldest: {} of {} checkpoints succeeded over {} commits ({} found "
                        "oldest past C just before their read; {} oplog segments capped); "
                        "failed:{} {}",
                        r.succeeded, kCheckpoints, r.commits, r.oldestPassedC, r.segmentsDropped,
                        reasons.empty() ? " none" : reasons, r.firstFailure));
    CHECK(r.succeeded == kCheckpoints);
    CHECK(r.oldestPassedC >= kCheckpoints / 2);
    CHECK_MESSAGE(r.wrongContents == 0, r.firstWrong);
    CHECK(r.reopenedEqual);
}
