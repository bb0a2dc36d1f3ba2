// Untimestamped snapshots read at the read point (docs/mvcc.md,
// "Untimestamped snapshots"): what a timestamp fixed early, a prepared
// transaction and an engine without an oplog do to it, through the public
// API. The in-flight commit cases (a commit acknowledged only once the
// earlier ones are visible, a read above the read point waiting) are in
// tests/check_mvkv_test.cpp, where the checker reads their histories.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "mvkv/cursor.h"
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

// Every key of kNs a cursor outside a transaction sees, joined with ','.
std::string keys(Session& s) {
    auto c = s.openCursor(kNs);
    REQUIRE(c.ok());
    std::string out;
    REQUIRE(c.value()->first().ok());
    while (c.value()->valid()) {
        out += (out.empty() ? "" : ",") + std::string(c.value()->key());
        REQUIRE(c.value()->next().ok());
    }
    return out;
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
    CHECK(keys(*writer) == "a,b");                     // a cursor of its own too
    CHECK(getOr(*reader, "b") == "<NotFound>");        // above the read point
    CHECK(keys(*reader) == "a");
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

TEST_CASE("a history sweep keeps what an untimestamped snapshot below a held timestamp still "
          "reads, though oldest passed the newer version") {
    auto e = open();
    auto holder = session(*e), writer = session(*e), reader = session(*e);
    REQUIRE(holder->createCollection(kNs).ok());
    REQUIRE(writer->put(kNs, "k", "old").ok());
    const Timestamp first = writer->lastCommitTimestamp();
    REQUIRE(holder->begin().ok());
    // Two things keep "old": the holder's snapshot (older than "new", and
    // running) and the reader's read bound, which the sweep's horizon now
    // respects too (TransactionManager::horizon).
    REQUIRE(holder->timestampTransaction(first + 1).ok());
    REQUIRE(writer->put(kNs, "k", "new").ok());  // above the held timestamp
    const Timestamp second = writer->lastCommitTimestamp();
    REQUIRE(reader->begin().ok());  // its read point is below the held timestamp
    CHECK(getOr(*reader, "k") == "old");
    // Stable and oldest past the newer version: by timestamp alone "old"
    // would be obsolete, but the reader's bound still needs it.
    REQUIRE(e->setStableTimestamp(second).ok());
    REQUIRE(e->setOldestTimestamp(second).ok());
    REQUIRE(e->sweepHistory().ok());
    REQUIRE(e->sweepHistory().ok());
    CHECK(getOr(*reader, "k") == "old");
    REQUIRE(reader->commit().ok());
    CHECK(holder->commit().ok());  // read-only: no timestamp rule to break
    CHECK(getOr(*reader, "k") == "new");
}
