// Engine::open with a data directory: what was committed comes back after a
// close and after SIGKILL (every acknowledged commit, no half transaction),
// a torn or corrupt log tail is cut and reported (at every byte offset of
// the last record; a flipped byte mid-segment), and a foreign, locked or
// other-version directory is refused; the smallest record (an empty key and
// value) is read back. Checkpoints: engine_checkpoint_test.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <map>
#include <set>
#include <thread>
#include <string>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "oplog/log_format.h"
#include "oplog/log_reader.h"
#include "tests/data_dir_copy.h"
#include "tests/engine_test_util.h"
#include "tests/temp_dir.h"

using namespace mvkv;
using namespace mvkv::engine;
using namespace mvkv::engine::testing;
using mvkv::testing::TempDir;

namespace {


std::string newestSegment(const std::string& dir) {
    std::string best;
    uint64_t bestN = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        uint64_t n;
        if (oplog::parseSegmentFileName(e.path().filename().string(), &n) && n >= bestN) {
            bestN = n;
            best = e.path().string();
        }
    }
    return best;
}

}  // namespace

TEST_CASE("durability: commits, deletes and collections survive a close; aborted work does not") {
    TempDir dir("mvkv-durability-test");
    {
        auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kFsync));
        CHECK(engine->recovery().durable);
        auto s = engine->openSession();
        mustOk(s->createCollection("app.users"));
        mustOk(s->createCollection("app.gone"));
        mustOk(s->put("app.users", "alice", "1"));
        mustOk(s->begin());
        mustOk(s->put("app.users", "bob", "2"));
        mustOk(s->put("app.users", "carol", "3"));
        mustOk(s->commit(100));
        mustOk(s->begin());
        mustOk(s->put("app.users", "bob", "2b"));
        mustOk(s->commit(200));
        mustOk(s->remove("app.users", "carol"));
        mustOk(s->begin());
        mustOk(s->put("app.users", "dave", "aborted"));
        mustOk(s->abort());
        mustOk(s->begin());
        mustOk(s->put("app.users", "erin", "never committed"));  // open at close
        mustOk(s->put("app.gone", "k", "v"));
        mustOk(s->dropCollection("app.gone").code() == StatusCode::kIllegalOperation
                   ? Status::OK()
                   : Status::Internal("drop inside a transaction was accepted"));
        mustOk(s->abort());
        mustOk(s->dropCollection("app.gone"));
    }
    auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kFsync));
    CHECK(engine->recovery().recordsReplayed > 0);
    CHECK_FALSE(engine->recovery().tailCut);
    auto s = engine->openSession();
    CHECK(getOr(*s, "app.users", "alice") == "1");
    CHECK(getOr(*s, "app.users", "bob") == "2b");
    CHECK(getOr(*s, "app.users", "carol") == "<NotFound>");
    CHECK(getOr(*s, "app.users", "dave") == "<NotFound>");
    CHECK(getOr(*s, "app.users", "erin") == "<NotFound>");
    CHECK(engine->listCollections("app") == std::vector<std::string>{"users"});
    // Timestamps are preserved: an old snapshot reads what it read before.
    mustOk(s->begin({150}));
    CHECK(getOr(*s, "app.users", "bob") == "2");
    CHECK(getOr(*s, "app.users", "carol") == "3");
    mustOk(s->commit());
    // And the engine takes new writes, which survive the next reopen too.
    mustOk(s->put("app.users", "frank", "6"));
    s.reset();
    engine.reset();
    auto again = openEngine(onDisk(dir.path, oplog::SyncMode::kFsync));
    auto s2 = again->openSession();
    CHECK(getOr(*s2, "app.users", "frank") == "6");
    CHECK(getOr(*s2, "app.users", "bob") == "2b");
}

TEST_CASE("durability: an empty key and value survive a reopen, and so does their delete") {
    // Issue 15: the record of `put a.b "" ""` (29 bytes of entry) was
    // written and acknowledged, then refused by every open as Corruption.
    TempDir dir("mvkv-durability-test");
    {
        auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kFsync));
        auto s = engine->openSession();
        mustOk(s->createCollection("a.b"));
        mustOk(s->put("a.b", "", ""));
    }
    {
        auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kFsync));
        CHECK_FALSE(engine->recovery().tailCut);
        auto s = engine->openSession();
        auto got = s->get("a.b", "");
        REQUIRE_MESSAGE(got.ok(), got.status().toString());
        CHECK(got.value().empty());
        CHECK(scanAll(*s, "a.b") == "=");
        mustOk(s->remove("a.b", ""));
    }
    auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kFsync));
    CHECK_FALSE(engine->recovery().tailCut);
    auto s = engine->openSession();
    CHECK(getOr(*s, "a.b", "") == "<NotFound>");
    CHECK(scanAll(*s, "a.b").empty());
}

TEST_CASE("durability: a torn last record is cut and reported; everything before it survives") {
    TempDir dir("mvkv-durability-test");
    {
        auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
        auto s = engine->openSession();
        mustOk(s->createCollection("db.c"));
        for (int i = 0; i < 10; ++i)
            mustOk(s->put("db.c", "k" + std::to_string(i), "v" + std::to_string(i)));
    }
    std::string seg = newestSegment(dir.path);
    REQUIRE(!seg.empty());
    std::filesystem::resize_file(seg, std::filesystem::file_size(seg) - 5);
    // After a clean close a short log is not a torn write: refused, untouched.
    auto refused = Engine::open(onDisk(dir.path, oplog::SyncMode::kFsync));
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == StatusCode::kCorruption);
    CHECK(refused.status().message().find("closed cleanly") != std::string::npos);
    CHECK(std::filesystem::exists(dir.path + "/clean-shutdown"));
    // As after a crash (no clean-shutdown note): a torn tail, cut.
    std::filesystem::remove(dir.path + "/clean-shutdown");
    auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kFsync));
    const RecoveryStats& r = engine->recovery();
    CHECK(r.tailCut);
    CHECK(r.cutBytes > 0);
    CHECK(r.cutReason == "torn record");
    CHECK(r.damage == "torn tail");
    CHECK_FALSE(r.cleanShutdown);
    auto s = engine->openSession();
    for (int i = 0; i < 9; ++i)
        CHECK(getOr(*s, "db.c", "k" + std::to_string(i)) == "v" + std::to_string(i));
    CHECK(getOr(*s, "db.c", "k9") == "<NotFound>");  // the torn one
    mustOk(s->put("db.c", "k9", "again"));
    s.reset();
    engine.reset();
    auto reopened = openEngine(onDisk(dir.path, oplog::SyncMode::kFsync));
    CHECK_FALSE(reopened->recovery().tailCut);
    CHECK(getOr(*reopened->openSession(), "db.c", "k9") == "again");
}

TEST_CASE("durability: after SIGKILL every acknowledged commit is there, and no half transaction") {
    // A child runs three threads of random transactions in fsync mode: put
    // a pair of keys (a<n>, b<n>) to one value, or delete an earlier pair,
    // and reports each acknowledged commit through a pipe. The parent kills
    // it at a random moment and checks the reopened directory.
    constexpr int kThreads = 3;
    for (int seed = 1; seed <= 8; ++seed) {
        CAPTURE(seed);
        TempDir dir("mvkv-durability-test");
        int ack[2];
        REQUIRE(pipe(ack) == 0);
        pid_t child = fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            close(ack[0]);
            auto opened = Engine::open(onDisk(dir.path, oplog::SyncMode::kFsync));
            if (!opened.ok())
                _exit(2);
            auto engine = std::move(opened).value();
            if (!engine->openSession()->createCollection("db.c").ok())
                _exit(3);
            auto worker = [&](int t) {
                auto s = engine->openSession();
                std::mt19937 rng(static_cast<unsigned>(seed * 100 + t));
                for (int i = 0;; ++i) {
                    // Delete one of this thread's earlier pairs now and then.
                    bool del = i > 0 && rng() % 4 == 0;
                    int n = del ? static_cast<int>(rng() % unsigned(i)) : i;
                    std::string id = std::to_string(t) + "-" + std::to_string(n);
                    Status st = s->withTransaction([&](Session& x) {
                        if (del) {
                            Status a = x.remove("db.c", "a" + id);
                            if (!a.ok() && a.code() != StatusCode::kNotFound)
                                return a;
                            a = x.remove("db.c", "b" + id);
                            return a.code() == StatusCode::kNotFound ? Status::OK() : a;
                        }
                        Status a = x.put("db.c", "a" + id, id);
                        return a.ok() ? x.put("db.c", "b" + id, id) : a;
                    });
                    if (!st.ok())
                        _exit(4);
                    std::string line = (del ? "D " : "P ") + id + "\n";
                    if (write(ack[1], line.data(), line.size()) < 0)  // atomic: < PIPE_BUF
                        _exit(5);
                }
            };
            std::vector<std::thread> threads;
            for (int t = 1; t < kThreads; ++t)
                threads.emplace_back(worker, t);
            worker(0);
        }
        close(ack[1]);
        std::mt19937 rng(static_cast<unsigned>(seed));
        const size_t target = 20 + rng() % 300;
        // The last acknowledged operation on each pair (a thread's own pairs
        // are acknowledged in its commit order).
        std::map<std::string, char> last;
        size_t acked = 0;
        std::string buffered;
        char buf[4096];
        auto readAcks = [&](bool untilEnd) {
            while (untilEnd || acked < target) {
                ssize_t n = read(ack[0], buf, sizeof(buf));
                if (untilEnd && n == 0)
                    return;  // the child is gone: every acknowledgement it sent is read
                REQUIRE(n > 0);
                buffered.append(buf, size_t(n));
                size_t nl;
                while ((nl = buffered.find('\n')) != std::string::npos) {
                    last[buffered.substr(2, nl - 2)] = buffered[0];
                    buffered.erase(0, nl + 1);
                    ++acked;
                }
            }
        };
        readAcks(false);
        kill(child, SIGKILL);
        int status = 0;
        waitpid(child, &status, 0);
        // The child acknowledged more between our last read and its death:
        // those commits must survive too, and without them a put we saw
        // could have been deleted by an acknowledged delete we did not see.
        readAcks(true);
        close(ack[0]);
        REQUIRE(WIFSIGNALED(status));
        auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kFsync));
        auto s = engine->openSession();
        // A pair is put once and only deleted after that put was
        // acknowledged. So an acknowledged delete leaves it absent for good,
        // and an acknowledged put leaves it present unless the one
        // unacknowledged transaction its thread had in flight deleted it.
        size_t putsGone = 0;
        for (const auto& [id, op] : last) {
            std::string a = getOr(*s, "db.c", "a" + id);
            CHECK_MESSAGE(a == getOr(*s, "db.c", "b" + id), "pair ", id, " is half there");
            if (op == 'D')
                CHECK_MESSAGE(a == "<NotFound>", "acknowledged delete of ", id, " undone");
            else if (a != id)
                ++putsGone;
        }
        CHECK(putsGone <= size_t(kThreads));
        // No half transaction anywhere.
        auto c = s->openCursor("db.c");
        REQUIRE(c.ok());
        size_t as = 0, bs = 0;
        for (mustOk(c.value()->first()); c.value()->valid(); mustOk(c.value()->next()))
            (c.value()->key()[0] == 'a' ? as : bs) += 1;
        CHECK(as == bs);
        c.value().reset();
        mustOk(s->put("db.c", "after", "crash"));  // the engine takes new writes
    }
}

TEST_CASE("durability: foreign, locked and other-version directories are refused") {
    TempDir dir("mvkv-durability-test");
    // Not an mvkv directory: has other files and no marker.
    std::string foreign = dir.path + "/foreign";
    std::filesystem::create_directories(foreign);
    std::ofstream(foreign + "/data.txt") << "someone else's";
    auto refused = Engine::open(onDisk(foreign, oplog::SyncMode::kFsync));
    CHECK(refused.status().code() == StatusCode::kInvalidArgument);
    CHECK(refused.status().message().find("not an mvkv data directory") != std::string::npos);
    CHECK(std::filesystem::exists(foreign + "/data.txt"));
    // Locked by an open engine.
    std::string mine = dir.path + "/mine";
    {
        auto first = openEngine(onDisk(mine, oplog::SyncMode::kFsync));
        auto second = Engine::open(onDisk(mine, oplog::SyncMode::kFsync));
        CHECK(second.status().code() == StatusCode::kIllegalOperation);
        CHECK(second.status().message().find("in use") != std::string::npos);
    }
    openEngine(onDisk(mine, oplog::SyncMode::kFsync));  // free again once the first is closed
    // Another format version.
    std::ofstream(mine + "/MVKV", std::ios::trunc) << "mvkv data directory\nformat 99\n";
    auto future = Engine::open(onDisk(mine, oplog::SyncMode::kFsync));
    CHECK(future.status().code() == StatusCode::kInvalidArgument);
    CHECK(future.status().message().find("format 99") != std::string::npos);
    // An in-memory engine with a path writes nothing there.
    std::string memory = dir.path + "/memory";
    EngineOptions o = onDisk(memory, oplog::SyncMode::kFsync);
    o.inMemory = true;
    auto inMemory = openEngine(o);
    CHECK_FALSE(inMemory->recovery().durable);
    CHECK_FALSE(std::filesystem::exists(memory));
}

using mvkv::testing::copyAsCrashed;

TEST_CASE("durability: the last record cut at every byte offset recovers to the record before") {
    TempDir dir("mvkv-durability-test");
    {
        auto engine = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
        auto s = engine->openSession();
        mustOk(s->createCollection("db.c"));
        for (int i = 0; i < 5; ++i)
            mustOk(s->put("db.c", "k" + std::to_string(i), "v" + std::to_string(i)));
        mustOk(s->begin());
        mustOk(s->put("db.c", "last1", "x"));
        mustOk(s->put("db.c", "last2", "y"));
        mustOk(s->commit());
    }
    const std::string seg = newestSegment(dir.path);
    const uint64_t size = std::filesystem::file_size(seg);
    // Where the last record starts.
    uint64_t lastOffset = 0;
    oplog::LogTail tail;
    mustOk(oplog::scanLog(
        dir.path, [&](uint64_t, uint64_t offset, std::string_view) { lastOffset = offset; },
        &tail));
    REQUIRE(lastOffset > 0);
    TempDir scratchDir("mvkv-durability-test");
    const std::string scratch = scratchDir.path + "/data";
    for (uint64_t cut = lastOffset; cut < size; ++cut) {
        CAPTURE(cut);
        copyAsCrashed(dir.path, scratch);  // as after a crash
        std::filesystem::resize_file(scratch + "/" + std::filesystem::path(seg).filename().string(),
                                     cut);
        auto engine = openEngine(onDisk(scratch, oplog::SyncMode::kFsync));
        const RecoveryStats& r = engine->recovery();
        CHECK(r.tailCut == (cut > lastOffset));
        if (cut > lastOffset) {
            CHECK(r.cutOffset == lastOffset);
            CHECK(r.cutBytes == cut - lastOffset);
        }
        auto s = engine->openSession();
        CHECK(scanAll(*s, "db.c") == "k0=v0,k1=v1,k2=v2,k3=v3,k4=v4");  // never half of the last
        mustOk(s->put("db.c", "new", "write"));
    }
}

TEST_CASE("durability: a byte flipped in the middle of the log refuses the open; --repair cuts it and lists the loss") {
    TempDir dir("mvkv-durability-test");
    EngineOptions o = onDisk(dir.path, oplog::SyncMode::kWrite);
    o.oplogSegmentBytes = 4096;
    {
        auto engine = openEngine(o);
        auto s = engine->openSession();
        mustOk(s->createCollection("db.c"));
        for (int i = 0; i < 200; ++i)
            mustOk(s->put("db.c", "k" + std::to_string(i), std::string(50, 'a' + i % 26)));
    }
    // The first segment: flip a byte in its middle.
    std::string first;
    uint64_t firstN = UINT64_MAX;
    size_t segments = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir.path)) {
        uint64_t n;
        if (oplog::parseSegmentFileName(e.path().filename().string(), &n)) {
            ++segments;
            if (n < firstN) {
                firstN = n;
                first = e.path().string();
            }
        }
    }
    REQUIRE(segments > 2);
    const uint64_t middle = std::filesystem::file_size(first) / 2;
    {
        std::fstream f(first, std::ios::in | std::ios::out | std::ios::binary);
        f.seekg(static_cast<std::streamoff>(middle));
        char c = 0;
        f.read(&c, 1);
        c = static_cast<char>(c ^ 0x01);
        f.seekp(static_cast<std::streamoff>(middle));
        f.write(&c, 1);
    }
    // Refused, naming the file and offset, and nothing on disk changed.
    auto before = std::filesystem::file_size(first);
    auto refused = Engine::open(o);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == StatusCode::kCorruption);
    CHECK(refused.status().message().find(first) != std::string::npos);
    CHECK(refused.status().message().find("checksum mismatch") != std::string::npos);
    CHECK(std::filesystem::file_size(first) == before);
    CHECK(segments == static_cast<size_t>(std::count_if(
                          std::filesystem::directory_iterator(dir.path), {}, [](const auto& e) {
                              uint64_t n;
                              return oplog::parseSegmentFileName(e.path().filename().string(), &n);
                          })));
    // Repair: cut there, copies kept, the loss listed and reported until cleared.
    o.repair = true;
    auto engine = openEngine(o);
    o.repair = false;
    const RecoveryStats& r = engine->recovery();
    CHECK(r.repaired);
    CHECK(r.damage == "corruption");
    CHECK(r.repairs == 1);
    CHECK(std::filesystem::exists(r.salvageDir + "/" + std::filesystem::path(first).filename().string()));
    CHECK(r.tailCut);
    CHECK(r.cutSegment == firstN);
    CHECK(r.cutOffset <= middle);
    CHECK(r.cutBytes > std::filesystem::file_size(first) / 2);  // later segments too
    // A prefix of the writes survives, each with its right value; none after.
    auto s = engine->openSession();
    int present = 0;
    while (present < 200 && getOr(*s, "db.c", "k" + std::to_string(present)) ==
                                std::string(50, 'a' + present % 26))
        ++present;
    CHECK(present > 0);
    CHECK(present < 200);
    for (int i = present; i < 200; ++i)
        CHECK(getOr(*s, "db.c", "k" + std::to_string(i)) == "<NotFound>");
    // Every lost write but the damaged record's is listed, by key.
    auto record = nlohmann::json::parse(r.repairsJson);
    REQUIRE(record.size() == 1);
    std::set<std::string> listed;
    for (const auto& c : record[0]["lostCommits"])
        for (const auto& e : c["entries"])
            listed.insert(e["key"].get<std::string>());
    CHECK(record[0]["lostCommitCount"].get<size_t>() == listed.size());
    for (int i = present + 1; i < 200; ++i)
        CHECK(listed.count("k" + std::to_string(i)) == 1);
    mustOk(s->put("db.c", "k0", "new"));
    s.reset();
    engine.reset();
    auto later = openEngine(o);
    CHECK_FALSE(later->recovery().repaired);
    CHECK(later->recovery().repairs == 1);
    CHECK(getOr(*later->openSession(), "db.c", "k0") == "new");
    mustOk(later->clearRepairRecord());
    later.reset();
    CHECK(openEngine(o)->recovery().repairs == 0);
}
