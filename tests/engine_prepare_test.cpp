// Prepared transactions (docs/mvcc.md, "Prepared transactions"): the
// scenarios of WiredTiger's test_prepare*.py, named after them, on the
// engine's public API — reads before and after the prepare timestamp,
// commits refused for their timestamps, ignore_prepare, a prepared delete,
// the history a prepared transaction pins, cursors and scans, implicit
// readers waiting, durability across a crash, and the figures.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "lockmgr/raii_locks.h"
#include "mvkv/failpoint.h"
#include "tests/data_dir_copy.h"
#include "tests/engine_test_util.h"
#include "tests/failpoints_off.h"
#include "tests/temp_dir.h"
#include "tests/test_seed.h"

using namespace mvkv;
using namespace mvkv::engine;
using namespace mvkv::engine::testing;
using mvkv::testing::TempDir;

namespace {

constexpr const char* kNs = "db.c";

EngineOptions inMemory() {
    EngineOptions o;
    o.historySweepInterval = std::chrono::milliseconds(0);
    return o;
}

std::unique_ptr<Engine> engineWith(std::initializer_list<std::pair<const char*, const char*>> kv,
                                   mvcc::Timestamp ts) {
    auto e = openEngine(inMemory());
    auto s = e->openSession();
    mustOk(s->createCollection(kNs));
    mustOk(s->begin());
    for (const auto& [k, v] : kv)
        mustOk(s->put(kNs, k, v));
    mustOk(s->commit(ts));
    return e;
}

// A read in an explicit transaction at `readTs` (0: the newest), with or
// without ignore_prepare: the value, or "<code>".
std::string readAt(Engine& e, std::string_view key, mvcc::Timestamp readTs,
                   bool ignorePrepare = false) {
    auto s = e.openSession();
    TxnOptions o;
    o.readTs = readTs;
    o.ignorePrepare = ignorePrepare;
    mustOk(s->begin(o));
    std::string out = getOr(*s, kNs, key);
    mustOk(s->abort());
    return out;
}

// The session's transaction writes `kv` and prepares at `prepareTs`.
void writeAndPrepare(Session& s, std::initializer_list<std::pair<const char*, const char*>> kv,
                     mvcc::Timestamp prepareTs) {
    mustOk(s.begin());
    for (const auto& [k, v] : kv)
        mustOk(s.put(kNs, k, v));
    mustOk(s.prepare(prepareTs));
}

using mvkv::testing::copyAsCrashed;

// The collection, with k=old committed at 10 (the crash tests' start).
void createWithOld(Session& s) {
    mustOk(s.createCollection(kNs));
    mustOk(s.begin());
    mustOk(s.put(kNs, "k", "old"));
    mustOk(s.commit(10));
}

// Waits (on the operation's state, not on time) until session `client`'s
// running operation has met a prepare conflict; returns its opid.
uint64_t waitForPrepareConflict(Engine& e, std::string_view client) {
    while (true) {
        nlohmann::json ops = nlohmann::json::parse(e.currentOp());
        for (const auto& op : ops["inprog"])
            if (op["client"] == client && op.value("prepareConflicts", 0) >= 1)
                return op["opid"].get<uint64_t>();
        std::this_thread::yield();
    }
}

nlohmann::json transactionsStatus(Engine& e) {
    auto s = e.serverStatus("transactions");
    REQUIRE_OK(s.status());
    return nlohmann::json::parse(s.value())["transactions"];
}

}  // namespace

TEST_CASE(
    "test_prepare01_read_before_prepare_ts: a read below the prepare timestamp sees the old "
    "value and no conflict") {
    auto e = engineWith({{"k", "old"}}, 10);
    auto p = e->openSession();
    writeAndPrepare(*p, {{"k", "new"}}, 20);
    CHECK(p->prepared());
    CHECK(readAt(*e, "k", 15) == "old");
    CHECK(readAt(*e, "k", 19) == "old");
    // A snapshot taken before the prepare cannot see the transaction either.
    mustOk(p->commit(25, 25));
    CHECK(readAt(*e, "k", 24) == "old");
    CHECK(readAt(*e, "k", 25) == "new");
}

TEST_CASE("test_prepare02_read_at_or_after_prepare_ts: PrepareConflict until it resolves") {
    auto e = engineWith({{"k", "old"}}, 10);
    auto p = e->openSession();
    writeAndPrepare(*p, {{"k", "new"}, {"fresh", "1"}}, 20);
    CHECK(readAt(*e, "k", 20) == "<PrepareConflict>");
    CHECK(readAt(*e, "k", 30) == "<PrepareConflict>");
    CHECK(readAt(*e, "k", 0) == "<PrepareConflict>");      // no read timestamp: the newest
    CHECK(readAt(*e, "fresh", 0) == "<PrepareConflict>");  // a prepared insert
    // The message names the transaction and its prepare timestamp.
    auto s = e->openSession();
    mustOk(s->begin());
    Status st = s->get(kNs, "k").status();
    CHECK(st.code() == StatusCode::kPrepareConflict);
    CHECK(st.message().find("prepared at timestamp 20") != std::string::npos);
    mustOk(s->abort());
    // A key the transaction did not write reads as usual.
    mustOk(e->openSession()->put(kNs, "other", "x"));
    CHECK(readAt(*e, "other", 0) == "x");
    mustOk(p->commit(22, 22));
    CHECK(readAt(*e, "k", 21) == "old");  // commit 22 > 21: not in that snapshot
    CHECK(readAt(*e, "k", 22) == "new");
    CHECK(readAt(*e, "fresh", 30) == "1");
    CHECK(readAt(*e, "k", 0) == "new");
}

TEST_CASE("a session that does not wait: implicit reads of a prepared key conflict at once") {
    // setPrepareConflictWait(false), as the shell's one thread sets it: get,
    // a scan (an own cursor) and count return PrepareConflict instead of
    // waiting; nothing else changes, and after the commit they read it.
    auto e = engineWith({{"k", "old"}}, 10);
    auto p = e->openSession();
    writeAndPrepare(*p, {{"k", "new"}}, 20);
    auto s = e->openSession();
    s->setPrepareConflictWait(false);
    CHECK(s->get(kNs, "k").status().code() == StatusCode::kPrepareConflict);
    auto c = s->openCursor(kNs);
    REQUIRE_OK(c.status());
    CHECK(c.value()->first().code() == StatusCode::kPrepareConflict);
    c.value().reset();
    CHECK(s->count(kNs).status().code() == StatusCode::kPrepareConflict);
    mustOk(p->commit(25, 25));
    CHECK(s->get(kNs, "k").value() == "new");
}

TEST_CASE("test_prepare03_commit_below_prepare_refused: the transaction stays prepared") {
    auto e = engineWith({{"k", "old"}}, 10);
    auto p = e->openSession();
    writeAndPrepare(*p, {{"k", "new"}}, 20);
    Status below = p->commit(19, 19);
    CHECK(below.code() == StatusCode::kInvalidArgument);
    CHECK(below.message().find("prepare timestamp 20") != std::string::npos);
    CHECK(p->prepared());
    CHECK(p->inTransaction());
    Status durable = p->commit(25, 24);  // durable below commit
    CHECK(durable.code() == StatusCode::kInvalidArgument);
    CHECK(p->prepared());
    // commit(ts) of a prepared transaction needs its timestamp.
    CHECK(p->commit().code() == StatusCode::kInvalidArgument);
    CHECK(p->commit(std::optional<mvcc::Timestamp>(15)).code() == StatusCode::kInvalidArgument);
    CHECK(p->prepared());
    CHECK(readAt(*e, "k", 30) == "<PrepareConflict>");
    // Then a valid commit; durable after commit.
    mustOk(p->commit(25, 28));
    CHECK_FALSE(p->inTransaction());
    CHECK(readAt(*e, "k", 25) == "new");
    CHECK(e->timestamps().allDurable >= 28);  // all_durable counts the durable timestamp
    // Commit(ts) of a prepared transaction: durable = commit.
    writeAndPrepare(*p, {{"k", "newer"}}, 30);
    mustOk(p->commit(std::optional<mvcc::Timestamp>(31)));
    CHECK(readAt(*e, "k", 31) == "newer");
}

TEST_CASE(
    "test_prepare04_prepare_timestamp_rules: after stable and oldest, not 0, not after a "
    "commit timestamp; a refused prepare changes nothing") {
    auto e = engineWith({{"k", "old"}}, 10);
    mustOk(e->setStableTimestamp(15));
    mustOk(e->setOldestTimestamp(12));
    auto p = e->openSession();
    mustOk(p->begin());
    mustOk(p->put(kNs, "k", "new"));
    CHECK(p->prepare(15).code() == StatusCode::kInvalidArgument);  // == stable
    CHECK(p->prepare(12).code() == StatusCode::kInvalidArgument);  // below stable
    CHECK(p->prepare(0).code() == StatusCode::kInvalidArgument);
    CHECK_FALSE(p->prepared());
    mustOk(p->put(kNs, "k2", "still writable"));
    mustOk(p->prepare(16));
    CHECK(p->prepare(17).code() == StatusCode::kIllegalOperation);  // already prepared
    mustOk(p->abort());
    // A commit timestamp fixed before the prepare: refused.
    mustOk(p->begin());
    mustOk(p->put(kNs, "k", "x"));
    mustOk(p->timestampTransaction(40));
    CHECK(p->prepare(41).code() == StatusCode::kInvalidArgument);
    mustOk(p->abort());
    // Stable cannot be passed by a commit's durable timestamp.
    writeAndPrepare(*p, {{"k", "y"}}, 20);
    mustOk(e->setStableTimestamp(30));
    CHECK(p->commit(25, 30).code() == StatusCode::kInvalidArgument);  // durable <= stable
    mustOk(p->commit(25, 31));
    CHECK(e->openSession()->prepare(50).code() == StatusCode::kIllegalOperation);  // no txn
}

TEST_CASE("test_prepare05_no_writes_after_prepare: IllegalOperation, the prepared writes stay") {
    auto e = engineWith({{"k", "old"}}, 10);
    auto p = e->openSession();
    writeAndPrepare(*p, {{"k", "new"}}, 20);
    CHECK(p->put(kNs, "k2", "v").code() == StatusCode::kIllegalOperation);
    CHECK(p->remove(kNs, "k").code() == StatusCode::kIllegalOperation);
    CHECK(p->removeRange(kNs, {}).status().code() == StatusCode::kIllegalOperation);
    CHECK(p->prepared());
    mustOk(p->commit(21, 21));
    CHECK(readAt(*e, "k", 21) == "new");
    CHECK(readAt(*e, "k2", 21) == "<NotFound>");
}

TEST_CASE("test_prepare05b_no_reads_after_prepare: IllegalOperation, it stays prepared") {
    // As WiredTiger: its snapshot is no longer kept by the history sweep.
    auto e = engineWith({{"k", "old"}, {"j", "other"}}, 10);
    auto p = e->openSession();
    writeAndPrepare(*p, {{"k", "new"}}, 20);
    CHECK(p->get(kNs, "j").status().code() == StatusCode::kIllegalOperation);
    CHECK(p->get(kNs, "k").status().code() == StatusCode::kIllegalOperation);
    CHECK(p->count(kNs, {}).status().code() == StatusCode::kIllegalOperation);
    CHECK(p->openCursor(kNs).status().code() == StatusCode::kIllegalOperation);
    CHECK(p->prepared());
    mustOk(p->commit(21, 21));
    CHECK(readAt(*e, "k", 21) == "new");
}

TEST_CASE("test_prepare06_writer_on_prepared_key: WriteConflict") {
    auto e = engineWith({{"k", "old"}}, 10);
    auto p = e->openSession();
    writeAndPrepare(*p, {{"k", "new"}}, 20);
    auto w = e->openSession();
    mustOk(w->begin());
    Status st = w->put(kNs, "k", "mine");
    CHECK(st.code() == StatusCode::kWriteConflict);
    CHECK(st.message().find("prepared") != std::string::npos);
    CHECK_FALSE(w->inTransaction());  // a write conflict aborts the transaction
    mustOk(w->begin());
    CHECK(w->remove(kNs, "k").code() == StatusCode::kWriteConflict);
    // An implicit write retries until its retry timeout, then reports it.
    w->setRetryTimeout(std::chrono::milliseconds(0));
    CHECK(w->put(kNs, "k", "mine").code() == StatusCode::kWriteConflict);
    mustOk(p->abort());
    mustOk(w->put(kNs, "k", "mine"));
    CHECK(readAt(*e, "k", 0) == "mine");
}

TEST_CASE(
    "test_prepare07_ignore_prepare: reads as if the prepared writes were absent, may not "
    "write") {
    auto e = engineWith({{"k", "old"}}, 10);
    auto p = e->openSession();
    writeAndPrepare(*p, {{"k", "new"}, {"fresh", "1"}}, 20);
    CHECK(readAt(*e, "k", 0, true) == "old");
    CHECK(readAt(*e, "k", 25, true) == "old");
    CHECK(readAt(*e, "fresh", 0, true) == "<NotFound>");
    auto s = e->openSession();
    TxnOptions o;
    o.ignorePrepare = true;
    mustOk(s->begin(o));
    CHECK(scanAll(*s, kNs) == "k=old");
    CHECK(s->put(kNs, "z", "1").code() == StatusCode::kIllegalOperation);
    mustOk(s->abort());
    mustOk(p->commit(21, 21));
    CHECK(readAt(*e, "k", 0, true) == "new");  // committed: seen as usual
}

TEST_CASE(
    "test_prepare08_prepared_delete: conflicts like a write; committed, the key is gone at "
    "its commit timestamp only") {
    auto e = engineWith({{"k", "old"}, {"j", "keep"}}, 10);
    auto p = e->openSession();
    mustOk(p->begin());
    mustOk(p->remove(kNs, "k"));
    mustOk(p->prepare(20));
    CHECK(readAt(*e, "k", 0) == "<PrepareConflict>");
    CHECK(readAt(*e, "k", 15) == "old");
    CHECK(readAt(*e, "k", 0, true) == "old");
    auto history = e->openSession()->keyHistory(kNs, "k");
    REQUIRE_OK(history.status());
    REQUIRE(history.value().size() >= 2);
    CHECK(history.value()[0].state == KeyVersion::State::kPrepared);
    CHECK(history.value()[0].tombstone);
    CHECK(history.value()[0].startTs == 20);
    mustOk(p->commit(30, 30));
    CHECK(readAt(*e, "k", 29) == "old");
    CHECK(readAt(*e, "k", 30) == "<NotFound>");
    CHECK(readAt(*e, "j", 30) == "keep");
}

TEST_CASE("test_prepare09_abort: the old values come back, the counters count it") {
    auto e = engineWith({{"k", "old"}}, 10);
    auto p = e->openSession();
    writeAndPrepare(*p, {{"k", "new"}}, 20);
    nlohmann::json t = transactionsStatus(*e);
    CHECK(t["totalPrepared"] == 1);
    CHECK(t["currentPrepared"] == 1);
    REQUIRE(e->preparedTransactions().size() == 1);
    CHECK(e->preparedTransactions()[0].prepareTs == 20);
    CHECK(e->preparedTransactions()[0].sessionId == p->id());
    // currentOp lists the idle prepared transaction with its prepare timestamp.
    nlohmann::json ops = nlohmann::json::parse(e->currentOp(true));
    bool listed = false;
    for (const auto& op : ops["inprog"])
        if (op.contains("transaction") && op["transaction"].value("prepareTimestamp", 0) == 20)
            listed = true;
    CHECK(listed);
    // A session's prepared transaction is not the engine's to end.
    mvcc::TxnId id = e->preparedTransactions()[0].txnId;
    CHECK(e->commitPrepared(id, 21, 21).code() == StatusCode::kIllegalOperation);
    CHECK(e->abortPrepared(id + 1000).code() == StatusCode::kNotFound);
    mustOk(p->abort());
    CHECK_FALSE(p->inTransaction());
    CHECK(readAt(*e, "k", 0) == "old");
    t = transactionsStatus(*e);
    CHECK(t["totalPreparedThenAborted"] == 1);
    CHECK(t["totalPreparedThenCommitted"] == 0);
    CHECK(t["currentPrepared"] == 0);
    CHECK(e->preparedTransactions().empty());
    writeAndPrepare(*p, {{"k", "new"}}, 30);
    mustOk(p->commit(30, 30));
    t = transactionsStatus(*e);
    CHECK(t["totalPrepared"] == 2);
    CHECK(t["totalPreparedThenCommitted"] == 1);
}

TEST_CASE(
    "test_prepare10_cursors_and_scans: PrepareConflict in a transaction, at the prepared "
    "key") {
    auto e = engineWith({{"a", "1"}, {"b", "2"}, {"c", "3"}}, 10);
    auto p = e->openSession();
    writeAndPrepare(*p, {{"b", "22"}}, 20);
    auto s = e->openSession();
    mustOk(s->begin());
    auto c = s->openCursor(kNs);
    REQUIRE_OK(c.status());
    Cursor& cur = *c.value();
    mustOk(cur.first());
    CHECK(cur.key() == "a");
    CHECK(cur.next().code() == StatusCode::kPrepareConflict);
    CHECK(cur.seek("b").code() == StatusCode::kPrepareConflict);
    mustOk(cur.seek("c"));
    CHECK(cur.key() == "c");
    c.value().reset();
    std::vector<std::string> seen;
    Status scan = s->scan(kNs, {}, [&](std::string_view k, std::string_view) {
        seen.emplace_back(k);
        return true;
    });
    CHECK(scan.code() == StatusCode::kPrepareConflict);
    CHECK(seen == std::vector<std::string>{"a"});
    CHECK(s->count(kNs).status().code() == StatusCode::kPrepareConflict);
    mustOk(s->abort());
    // Below the prepare timestamp: no conflict.
    TxnOptions before;
    before.readTs = 15;
    mustOk(s->begin(before));
    CHECK(scanAll(*s, kNs) == "a=1,b=2,c=3");
    mustOk(s->abort());
    mustOk(p->commit(21, 21));
    CHECK(scanAll(*s, kNs) == "a=1,b=22,c=3");
}

TEST_CASE(
    "test_prepare11_implicit_read_waits: an implicit read, cursor or scan waits for the "
    "prepared transaction and counts the conflict" *
    doctest::test_suite("concurrency")) {
    auto e = engineWith({{"a", "1"}, {"b", "2"}}, 10);
    auto p = e->openSession();
    writeAndPrepare(*p, {{"b", "22"}}, 20);
    std::string got, scanned, viaCursor;
    std::thread reader([&] {
        auto s = e->openSession();
        s->setName("waiting-reader");
        got = getOr(*s, kNs, "b");
        scanned = scanAll(*s, kNs);
    });
    waitForPrepareConflict(*e, "waiting-reader");
    mustOk(p->commit(21, 21));
    reader.join();
    CHECK(got == "22");
    CHECK(scanned == "a=1,b=22");
    // An aborted one: the reader gets the old value.
    writeAndPrepare(*p, {{"a", "11"}}, 30);
    std::thread reader2([&] {
        auto s = e->openSession();
        s->setName("waiting-reader-2");
        viaCursor = scanAll(*s, kNs);
    });
    waitForPrepareConflict(*e, "waiting-reader-2");
    mustOk(p->abort());
    reader2.join();
    CHECK(viaCursor == "a=1,b=22");
}

TEST_CASE(
    "test_prepare12_killop_ends_a_waiting_read: Interrupted, the prepared transaction "
    "stays" *
    doctest::test_suite("concurrency")) {
    auto e = engineWith({{"k", "old"}}, 10);
    auto p = e->openSession();
    writeAndPrepare(*p, {{"k", "new"}}, 20);
    auto s = e->openSession();
    s->setName("killed-reader");
    Status st;
    std::thread reader([&] { st = s->get(kNs, "k").status(); });
    mustOk(e->killOp(waitForPrepareConflict(*e, "killed-reader")));
    reader.join();
    CHECK(st.code() == StatusCode::kInterrupted);
    CHECK(p->prepared());
    mustOk(p->commit(20, 20));
}

TEST_CASE(
    "test_prepare13_timestamps: all_durable and checkpoints stay below the prepare "
    "timestamp until it resolves") {
    TempDir dir("mvkv-prepare-test");
    auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
    auto s = e->openSession();
    mustOk(s->createCollection(kNs));
    mustOk(s->begin());
    mustOk(s->put(kNs, "k", "old"));
    mustOk(s->commit(10));
    auto p = e->openSession();
    writeAndPrepare(*p, {{"k", "new"}}, 20);
    // Others commit after the prepare timestamp meanwhile.
    mustOk(s->begin());
    mustOk(s->put(kNs, "other", "x"));
    mustOk(s->commit(30));
    mustOk(e->setStableTimestamp(40));  // stable may move; durability may not
    CHECK(e->timestamps().allDurable < 20);
    mustOk(e->checkpoint());
    CHECK(e->timestamps().allDurable < 20);
    CHECK(e->oplog()->visibleTs() < 20);
    // The commit may land below others' (its prepare held the point), at or after prepare.
    mustOk(p->commit(25, 45));
    CHECK(e->timestamps().allDurable >= 45);
    CHECK(readAt(*e, "k", 25) == "new");
    CHECK(readAt(*e, "k", 24) == "old");
}

TEST_CASE(
    "test_prepare13b_empty_prepared_commit: committing a prepared transaction that wrote "
    "nothing makes the commits it held back visible") {
    TempDir dir("mvkv-prepare-test");
    auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
    auto s = e->openSession();
    mustOk(s->createCollection(kNs));
    auto p = e->openSession();
    mustOk(p->begin());
    mustOk(p->prepare(20));  // no writes: nothing to log at its commit
    mustOk(s->begin());
    mustOk(s->put(kNs, "other", "x"));
    mustOk(s->commit(30));
    CHECK(e->oplog()->visibleTs() < 20);  // held below the prepare timestamp
    mustOk(p->commit(25, 25));
    // Published by the commit itself: no later commit is needed to move it.
    CHECK(e->oplog()->visibleTs() >= 30);
}

TEST_CASE(
    "test_prepare14_history_pinned: the version a prepared update replaced stays readable "
    "through the sweep") {
    auto e = engineWith({{"k", "v1"}}, 10);
    auto s = e->openSession();
    mustOk(s->begin());
    mustOk(s->put(kNs, "k", "v2"));
    mustOk(s->commit(15));
    auto p = e->openSession();
    writeAndPrepare(*p, {{"k", "v3"}}, 20);
    mustOk(e->setStableTimestamp(18));
    mustOk(e->setOldestTimestamp(18));
    e->sweepHistory();
    e->sweepHistory();
    CHECK(readAt(*e, "k", 18) == "v2");
    CHECK(readAt(*e, "k", 0, true) == "v2");
    CHECK(readAt(*e, "k", 19, true) == "v2");
    mustOk(p->commit(25, 25));
    e->sweepHistory();
    CHECK(readAt(*e, "k", 24) == "v2");
    CHECK(readAt(*e, "k", 25) == "v3");
}

TEST_CASE(
    "test_prepare15_crash_between_prepare_and_commit: rebuilt as prepared, committed by id "
    "after the restart, visible at its commit timestamp") {
    TempDir dir("mvkv-prepare-test");
    TempDir scratchDir("mvkv-prepare-test");
    const std::string scratch = scratchDir.path + "/data";
    auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kFsync));
    auto s = e->openSession();
    mustOk(s->createCollection(kNs));
    mustOk(s->begin());
    mustOk(s->put(kNs, "k", "old"));
    mustOk(s->put(kNs, "gone", "soon"));
    mustOk(s->commit(10));
    auto p = e->openSession();
    mustOk(p->begin());
    mustOk(p->put(kNs, "k", "new"));
    mustOk(p->put(kNs, "fresh", "1"));
    mustOk(p->remove(kNs, "gone"));
    mustOk(p->prepare(20));
    const mvcc::TxnId id = e->preparedTransactions().at(0).txnId;
    copyAsCrashed(dir.path, scratch);
    mustOk(p->abort());
    p.reset();
    s.reset();
    e.reset();

    {
        auto r = openEngine(onDisk(scratch, oplog::SyncMode::kFsync));
        auto list = r->preparedTransactions();
        REQUIRE(list.size() == 1);
        CHECK(list[0].txnId == id);
        CHECK(list[0].prepareTs == 20);
        CHECK(list[0].sessionId == 0);
        CHECK(list[0].writes == 3);
        CHECK(readAt(*r, "k", 0) == "<PrepareConflict>");
        CHECK(readAt(*r, "k", 15) == "old");
        CHECK(readAt(*r, "k", 0, true) == "old");
        CHECK(readAt(*r, "gone", 0, true) == "soon");
        nlohmann::json ops = nlohmann::json::parse(r->currentOp(true));
        bool listed = false;
        for (const auto& op : ops["inprog"])
            if (op.contains("transaction") && op["transaction"].value("prepareTimestamp", 0) == 20)
                listed = true;
        CHECK(listed);
        CHECK(transactionsStatus(*r)["currentPrepared"] == 1);
        // A writer conflicts; a commit below the prepare is refused and it stays.
        auto w = r->openSession();
        mustOk(w->begin());
        CHECK(w->put(kNs, "k", "x").code() == StatusCode::kWriteConflict);
        CHECK(r->commitPrepared(id, 19, 19).code() == StatusCode::kInvalidArgument);
        REQUIRE(r->preparedTransactions().size() == 1);
        mustOk(r->commitPrepared(id, 25, 25));
        CHECK(r->preparedTransactions().empty());
        CHECK(r->commitPrepared(id, 26, 26).code() == StatusCode::kNotFound);
        CHECK(readAt(*r, "k", 24) == "old");
        CHECK(readAt(*r, "k", 25) == "new");
        CHECK(readAt(*r, "fresh", 25) == "1");
        CHECK(readAt(*r, "gone", 25) == "<NotFound>");
        CHECK(readAt(*r, "gone", 24) == "soon");
        // A transaction after the restart takes a new id, never the recovered one.
        CHECK_FALSE(w->inTransaction());  // the conflict aborted it
        mustOk(w->put(kNs, "after", "restart"));
    }
    // Open again: the commit is in the log; nothing is prepared.
    auto again = openEngine(onDisk(scratch, oplog::SyncMode::kFsync));
    CHECK(again->preparedTransactions().empty());
    CHECK(readAt(*again, "k", 0) == "new");
    CHECK(readAt(*again, "k", 24) == "old");
    CHECK(readAt(*again, "fresh", 0) == "1");
    CHECK(readAt(*again, "gone", 0) == "<NotFound>");
    CHECK(readAt(*again, "after", 0) == "restart");
}

TEST_CASE(
    "test_prepare15b_durable_timestamp_after_a_crash: a prepared commit's durable timestamp is "
    "logged; after a crash all_durable and the commit rules reach it again; oplog readers see "
    "only the writes") {
    TempDir dir("mvkv-prepare-test");
    TempDir scratchDir("mvkv-prepare-test");
    const std::string scratch = scratchDir.path + "/data";
    mvcc::Timestamp allDurableBefore = 0;
    {
        auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kFsync));
        auto s = e->openSession();
        createWithOld(*s);
        auto p = e->openSession();
        writeAndPrepare(*p, {{"k", "new"}, {"j", "1"}}, 20);
        mustOk(p->commit(25, 40));
        allDurableBefore = e->timestamps().allDurable;
        CHECK(allDurableBefore >= 40);
        // A commit at or below the durable timestamp is refused before the crash...
        mustOk(s->begin());
        mustOk(s->put(kNs, "x", "1"));
        CHECK(s->commit(30).code() == StatusCode::kInvalidArgument);
        // ...and the oplog shows the commit's writes only, at 25.
        e->oplog()->refreshVisibility();
        auto cur = e->openOplogCursor({}).value();
        std::vector<oplog::OplogEntry> entries;
        REQUIRE_OK(cur->next(&entries, 100, std::chrono::milliseconds(0)));
        std::vector<std::string> seen;
        for (const auto& en : entries)
            if (en.op != oplog::OpType::kCommand || en.ns != kNs)  // not the create
                seen.push_back(std::to_string(en.ts) + " " + en.ns + " " + en.key);
        std::sort(seen.begin(), seen.end());
        CHECK(seen == std::vector<std::string>{"10 db.c k", "25 db.c j", "25 db.c k"});
        mustOk(e->oplog()->flush());
        copyAsCrashed(dir.path, scratch);
    }
    auto r = openEngine(onDisk(scratch, oplog::SyncMode::kFsync));
    CHECK(r->timestamps().allDurable == allDurableBefore);  // was 25: the durable one was lost
    CHECK(readAt(*r, "k", 24) == "old");
    CHECK(readAt(*r, "k", 25) == "new");
    auto s = r->openSession();
    mustOk(s->begin());
    mustOk(s->put(kNs, "x", "1"));
    Status refused = s->commit(30);
    CHECK(refused.code() == StatusCode::kInvalidArgument);
    MESSAGE(refused.message());
    mustOk(s->begin());
    mustOk(s->put(kNs, "x", "1"));
    mustOk(s->commit(41));
}

TEST_CASE(
    "test_prepare16_recovered_abort_and_clean_close: a closed session's prepared "
    "transaction stays prepared; a close leaves a recovered one prepared; its abort is "
    "logged") {
    TempDir dir("mvkv-prepare-test");
    TempDir scratchDir("mvkv-prepare-test");
    const std::string scratch = scratchDir.path + "/data";
    mvcc::TxnId id = 0;
    {
        auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
        auto s = e->openSession();
        createWithOld(*s);
        {
            auto gone = e->openSession();
            writeAndPrepare(*gone, {{"k", "closed"}}, 15);
        }
        // The closed session's transaction outlives it; the engine aborts it by id.
        REQUIRE(e->preparedTransactions().size() == 1);
        CHECK(readAt(*e, "k", 0) == "<PrepareConflict>");
        mustOk(e->abortPrepared(e->preparedTransactions()[0].txnId));
        CHECK(readAt(*e, "k", 0) == "old");
        auto p = e->openSession();
        writeAndPrepare(*p, {{"k", "new"}}, 20);
        id = e->preparedTransactions().at(0).txnId;
        // A checkpoint while prepared does not hold the prepared write.
        mustOk(e->checkpoint());
        mustOk(e->oplog()->flush());
        copyAsCrashed(dir.path, scratch);
    }
    {
        auto e = openEngine(onDisk(scratch, oplog::SyncMode::kWrite));
        CHECK(e->recovery().checkpointLoaded);
        CHECK(e->recovery().checkpointTs < 20);
        REQUIRE(e->preparedTransactions().size() == 1);
        CHECK(e->preparedTransactions()[0].txnId == id);
        CHECK(readAt(*e, "k", 0, true) == "old");
    }  // closed with it unresolved
    {
        auto e = openEngine(onDisk(scratch, oplog::SyncMode::kWrite));
        REQUIRE(e->preparedTransactions().size() == 1);  // the close left it prepared
        CHECK(readAt(*e, "k", 0) == "<PrepareConflict>");
        mustOk(e->abortPrepared(id));
        CHECK(e->abortPrepared(id).code() == StatusCode::kNotFound);
        CHECK(readAt(*e, "k", 0) == "old");
        CHECK(transactionsStatus(*e)["totalPreparedThenAborted"] == 1);
    }
    auto e = openEngine(onDisk(scratch, oplog::SyncMode::kWrite));
    CHECK(e->preparedTransactions().empty());
    CHECK(readAt(*e, "k", 0) == "old");
    mustOk(e->openSession()->put(kNs, "k", "later"));
    CHECK(readAt(*e, "k", 0) == "later");
}

TEST_CASE(
    "test_prepare18_outlives_its_session: a closed session's prepared transaction stays "
    "prepared, owned by the engine, pins what it pinned, and is committed by its id") {
    auto e = engineWith({{"k", "v1"}, {"j", "j1"}}, 10);
    auto s = e->openSession();
    mustOk(s->begin());
    mustOk(s->put(kNs, "k", "v2"));
    mustOk(s->commit(15));
    mvcc::TxnId id = 0;
    {
        auto p = e->openSession();
        writeAndPrepare(*p, {{"k", "v3"}, {"j", "j3"}}, 20);
        id = e->preparedTransactions().at(0).txnId;
    }  // the session closes with its transaction prepared
    auto list = e->preparedTransactions();
    REQUIRE(list.size() == 1);
    CHECK(list[0].txnId == id);
    CHECK(list[0].prepareTs == 20);
    CHECK(list[0].sessionId == 0);  // the engine's now
    CHECK(list[0].writes == 2);
    nlohmann::json ops = nlohmann::json::parse(e->currentOp(true));
    bool listed = false;
    for (const auto& op : ops["inprog"])
        if (op.contains("transaction") && op["transaction"].value("prepareTimestamp", 0) == 20)
            listed = true;
    CHECK(listed);
    nlohmann::json t = transactionsStatus(*e);
    CHECK(t["currentPrepared"] == 1);
    CHECK(t["totalPreparedThenAborted"] == 0);
    // Readers meet it prepared; a writer conflicts with it.
    CHECK(readAt(*e, "k", 0) == "<PrepareConflict>");
    CHECK(readAt(*e, "j", 0, true) == "j1");
    auto w = e->openSession();
    mustOk(w->begin());
    CHECK(w->put(kNs, "k", "w").code() == StatusCode::kWriteConflict);
    CHECK_FALSE(w->inTransaction());  // a conflict aborts it
    // all_durable stays below its prepare; the history it pins stays.
    mustOk(s->begin());
    mustOk(s->put(kNs, "other", "x"));
    mustOk(s->commit(30));
    CHECK(e->timestamps().allDurable < 20);
    mustOk(e->setStableTimestamp(18));
    mustOk(e->setOldestTimestamp(18));
    e->sweepHistory();
    e->sweepHistory();
    CHECK(readAt(*e, "k", 18) == "v2");
    CHECK(readAt(*e, "k", 19, true) == "v2");
    // A commit below its prepare is refused and leaves it prepared, still the engine's.
    CHECK(e->commitPrepared(id, 19, 19).code() != StatusCode::kOk);
    REQUIRE(e->preparedTransactions().size() == 1);
    mustOk(e->commitPrepared(id, 25, 35));
    CHECK(e->preparedTransactions().empty());
    CHECK(e->timestamps().allDurable >= 35);
    CHECK(readAt(*e, "k", 24) == "v2");
    CHECK(readAt(*e, "k", 25) == "v3");
    CHECK(readAt(*e, "j", 0) == "j3");
    t = transactionsStatus(*e);
    CHECK(t["currentPrepared"] == 0);
    CHECK(t["totalPreparedThenCommitted"] == 1);
    CHECK(e->commitPrepared(id, 40, 40).code() == StatusCode::kNotFound);
}

TEST_CASE(
    "test_prepare19_orphan_survives_close: a closed session's prepared transaction is "
    "rebuilt by the next open and committed there") {
    TempDir dir("mvkv-prepare-test");
    mvcc::TxnId id = 0;
    {
        auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
        auto s = e->openSession();
        createWithOld(*s);
        {
            auto p = e->openSession();
            writeAndPrepare(*p, {{"k", "new"}}, 20);
            id = e->preparedTransactions().at(0).txnId;
        }
        REQUIRE(e->preparedTransactions().size() == 1);
        mustOk(e->checkpoint());  // never holds the prepared write as committed
    }  // a clean close with it unresolved: dropped in memory, kept in the log
    {
        auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
        REQUIRE(e->preparedTransactions().size() == 1);
        CHECK(e->preparedTransactions()[0].txnId == id);
        CHECK(readAt(*e, "k", 0) == "<PrepareConflict>");
        CHECK(readAt(*e, "k", 0, true) == "old");
        mustOk(e->commitPrepared(id, 25, 25));
    }
    auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kWrite));
    CHECK(e->preparedTransactions().empty());
    CHECK(readAt(*e, "k", 24) == "old");
    CHECK(readAt(*e, "k", 0) == "new");
}

TEST_CASE(
    "test_prepare20_commit_record_not_written: the commit returns the error and the "
    "transaction stays prepared; the next open rebuilds it, and it is committed there") {
    TempDir dir("mvkv-prepare-test");
    mvcc::TxnId id = 0;
    {
        auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kFsync));
        auto s = e->openSession();
        createWithOld(*s);
        auto p = e->openSession();
        writeAndPrepare(*p, {{"k", "new"}}, 20);
        id = e->preparedTransactions().at(0).txnId;
        REQUIRE_OK(configureFailPoint("failOplogWrite", "times 1").status());
        Status c = p->commit(25, 25);
        CHECK(c.code() == StatusCode::kIOError);
        CHECK(c.message().find("stays prepared") != std::string::npos);
        CHECK(p->prepared());
        REQUIRE(e->preparedTransactions().size() == 1);
        CHECK(readAt(*e, "k", 0) == "<PrepareConflict>");
        // The engine takes no more writes: the abort's record fails too, and
        // says so; it is rolled back in memory all the same.
        Status a = p->abort();
        CHECK(a.code() == StatusCode::kIOError);
        CHECK(a.message().find("rebuilds it as prepared") != std::string::npos);
        CHECK_FALSE(p->inTransaction());
        CHECK(readAt(*e, "k", 0) == "old");
    }
    {
        auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kFsync));
        REQUIRE(e->preparedTransactions().size() == 1);
        CHECK(e->preparedTransactions()[0].txnId == id);
        CHECK(readAt(*e, "k", 0) == "<PrepareConflict>");
        mustOk(e->commitPrepared(id, 25, 25));
        CHECK(readAt(*e, "k", 0) == "new");
    }
    auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kFsync));
    CHECK(e->preparedTransactions().empty());
    CHECK(readAt(*e, "k", 24) == "old");
    CHECK(readAt(*e, "k", 0) == "new");
}

TEST_CASE(
    "test_prepare17_readers_during_prepare_and_commit: implicit readers never see half a "
    "transaction" *
    doctest::test_suite("concurrency")) {
    // One thread writes a pair (a, b) to the same value in transactions it
    // prepares and then commits or aborts; readers read the pair implicitly
    // (point reads and scans), waiting on prepare conflicts. Every read
    // sees a == b, and the values never go back.
    const uint32_t seed = mvkv::testing::testSeed();
    auto e = engineWith({{"a", "0"}, {"b", "0"}}, 10);
    std::atomic<bool> done{false};
    std::atomic<int> failures{0};
    auto reader = [&](int t) {
        auto s = e->openSession();
        long last = 0;
        for (int i = 0; !done.load(); ++i) {
            std::string a, b;
            if (t % 2 == 0) {
                std::string all = scanAll(*s, kNs);
                size_t comma = all.find(',');
                a = all.substr(2, comma - 2);
                b = all.substr(comma + 3);
            } else {
                mustOk(s->begin());
                Status sa = s->get(kNs, "a", &a);
                Status sb = s->get(kNs, "b", &b);
                mustOk(s->abort());
                if (sa.code() == StatusCode::kPrepareConflict ||
                    sb.code() == StatusCode::kPrepareConflict)
                    continue;  // an explicit transaction is told, not made to wait
                if (!sa.ok() || !sb.ok())
                    failures.fetch_add(1);
            }
            if (a != b || std::stol(a) < last)
                failures.fetch_add(1);
            last = std::stol(a);
        }
    };
    std::vector<std::thread> readers;
    for (int t = 0; t < 3; ++t)
        readers.emplace_back(reader, t);
    std::mt19937_64 rng(seed);
    auto w = e->openSession();
    mvcc::Timestamp ts = 10;
    for (int i = 1; i <= 300; ++i) {
        mustOk(w->begin());
        mustOk(w->put(kNs, "a", std::to_string(i)));
        mustOk(w->put(kNs, "b", std::to_string(i)));
        mustOk(w->prepare(++ts));
        if (rng() % 4 == 0) {
            mustOk(w->abort());
            mustOk(w->begin());
            mustOk(w->put(kNs, "a", std::to_string(i)));
            mustOk(w->put(kNs, "b", std::to_string(i)));
            mustOk(w->commit(++ts));
        } else {
            ++ts;
            mustOk(w->commit(ts, ts));
        }
    }
    done = true;
    for (auto& t : readers)
        t.join();
    CHECK(failures.load() == 0);
    CHECK(readAt(*e, "a", 0) == "300");
}

TEST_CASE(
    "test_prepare21_commit_record_lock_timeout: a prepared commit that could not log stays "
    "prepared and still holds all_durable below its prepare timestamp") {
    TempDir dir("mvkv-prepare-test");
    auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kNone));
    auto s = e->openSession();
    mustOk(s->createCollection(kNs));
    mustOk(s->createCollection("test.other"));
    mustOk(s->begin());
    mustOk(s->put(kNs, "k", "old"));
    mustOk(s->commit(10));
    auto p = e->openSession();
    writeAndPrepare(*p, {{"k", "new"}}, 20);
    {
        // Another locker holds `local`: the commit record cannot be written.
        lockmgr::Locker other(e->lockManager());
        lockmgr::DBLock hold(other, "local", lockmgr::LockMode::kX);
        REQUIRE(hold.status().ok());
        p->setLockTimeout(std::chrono::milliseconds(10));
        Status c = p->commit(25, 25);
        CHECK(c.code() == StatusCode::kLockTimeout);
        CHECK(p->prepared());
    }
    // Later commits above the prepare timestamp finish; all_durable (and so
    // every checkpoint and oplog reader) stays below the prepare.
    mustOk(s->begin());
    mustOk(s->put("test.other", "x", "1"));
    mustOk(s->commit(30));
    CHECK(e->timestamps().allDurable < 20);
    p->setLockTimeout(std::nullopt);
    mustOk(p->commit(25, 25));
    CHECK(readAt(*e, "k", 0) == "new");
}

TEST_CASE(
    "test_prepare22_recovered_abort_by_id: a transaction rebuilt as prepared and aborted by "
    "id leaves each key as it was below it (values replayed from the log or a checkpoint, a "
    "key written twice, a removal)") {
    for (int variant = 0; variant < 4; ++variant) {
        CAPTURE(variant);
        TempDir dir("mvkv-prepare-test");
        TempDir scratchDir("mvkv-prepare-test");
        const std::string scratch = scratchDir.path + "/data";
        {
            auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kFsync));
            auto s = e->openSession();
            mustOk(s->createCollection(kNs));
            mustOk(s->put(kNs, "k", "v1"));
            mustOk(s->put(kNs, "j", "j1"));
            if (variant == 3)
                mustOk(e->checkpoint());
            auto p = e->openSession();
            mustOk(p->begin());
            if (variant == 0) {
                mustOk(p->put(kNs, "k", "v2"));
            } else if (variant == 1) {
                mustOk(p->put(kNs, "k", "v2"));
                mustOk(p->remove(kNs, "k"));
            } else {
                mustOk(p->remove(kNs, "k"));
                mustOk(p->put(kNs, "k", "v3"));
                mustOk(p->put(kNs, "j", "j2"));
            }
            mustOk(p->prepare(e->timestamps().clock + 1));
            copyAsCrashed(dir.path, scratch);
            mustOk(p->abort());
        }
        auto r = openEngine(onDisk(scratch, oplog::SyncMode::kFsync));
        REQUIRE(r->preparedTransactions().size() == 1);
        mustOk(r->abortPrepared(r->preparedTransactions()[0].txnId));
        CHECK(readAt(*r, "k", 0) == "v1");
        CHECK(readAt(*r, "j", 0) == "j1");
    }
}

TEST_CASE(
    "test_prepare23_checkpoint_during_a_prepared_commit: while a prepared transaction commits "
    "after its prepare timestamp, all_durable and a checkpoint stay below the prepare "
    "timestamp, and the checkpoint holds every other key") {
    // Found by mvkv-torture: all_durable rose to the commit timestamp - 1
    // before the prepared versions were committed, a checkpoint read there
    // met one (PrepareConflict), and the scan stopped, writing a checkpoint
    // without the rest of the collection.
    mvkv::testing::AllOff off;
    TempDir dir("mvkv-prepare-test");
    TempDir scratchDir("mvkv-prepare-test");
    const std::string scratch = scratchDir.path + "/data";
    {
        auto e = openEngine(onDisk(dir.path, oplog::SyncMode::kFsync));
        auto s = e->openSession();
        createWithOld(*s);  // k=old at 10
        for (const char* key : {"a", "m", "z"}) {
            mustOk(s->begin());
            mustOk(s->put(kNs, key, key));
            mustOk(s->commit());
        }
        auto p = e->openSession();
        writeAndPrepare(*p, {{"k", "new"}}, 30);
        mustOk(s->begin());
        mustOk(s->put(kNs, "b", "b"));
        mustOk(s->commit(32));  // the newest commit is past the prepare timestamp
        const uint64_t at = mvkv::configureFailPoint("hangAfterOplogAppend", "times 1").value();
        std::thread committer([&] { mustOk(p->commit(35, 35)); });
        REQUIRE(mvkv::waitForFailPoint("hangAfterOplogAppend", at + 1, std::chrono::seconds(30))
                    .ok());
        // Its commit record is in the log; its versions are still prepared.
        CHECK(e->timestamps().allDurable < 30);
        Status c = e->checkpoint();
        CHECK_MESSAGE(c.ok(), c.toString());
        auto status = nlohmann::json::parse(e->serverStatus("checkpoint").value());
        CHECK(status["checkpoint"]["lastTimestamp"].get<uint64_t>() < 30);
        CHECK(status["checkpoint"]["lastEntries"] == 4);  // a, k (old), m, z; not b (32)
        REQUIRE(mvkv::configureFailPoint("hangAfterOplogAppend", "off").ok());
        committer.join();
        CHECK(e->timestamps().allDurable >= 35);
        copyAsCrashed(dir.path, scratch);
    }
    auto r = openEngine(onDisk(scratch, oplog::SyncMode::kFsync));
    CHECK(r->recovery().checkpointLoaded);
    for (const char* key : {"a", "b", "m", "z"})
        CHECK(readAt(*r, key, 0) == key);
    CHECK(readAt(*r, "k", 34) == "old");
    CHECK(readAt(*r, "k", 35) == "new");
}
