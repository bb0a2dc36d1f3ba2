// Fault injection on every I/O path (docs/reliability.md, "I/O faults"):
// the failpoint failIO fails one file operation (key=SITE.OP) with EIO,
// ENOSPC or a short write. For each point: the operation that hit it
// returns IOError naming the file, no acknowledged write is lost, nothing
// unacknowledged comes back after a restart, a failed oplog write or sync
// stops durable commits (the sync is never retried), and a reopen recovers.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <string>
#include <vector>

#include "mvkv/failpoint.h"
#include "tests/engine_test_util.h"
#include "tests/failpoints_off.h"
#include "tests/temp_dir.h"

using namespace mvkv;
using namespace mvkv::engine;
using namespace mvkv::engine::testing;
using mvkv::testing::TempDir;

namespace {

constexpr std::string_view kNs = "t.io";

using mvkv::testing::AllOff;

uint64_t timesEntered(std::string_view name) {
    for (const FailPointInfo& f : listFailPoints())
        if (f.name == name)
            return f.timesEntered;
    return 0;
}

void arm(const std::string& point, const std::string& error) {
    auto r = configureFailPoint("failIO", fmt::format("times 1 key={} error={}", point, error));
    REQUIRE_MESSAGE(r.ok(), r.status().toString());
}

EngineOptions small(const std::string& path) {
    EngineOptions o = onDisk(path, oplog::SyncMode::kFsync);
    o.oplogSegmentBytes = 4096;
    o.oplogCapBytes = 8192;
    return o;
}

std::string value(int i) {
    return fmt::format("{:0>60}", i);
}

// Every key in `acked` has its value, and no key in `unacked` exists.
void checkReopened(const std::string& path, const std::vector<int>& acked,
                   const std::vector<int>& unacked) {
    auto e = openEngine(small(path));
    auto s = e->openSession();
    for (int i : acked)
        CHECK_MESSAGE(getOr(*s, kNs, fmt::format("k{}", i)) == value(i), "acknowledged k" << i);
    for (int i : unacked)
        CHECK_MESSAGE(getOr(*s, kNs, fmt::format("k{}", i)) == "<NotFound>",
                      "unacknowledged k" << i);
    // Writes go on after the reopen.
    mustOk(s->put(kNs, "after", "reopen"));
}

}  // namespace

TEST_CASE("a failed oplog write or sync: the commit gets IOError, later ones are refused, "
          "nothing is lost and the failed commit does not come back") {
    AllOff off;
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"oplogAppend.write", "eio"},      {"oplogAppend.write", "enospc"},
        {"oplogAppend.write", "short"},    {"oplogAppend.fsync", "eio"},
        {"segmentSwitch.write", "eio"},    {"segmentSwitch.write", "short"},
        {"segmentSwitch.fsync", "eio"},    {"segmentSwitch.dirsync", "eio"},
    };
    for (const auto& [point, error] : cases) {
        CAPTURE(point);
        CAPTURE(error);
        TempDir dir("mvkv-io-fault");
        std::vector<int> acked, unacked;
        {
            auto e = openEngine(small(dir.path));
            auto s = e->openSession();
            mustOk(s->createCollection(kNs));
            for (int i = 0; i < 3; ++i, acked.push_back(i - 1))
                mustOk(s->put(kNs, fmt::format("k{}", i), value(i)));
            const uint64_t before = timesEntered("failIO");
            arm(point, error);
            Status failed;
            for (int i = 3; i < 400 && failed.ok(); ++i) {
                failed = s->put(kNs, fmt::format("k{}", i), value(i));
                (failed.ok() ? acked : unacked).push_back(i);
            }
            REQUIRE(timesEntered("failIO") == before + 1);
            CHECK(failed.code() == StatusCode::kIOError);
            CHECK(failed.message().find("failIO " + point) != std::string::npos);
            CHECK(failed.message().find("was cut from") != std::string::npos);
            // Stopped: no durable commit after a failed write or sync, and
            // no retried sync.
            Status later = s->put(kNs, "later", "x");
            CHECK(later.code() == StatusCode::kIOError);
            unacked.push_back(-1);  // "k-1" stands for "later": never written
            CHECK(getOr(*s, kNs, "k0") == value(0));  // reads go on
        }
        checkReopened(dir.path, acked, unacked);
    }
}

TEST_CASE("a failed checkpoint write, sync, rename or directory sync: the checkpoint fails, "
          "the engine goes on, the next checkpoint and a reopen recover everything") {
    AllOff off;
    for (const std::string point : {"checkpoint.write", "checkpoint.fsync", "checkpoint.rename",
                                    "checkpoint.dirsync"}) {
        for (const std::string error : {"eio", "enospc", "short"}) {
            if (error == "short" && point != "checkpoint.write")
                continue;
            CAPTURE(point);
            CAPTURE(error);
            TempDir dir("mvkv-io-fault");
            std::vector<int> acked;
            {
                auto e = openEngine(small(dir.path));
                auto s = e->openSession();
                mustOk(s->createCollection(kNs));
                for (int i = 0; i < 50; ++i, acked.push_back(i - 1))
                    mustOk(s->put(kNs, fmt::format("k{}", i), value(i)));
                arm(point, error);
                Status failed = e->checkpoint();
                CHECK(failed.code() == StatusCode::kIOError);
                CHECK(failed.message().find("failIO " + point) != std::string::npos);
                // No temp file is left behind by a failure before the rename.
                if (point != "checkpoint.dirsync")
                    for (const auto& f : std::filesystem::directory_iterator(dir.path))
                        CHECK_MESSAGE(f.path().extension() != ".tmp", f.path().string());
                for (int i = 50; i < 60; ++i, acked.push_back(i - 1))
                    mustOk(s->put(kNs, fmt::format("k{}", i), value(i)));
                mustOk(e->checkpoint());
            }
            checkReopened(dir.path, acked, {});
        }
    }
}

TEST_CASE("a failed removal or directory sync while capping the oplog: the checkpoint says so, "
          "nothing is lost") {
    AllOff off;
    for (const std::string point : {"capping.remove", "capping.dirsync"}) {
        CAPTURE(point);
        TempDir dir("mvkv-io-fault");
        std::vector<int> acked;
        {
            auto e = openEngine(small(dir.path));
            auto s = e->openSession();
            mustOk(s->createCollection(kNs));
            int i = 0;
            Status failed;
            const uint64_t before = timesEntered("failIO");
            arm(point, "eio");
            // Checkpoints cap the log once two are kept and it is over its cap.
            for (int round = 0; round < 20 && timesEntered("failIO") == before; ++round) {
                for (int n = 0; n < 40; ++n, ++i) {
                    mustOk(s->put(kNs, fmt::format("k{}", i), value(i)));
                    acked.push_back(i);
                }
                failed = e->checkpoint();
            }
            REQUIRE(timesEntered("failIO") == before + 1);
            CHECK(failed.code() == StatusCode::kIOError);
            CHECK(failed.message().find("failIO " + point) != std::string::npos);
            mustOk(s->put(kNs, fmt::format("k{}", i), value(i)));  // writes go on
            acked.push_back(i);
            mustOk(e->checkpoint());
        }
        checkReopened(dir.path, acked, {});
    }
}

TEST_CASE("a failed write, sync, rename or directory sync of a new data directory's marker: the "
          "open fails with IOError, the next open succeeds") {
    AllOff off;
    for (const std::string point :
         {"marker.write", "marker.fsync", "marker.rename", "marker.dirsync"}) {
        for (const std::string error : {"eio", "enospc"}) {
            CAPTURE(point);
            CAPTURE(error);
            TempDir dir("mvkv-io-fault");
            arm(point, error);
            auto failed = Engine::open(small(dir.path));
            REQUIRE_FALSE(failed.ok());
            CHECK(failed.status().code() == StatusCode::kIOError);
            CHECK(failed.status().message().find("failIO " + point) != std::string::npos);
            {
                auto e = openEngine(small(dir.path));
                auto s = e->openSession();
                mustOk(s->createCollection(kNs));
                mustOk(s->put(kNs, "k0", value(0)));
            }
            checkReopened(dir.path, {0}, {});
        }
    }
}

TEST_CASE("failIO's data is checked: a bad error= is refused") {
    AllOff off;
    auto r = configureFailPoint("failIO", "times 1 key=oplogAppend.write error=full");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK(r.status().message().find("error=full") != std::string::npos);
}
