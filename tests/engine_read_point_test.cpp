// Untimestamped snapshots read at the read point (docs/mvcc.md,
// "Untimestamped snapshots"): what a timestamp fixed early, a prepared
// transaction and an engine without an oplog do to it, through the public
// API. The in-flight commit cases (a commit acknowledged only once the
// earlier ones are visible, a read above the read point waiting) are in
// tests/check_mvkv_test.cpp, where the checker reads their histories.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "mvkv/engine.h"
#include "mvkv/session.h"
#include "tests/temp_dir.h"

using namespace mvkv;

namespace {

constexpr std::string_view kNs = "test.rp";

std::unique_ptr<Engine> open(EngineOptions options = {}) {
    options.historySweepInterval = std::chrono::milliseconds(0);
    options.checkpointInterval = std::chrono::milliseconds(0);
    auto e = Engine::open(options);
    REQUIRE_MESSAGE(e.ok(), e.status().toString());
    return std::move(e).value();
}

std::unique_ptr<Session> session(Engine& e) {
    auto s = e.openSession();
    REQUIRE(s.ok());
    return std::move(s).value();
}

std::string getOr(Session& s, std::string_view key) {
    std::string value;
    Status st = s.get(kNs, key, &value);
    return st.ok() ? value : "<" + std::string(statusCodeName(st.code())) + ">";
}

}  // namespace

TEST_CASE("the read point follows the newest commit when nothing is in flight") {
    auto e = open();
    auto s = session(*e);
    REQUIRE(s->createCollection(kNs).ok());
    REQUIRE(s->put(kNs, "a", "1").ok());
    const Timestamp ts = s->lastCommitTimestamp();
    CHECK(e->timestamps().readPoint == ts);
    CHECK(e->timestamps().allDurable == ts);
    REQUIRE(s->begin().ok());
    CHECK(s->readTimestamp() == ts);  // exactly the read point
    CHECK(getOr(*s, "a") == "1");
    REQUIRE(s->commit().ok());
}

TEST_CASE("a timestamp fixed early holds the read point; the writer still reads its own later "
          "commit, others see it once the holder ends") {
    auto e = open();
    auto holder = session(*e), writer = session(*e), reader = session(*e);
    REQUIRE(holder->createCollection(kNs).ok());
    REQUIRE(writer->put(kNs, "a", "1").ok());
    const Timestamp first = writer->lastCommitTimestamp();
    REQUIRE(holder->begin().ok());
    REQUIRE(holder->put(kNs, "h", "held").ok());
    REQUIRE(holder->timestampTransaction(first + 1).ok());
    CHECK(e->timestamps().readPoint == first);
    // A commit above the held timestamp is acknowledged without waiting
    // for the holder (it may run on for as long as it likes).
    REQUIRE(writer->put(kNs, "b", "2").ok());
    CHECK(writer->lastCommitTimestamp() > first + 1);
    CHECK(e->timestamps().readPoint == first);
    CHECK(getOr(*writer, "b") == "2");                 // its own commit
    CHECK(getOr(*reader, "b") == "<NotFound>");        // above the read point
    REQUIRE(reader->begin().ok());
    CHECK(reader->readTimestamp() == first);
    CHECK(getOr(*reader, "b") == "<NotFound>");
    REQUIRE(reader->commit().ok());
    REQUIRE(holder->commit().ok());
    CHECK(e->timestamps().readPoint == writer->lastCommitTimestamp());
    CHECK(getOr(*reader, "h") == "held");
    CHECK(getOr(*reader, "b") == "2");
}

TEST_CASE("a prepared transaction does not hold the read point: readers conflict on its keys") {
    auto e = open();
    auto p = session(*e), w = session(*e), r = session(*e);
    REQUIRE(p->createCollection(kNs).ok());
    REQUIRE(w->put(kNs, "x", "0").ok());
    REQUIRE(p->begin().ok());
    REQUIRE(p->put(kNs, "x", "prepared").ok());
    REQUIRE(p->prepare(w->lastCommitTimestamp() + 1).ok());
    REQUIRE(w->put(kNs, "y", "after").ok());
    CHECK(e->timestamps().readPoint == w->lastCommitTimestamp());
    CHECK(e->timestamps().allDurable < w->lastCommitTimestamp());  // all_durable is held
    r->setPrepareConflictWait(false);
    CHECK(getOr(*r, "y") == "after");
    CHECK(getOr(*r, "x") == "<PrepareConflict>");
    REQUIRE(p->commit(w->lastCommitTimestamp() + 1, w->lastCommitTimestamp() + 1).ok());
    CHECK(getOr(*r, "x") == "prepared");
}

TEST_CASE("an engine without an oplog has no read point: a later commit may take an older "
          "timestamp, and the newest commits are read") {
    EngineOptions o;
    o.inMemoryOplogCapBytes = 0;
    auto e = open(o);
    auto s = session(*e);
    REQUIRE(s->createCollection(kNs).ok());
    CHECK(e->timestamps().readPoint == kMaxTimestamp);
    REQUIRE(s->begin().ok());
    REQUIRE(s->put(kNs, "late", "10").ok());
    REQUIRE(s->commit(Timestamp{10}).ok());
    REQUIRE(s->begin().ok());
    REQUIRE(s->put(kNs, "early", "5").ok());
    REQUIRE(s->commit(Timestamp{5}).ok());
    CHECK(getOr(*s, "late") == "10");
    CHECK(getOr(*s, "early") == "5");
}

TEST_CASE("reopened from a checkpoint, the read point starts at the checkpoint's timestamp") {
    mvkv::testing::TempDir dir("mvkv-read-point");
    EngineOptions o;
    o.path = dir.path;
    o.syncMode = SyncMode::kNone;
    Timestamp ts;
    {
        auto e = open(o);
        auto s = session(*e);
        REQUIRE(s->createCollection(kNs).ok());
        REQUIRE(s->put(kNs, "a", "1").ok());
        ts = s->lastCommitTimestamp();
        REQUIRE(e->checkpoint().ok());
    }
    auto e = open(o);
    CHECK(e->timestamps().readPoint >= ts);
    auto s = session(*e);
    CHECK(getOr(*s, "a") == "1");
    REQUIRE(s->put(kNs, "b", "2").ok());
    CHECK(e->timestamps().readPoint == s->lastCommitTimestamp());
}
