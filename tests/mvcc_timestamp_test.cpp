// WiredTiger's timestamp scenarios on the MVCC layer alone (no engine): reads
// at a timestamp, all_durable, oldest_reader and pinned, every timestamp rule,
// the commit-timestamp clock, transaction misuse, and MongoDB's write-conflict
// retry schedule. docs/architecture.md, "Timestamps and visibility" and
// "Write conflicts".
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "mvcc/timestamp.h"
#include "mvcc/transaction.h"
#include "mvcc/txn_manager.h"
#include "mvcc/update.h"
#include "mvcc/write_conflict_retry.h"
#include "tests/mvcc_test_util.h"
#include "util/deadline.h"
#include "util/status.h"

using namespace mvkv;
using namespace mvkv::mvcc;
using namespace mvkv::mvcc::testing;
using namespace std::chrono_literals;

namespace {

// `s` is InvalidArgument and its message names both numbers.
void checkRefused(const Status& s, Timestamp a, Timestamp b) {
    CHECK_CODE(s, StatusCode::kInvalidArgument);
    CAPTURE(s.message());
    CHECK(contains(s.message(), std::to_string(a)));
    CHECK(contains(s.message(), std::to_string(b)));
}

std::string keyName(int k) {
    return std::to_string(k);
}

// keys 1..100, committed at ts = key, in a shuffled order.
void loadHundredKeys(TransactionManager& mgr, Collection& c) {
    std::vector<int> order;
    for (int k = 1; k <= 100; ++k)
        order.push_back(k);
    std::shuffle(order.begin(), order.end(), std::mt19937(20240601));
    for (int k : order)
        commitValue(mgr, c[keyName(k)], "v1:" + keyName(k), static_cast<Timestamp>(k));
}

}  // namespace

// ---------------------------------------------------------------------------
// Reads at a timestamp

TEST_CASE("timestamps: with keys 1..100 committed at ts=key, a read at t sees exactly keys <= t") {
    TransactionManager mgr;
    Collection c;
    loadHundredKeys(mgr, c);
    CHECK(mgr.timestamps().allDurable == 100);

    for (Timestamp t = 1; t <= 101; ++t) {
        CAPTURE(t);
        Transaction r;
        REQUIRE_OK(mgr.begin(r, at(t)));
        int seen = 0;
        for (int k = 1; k <= 100; ++k) {
            auto v = read(r, c[keyName(k)]);
            if (static_cast<Timestamp>(k) <= t) {
                CHECK(v == "v1:" + keyName(k));
                ++seen;
            } else {
                CHECK(v == std::nullopt);
            }
        }
        CHECK(seen == static_cast<int>(std::min<Timestamp>(t, 100)));
        REQUIRE_OK(mgr.commit(r));
    }
}

TEST_CASE("timestamps: read timestamp 0 means no read timestamp and reads every commit") {
    // WiredTiger refuses read_timestamp=0; here kNoTimestamp (0) in
    // BeginOptions is "no read timestamp", so "a read at 0" sees all keys.
    TransactionManager mgr;
    Collection c;
    loadHundredKeys(mgr, c);
    Transaction r;
    REQUIRE_OK(mgr.begin(r, at(0)));
    CHECK_FALSE(r.hasReadTs());
    for (int k = 1; k <= 100; ++k)
        CHECK(read(r, c[keyName(k)]) == "v1:" + keyName(k));
    REQUIRE_OK(mgr.commit(r));
}

TEST_CASE("timestamps: later updates, deletes and re-inserts read correctly at every timestamp") {
    TransactionManager mgr;
    Collection c;
    loadHundredKeys(mgr, c);
    std::mt19937 rng(7);
    std::vector<int> keys;
    for (int k = 1; k <= 100; ++k)
        keys.push_back(k);
    // Phase 2: even keys updated at key+100. Phase 3: multiples of 3 deleted
    // at key+200. Phase 4: multiples of 5 re-inserted at key+300.
    std::shuffle(keys.begin(), keys.end(), rng);
    for (int k : keys) {
        if (k % 2 == 0)
            commitValue(mgr, c[keyName(k)], "v2:" + keyName(k), static_cast<Timestamp>(k + 100));
    }
    std::shuffle(keys.begin(), keys.end(), rng);
    for (int k : keys) {
        if (k % 3 == 0)
            commitWrite(mgr, c[keyName(k)], WriteKind::kTombstone, {},
                        static_cast<Timestamp>(k + 200));
    }
    std::shuffle(keys.begin(), keys.end(), rng);
    for (int k : keys) {
        if (k % 5 == 0)
            commitValue(mgr, c[keyName(k)], "v3:" + keyName(k), static_cast<Timestamp>(k + 300));
    }

    // The model: what key k holds at timestamp t, and whether it is a
    // tombstone there (rather than never written).
    auto expected = [](int k, Timestamp t) {
        std::optional<std::string> v;
        auto ts = [&](int offset) { return static_cast<Timestamp>(k + offset); };
        if (t >= ts(0))
            v = "v1:" + keyName(k);
        if (k % 2 == 0 && t >= ts(100))
            v = "v2:" + keyName(k);
        if (k % 3 == 0 && t >= ts(200))
            v = std::nullopt;
        if (k % 5 == 0 && t >= ts(300))
            v = "v3:" + keyName(k);
        return v;
    };
    auto deletedAt = [](int k, Timestamp t) {
        auto kt = static_cast<Timestamp>(k);
        return k % 3 == 0 && t >= kt + 200 && !(k % 5 == 0 && t >= kt + 300);
    };

    for (Timestamp t = 1; t <= 401; ++t) {
        CAPTURE(t);
        Transaction r;
        REQUIRE_OK(mgr.begin(r, at(t)));
        for (int k = 1; k <= 100; ++k) {
            CAPTURE(k);
            const Update* u = r.findVisible(c[keyName(k)]);
            CHECK(read(r, c[keyName(k)]) == expected(k, t));
            if (deletedAt(k, t)) {
                REQUIRE(u != nullptr);
                CHECK(u->isTombstone());
            } else if (expected(k, t)) {
                REQUIRE(u != nullptr);
                CHECK_FALSE(u->isTombstone());
            } else {
                CHECK(u == nullptr);
            }
        }
        REQUIRE_OK(mgr.commit(r));
    }
    // Without a read timestamp: the final state.
    Transaction r;
    REQUIRE_OK(mgr.begin(r));
    for (int k = 1; k <= 100; ++k)
        CHECK(read(r, c[keyName(k)]) == expected(k, 1000));
    REQUIRE_OK(mgr.commit(r));
}

// ---------------------------------------------------------------------------
// all_durable

TEST_CASE("timestamps: all_durable is held back by an unfinished smaller commit ts until commit") {
    TransactionManager mgr;
    Collection c;
    CHECK(mgr.timestamps().allDurable == kNoTimestamp);

    Transaction slow;
    REQUIRE_OK(mgr.begin(slow));
    REQUIRE_OK(put(mgr, slow, c["a"], "slow"));
    REQUIRE_OK(mgr.setCommitTimestamp(slow, 10));
    CHECK(slow.commitTs() == 10);
    CHECK(mgr.timestamps().allDurable == kNoTimestamp);

    commitValue(mgr, c["b"], "fast", 20);
    CHECK(mgr.timestamps().allDurable == 9);
    commitValue(mgr, c["c"], "fast", 30);
    CHECK(mgr.timestamps().allDurable == 9);

    REQUIRE_OK(mgr.commit(slow));
    CHECK(slow.commitTs() == 10);
    CHECK(mgr.timestamps().allDurable == 30);
}

TEST_CASE("timestamps: all_durable is released when the holding transaction aborts") {
    TransactionManager mgr;
    Collection c;
    Transaction slow;
    REQUIRE_OK(mgr.begin(slow));
    REQUIRE_OK(put(mgr, slow, c["a"], "slow"));
    REQUIRE_OK(mgr.setCommitTimestamp(slow, 15));
    commitValue(mgr, c["b"], "fast", 25);
    CHECK(mgr.timestamps().allDurable == 14);
    mgr.abort(slow);
    CHECK(mgr.timestamps().allDurable == 25);
}

TEST_CASE("timestamps: all_durable is not held back by larger commit timestamps or unset ones") {
    TransactionManager mgr;
    Collection c;
    Transaction later;  // commit ts above everything committed
    REQUIRE_OK(mgr.begin(later));
    REQUIRE_OK(put(mgr, later, c["a"], "x"));
    REQUIRE_OK(mgr.setCommitTimestamp(later, 50));
    Transaction unset;  // no commit ts yet
    REQUIRE_OK(mgr.begin(unset));
    REQUIRE_OK(put(mgr, unset, c["b"], "y"));
    Transaction reader;  // read-only
    REQUIRE_OK(mgr.begin(reader, at(5)));

    commitValue(mgr, c["c"], "z", 20);
    CHECK(mgr.timestamps().allDurable == 20);

    REQUIRE_OK(mgr.commit(later));
    CHECK(mgr.timestamps().allDurable == 50);
    REQUIRE_OK(mgr.commit(unset));  // clock timestamp, > 50
    CHECK(unset.commitTs() > 50);
    CHECK(mgr.timestamps().allDurable == unset.commitTs());
    REQUIRE_OK(mgr.commit(reader));
    CHECK(mgr.timestamps().allDurable == unset.commitTs());
}

TEST_CASE("timestamps: the smallest of several unfinished commit timestamps holds all_durable") {
    TransactionManager mgr;
    Collection c;
    commitValue(mgr, c["base"], "b", 5);
    Transaction t40, t30;
    REQUIRE_OK(mgr.begin(t40));
    REQUIRE_OK(put(mgr, t40, c["x"], "40"));
    REQUIRE_OK(mgr.setCommitTimestamp(t40, 40));
    REQUIRE_OK(mgr.begin(t30));
    REQUIRE_OK(put(mgr, t30, c["y"], "30"));
    REQUIRE_OK(mgr.setCommitTimestamp(t30, 30));
    commitValue(mgr, c["z"], "60", 60);
    CHECK(mgr.timestamps().allDurable == 29);
    REQUIRE_OK(mgr.commit(t30));
    CHECK(mgr.timestamps().allDurable == 39);
    REQUIRE_OK(mgr.commit(t40));
    CHECK(mgr.timestamps().allDurable == 60);
}

// ---------------------------------------------------------------------------
// oldest_reader and pinned

TEST_CASE("timestamps: oldest_reader and pinned follow the active readers") {
    TransactionManager mgr;
    auto ts = [&] { return mgr.timestamps(); };
    CHECK(ts().oldestReader == kNoTimestamp);
    CHECK(ts().pinned == kNoTimestamp);

    Transaction r30, r20, noTs;
    REQUIRE_OK(mgr.begin(r30, at(30)));
    CHECK(ts().oldestReader == 30);
    CHECK(mgr.stats().oldestReadTs == 30);
    CHECK(ts().pinned == kNoTimestamp);  // nothing pinned until oldest is set

    REQUIRE_OK(mgr.begin(r20, at(20)));
    REQUIRE_OK(mgr.begin(noTs));  // a reader without a read ts does not count
    CHECK(ts().oldestReader == 20);
    CHECK(mgr.stats().oldestReadTs == 20);
    CHECK(ts().pinned == kNoTimestamp);

    REQUIRE_OK(mgr.setOldest(10));
    CHECK(ts().pinned == 10);  // min(oldest 10, reader 20)

    REQUIRE_OK(mgr.commit(r20));
    CHECK(ts().oldestReader == 30);
    CHECK(ts().pinned == 10);

    REQUIRE_OK(mgr.setOldest(25));
    CHECK(ts().pinned == 25);
    // Oldest moves past a running reader: the reader keeps its history pinned.
    REQUIRE_OK(mgr.setOldest(40));
    CHECK(ts().oldest == 40);
    CHECK(ts().oldestReader == 30);
    CHECK(ts().pinned == 30);

    mgr.abort(r30);
    CHECK(ts().oldestReader == kNoTimestamp);
    CHECK(mgr.stats().oldestReadTs == kNoTimestamp);
    CHECK(ts().pinned == 40);

    // A rounded-up reader is pinned at the oldest timestamp.
    Transaction rounded;
    REQUIRE_OK(mgr.begin(rounded, at(5, /*roundUp=*/true)));
    CHECK(rounded.readTs() == 40);
    CHECK(ts().oldestReader == 40);
    CHECK(ts().pinned == 40);
    REQUIRE_OK(mgr.commit(rounded));
    REQUIRE_OK(mgr.commit(noTs));
    CHECK(mgr.stats().active == 0);
}

TEST_CASE(
    "timestamps: a checkpoint's pin holds pinned and the horizon at C while oldest moves past it") {
    TransactionManager mgr;
    Collection c;
    commitValue(mgr, c["k"], "at20", 20);
    REQUIRE_OK(mgr.setStable(20));
    REQUIRE_OK(mgr.setOldest(20));
    TimestampPin pin = mgr.chooseCheckpointTimestamp();
    REQUIRE(pin.held());
    CHECK(pin.ts() == 20);
    CHECK(mgr.timestamps().pinned == 20);

    // Legal moves of the caller's: commit on, stable and oldest past C.
    commitValue(mgr, c["k"], "at30", 30);
    REQUIRE_OK(mgr.setStable(30));
    REQUIRE_OK(mgr.setOldest(30));
    CHECK(mgr.timestamps().oldest == 30);
    CHECK(mgr.timestamps().pinned == 20);  // the pin, not oldest
    CHECK(mgr.horizon(~TxnId{0}).pinnedTs == 20);
    CHECK_FALSE(mgr.horizon(~TxnId{0}).visibleToAll(kNoTxnId + 1, 30));

    // Without the pin a read at C is refused; with it, it reads the state at C.
    Transaction r;
    checkRefused(mgr.begin(r, at(20)), 20, 30);
    BeginOptions pinned = at(20);
    pinned.pin = &pin;
    REQUIRE_OK(mgr.begin(r, pinned));
    CHECK(read(r, c["k"]) == "at20");
    // A pin covers reads at or above its timestamp only.
    Transaction below;
    BeginOptions belowPin = at(19);
    belowPin.pin = &pin;
    checkRefused(mgr.begin(below, belowPin), 19, 30);

    // Moved, the pin still holds; released, pinned goes up to oldest's.
    TimestampPin moved = std::move(pin);
    CHECK_FALSE(pin.held());
    CHECK(mgr.timestamps().pinned == 20);
    REQUIRE_OK(mgr.commit(r));
    CHECK(mgr.timestamps().pinned == 20);
    moved.release();
    CHECK_FALSE(moved.held());
    CHECK(mgr.timestamps().pinned == 30);
    CHECK(mgr.horizon(~TxnId{0}).pinnedTs == 30);
}

TEST_CASE("timestamps: no checkpoint timestamp to take gives an empty pin") {
    TransactionManager mgr;
    TimestampPin none = mgr.chooseCheckpointTimestamp();  // nothing committed
    CHECK_FALSE(none.held());
    CHECK(none.ts() == kNoTimestamp);
    CHECK(mgr.timestamps().pinned == kNoTimestamp);
}

// ---------------------------------------------------------------------------
// Timestamp rules: each refused with InvalidArgument naming both numbers

TEST_CASE("timestamp rules: a commit ts at or below stable is refused and rolls back") {
    TransactionManager mgr;
    Collection c;
    REQUIRE_OK(mgr.setStable(58));

    for (Timestamp bad : {Timestamp{37}, Timestamp{58}}) {
        CAPTURE(bad);
        Transaction t;
        REQUIRE_OK(mgr.begin(t));
        REQUIRE_OK(put(mgr, t, c["k"], "x"));
        const Update* mine = c["k"].head();
        Status s = mgr.commit(t, bad);
        checkRefused(s, bad, 58);
        CHECK(contains(s.message(), "stable"));
        CHECK(contains(s.message(), "rolled back"));
        CHECK(t.state() == TxnState::kAborted);
        CHECK(mine->state() == UpdateState::kAborted);
    }
    // setCommitTimestamp refuses it too (the transaction stays usable).
    Transaction t;
    REQUIRE_OK(mgr.begin(t));
    REQUIRE_OK(put(mgr, t, c["k"], "x"));
    checkRefused(mgr.setCommitTimestamp(t, 37), 37, 58);
    CHECK(t.active());
    CHECK_OK(mgr.commit(t, 59));

    // Nobody sees a refused commit.
    Transaction r;
    REQUIRE_OK(mgr.begin(r));
    const Update* u = r.findVisible(c["k"]);
    REQUIRE(u != nullptr);
    CHECK(u->startTs() == 59);
    REQUIRE_OK(mgr.commit(r));
    CHECK(c["k"].length() == 3);
}

TEST_CASE("timestamp rules: a commit ts set earlier is re-checked when stable has moved past it") {
    TransactionManager mgr;
    Collection c;
    Transaction t;
    REQUIRE_OK(mgr.begin(t));
    REQUIRE_OK(put(mgr, t, c["k"], "x"));
    REQUIRE_OK(mgr.setCommitTimestamp(t, 37));
    REQUIRE_OK(mgr.setStable(58));
    Status s = mgr.commit(t);
    checkRefused(s, 37, 58);
    CHECK(contains(s.message(), "rolled back"));
    CHECK(t.state() == TxnState::kAborted);
    CHECK(c["k"].head()->state() == UpdateState::kAborted);
}

TEST_CASE("timestamp rules: a commit ts below oldest is refused and rolls back") {
    TransactionManager mgr;
    Collection c;
    REQUIRE_OK(mgr.setOldest(58));  // no stable: only the oldest rule applies
    Transaction t;
    REQUIRE_OK(mgr.begin(t));
    REQUIRE_OK(put(mgr, t, c["k"], "x"));
    checkRefused(mgr.setCommitTimestamp(t, 37), 37, 58);
    Status s = mgr.commit(t, 37);
    checkRefused(s, 37, 58);
    CHECK(contains(s.message(), "oldest"));
    CHECK(contains(s.message(), "rolled back"));
    CHECK(t.state() == TxnState::kAborted);
    CHECK(c["k"].head()->state() == UpdateState::kAborted);

    // At oldest is allowed.
    CHECK(commitValue(mgr, c["k"], "ok", 58) == 58);
}

TEST_CASE(
    "timestamp rules: a commit ts older than the key's newest commit is refused and rolls back") {
    TransactionManager mgr;
    Collection c;
    commitValue(mgr, c["k"], "at58", 58);
    commitValue(mgr, c["other"], "o", 10);

    Transaction t;
    REQUIRE_OK(mgr.begin(t));
    REQUIRE_OK(put(mgr, t, c["other"], "fine on its own"));
    REQUIRE_OK(put(mgr, t, c["k"], "first"));
    REQUIRE_OK(put(mgr, t, c["k"], "second"));  // two versions of its own
    Status s = mgr.commit(t, 37);
    checkRefused(s, 37, 58);
    CHECK(contains(s.message(), "rolled back"));
    CHECK(t.state() == TxnState::kAborted);
    for (const WriteRecord& w : t.writes())
        CHECK(w.update->state() == UpdateState::kAborted);

    // Every reader, at any timestamp, still sees the old versions.
    for (const BeginOptions& o : {BeginOptions{}, at(37), at(58), at(1000)}) {
        Transaction r;
        REQUIRE_OK(mgr.begin(r, o));
        CHECK(read(r, c["k"]) ==
              (o.readTs == 37 ? std::nullopt : std::optional<std::string>("at58")));
        CHECK(read(r, c["other"]) == "o");
        REQUIRE_OK(mgr.commit(r));
    }

    // The same through setCommitTimestamp, and equal to the newest is allowed.
    Transaction t2;
    REQUIRE_OK(mgr.begin(t2));
    REQUIRE_OK(put(mgr, t2, c["k"], "again"));
    REQUIRE_OK(mgr.setCommitTimestamp(t2, 40));
    Status s2 = mgr.commit(t2);
    checkRefused(s2, 40, 58);
    CHECK(contains(s2.message(), "rolled back"));
    CHECK(commitValue(mgr, c["k"], "at58 too", 58) == 58);
}

TEST_CASE("timestamp rules: a commit ts below the read ts is refused and rolls back") {
    TransactionManager mgr;
    Collection c;
    Transaction t;
    REQUIRE_OK(mgr.begin(t, at(58)));
    REQUIRE_OK(put(mgr, t, c["k"], "x"));
    checkRefused(mgr.setCommitTimestamp(t, 37), 37, 58);
    CHECK(t.active());
    Status s = mgr.commit(t, 37);
    checkRefused(s, 37, 58);
    CHECK(contains(s.message(), "read timestamp"));
    CHECK(contains(s.message(), "rolled back"));
    CHECK(t.state() == TxnState::kAborted);
    CHECK(c["k"].head()->state() == UpdateState::kAborted);

    // At the read timestamp is allowed.
    REQUIRE_OK(mgr.begin(t, at(58)));
    REQUIRE_OK(put(mgr, t, c["k"], "y"));
    CHECK_OK(mgr.commit(t, 58));
}

TEST_CASE("timestamp rules: commit timestamp 0 is refused when given explicitly") {
    TransactionManager mgr;
    Collection c;
    Transaction t;
    REQUIRE_OK(mgr.begin(t));
    REQUIRE_OK(put(mgr, t, c["k"], "x"));
    CHECK_CODE(mgr.setCommitTimestamp(t, 0), StatusCode::kInvalidArgument);
    Status s = mgr.commit(t, 0);
    CHECK_CODE(s, StatusCode::kInvalidArgument);
    CHECK(contains(s.message(), "rolled back"));
    CHECK(t.state() == TxnState::kAborted);

    // Read-only: the same answer.
    REQUIRE_OK(mgr.begin(t));
    CHECK_CODE(mgr.commit(t, 0), StatusCode::kInvalidArgument);
    CHECK(t.state() == TxnState::kAborted);
}

TEST_CASE("timestamp rules: a read ts below oldest is refused, or rounded up on request") {
    TransactionManager mgr;
    Collection c;
    commitValue(mgr, c["k"], "at20", 20);
    commitValue(mgr, c["k"], "at60", 60);
    REQUIRE_OK(mgr.setOldest(58));
    uint64_t begun = mgr.stats().begun;

    Transaction r;
    Status s = mgr.begin(r, at(37));
    checkRefused(s, 37, 58);
    CHECK_FALSE(r.active());
    CHECK(mgr.stats().begun == begun);
    CHECK(mgr.stats().active == 0);

    REQUIRE_OK(mgr.begin(r, at(37, /*roundUp=*/true)));
    CHECK(r.readTs() == 58);
    CHECK(read(r, c["k"]) == "at20");  // the state at 58
    REQUIRE_OK(mgr.commit(r));

    REQUIRE_OK(mgr.begin(r, at(58)));  // at oldest is allowed
    CHECK(read(r, c["k"]) == "at20");
    REQUIRE_OK(mgr.commit(r));
    REQUIRE_OK(mgr.begin(r, at(70, /*roundUp=*/true)));  // above oldest: unchanged
    CHECK(r.readTs() == 70);
    CHECK(read(r, c["k"]) == "at60");
    REQUIRE_OK(mgr.commit(r));
}

TEST_CASE("timestamp rules: oldest and stable never move backwards") {
    TransactionManager mgr;
    REQUIRE_OK(mgr.setStable(58));
    REQUIRE_OK(mgr.setOldest(41));
    checkRefused(mgr.setStable(57), 57, 58);
    checkRefused(mgr.setOldest(37), 37, 41);
    CHECK(mgr.timestamps().stable == 58);
    CHECK(mgr.timestamps().oldest == 41);
    // Setting the same value again is not moving backwards.
    CHECK_OK(mgr.setStable(58));
    CHECK_OK(mgr.setOldest(41));
    CHECK_OK(mgr.setStable(90));
    CHECK_OK(mgr.setOldest(90));
    CHECK(mgr.timestamps().stable == 90);
    CHECK(mgr.timestamps().oldest == 90);
}

TEST_CASE("timestamp rules: oldest may not pass stable, and stable may not fall behind oldest") {
    SUBCASE("oldest > stable") {
        TransactionManager mgr;
        REQUIRE_OK(mgr.setStable(37));
        Status s = mgr.setOldest(58);
        checkRefused(s, 58, 37);
        CHECK(mgr.timestamps().oldest == kNoTimestamp);
        CHECK_OK(mgr.setOldest(37));
    }
    SUBCASE("stable < oldest") {
        TransactionManager mgr;
        REQUIRE_OK(mgr.setOldest(58));  // allowed while stable is unset
        Status s = mgr.setStable(37);
        checkRefused(s, 37, 58);
        CHECK(mgr.timestamps().stable == kNoTimestamp);
        CHECK_OK(mgr.setStable(58));
    }
}

// ---------------------------------------------------------------------------
// The clock

TEST_CASE("clock: an assigned commit ts is newer than every timestamp the manager has seen") {
    TransactionManager mgr;
    Collection c;
    Timestamp last = commitValue(mgr, c["k"], "first");
    CHECK(last > kNoTimestamp);

    REQUIRE_OK(mgr.setOldest(200));  // stable unset
    last = commitValue(mgr, c["k"], "after oldest");
    CHECK(last > 200);

    REQUIRE_OK(mgr.setStable(300));
    last = commitValue(mgr, c["k"], "after stable");
    CHECK(last > 300);

    commitValue(mgr, c["other"], "explicit", 400);
    last = commitValue(mgr, c["k"], "after explicit");
    CHECK(last > 400);

    Transaction reader;
    REQUIRE_OK(mgr.begin(reader, at(500)));
    last = commitValue(mgr, c["k"], "after a read ts");
    CHECK(last > 500);

    Transaction pending;
    REQUIRE_OK(mgr.begin(pending));
    REQUIRE_OK(put(mgr, pending, c["pending"], "p"));
    REQUIRE_OK(mgr.setCommitTimestamp(pending, 600));
    last = commitValue(mgr, c["k"], "after a set commit ts");
    CHECK(last > 600);
    CHECK(mgr.timestamps().clock >= last);

    // The reader's own commit is after its read timestamp too.
    REQUIRE_OK(put(mgr, reader, c["r"], "r"));
    REQUIRE_OK(mgr.commit(reader));
    CHECK(reader.commitTs() > last);
    REQUIRE_OK(mgr.commit(pending));
    CHECK(pending.commitTs() == 600);
}

TEST_CASE("clock: assigned commit timestamps strictly increase") {
    TransactionManager mgr;
    Collection c;
    Timestamp prev = kNoTimestamp;
    for (int i = 0; i < 50; ++i) {
        Timestamp ts = commitValue(mgr, c[keyName(i % 7)], "v");
        CHECK(ts > prev);
        prev = ts;
    }
}

// ---------------------------------------------------------------------------
// Transaction misuse and read-only transactions

TEST_CASE("transactions: a second begin is IllegalOperation and leaves the first running") {
    TransactionManager mgr;
    Collection c;
    Transaction t;
    REQUIRE_OK(mgr.begin(t, at(5)));
    REQUIRE_OK(put(mgr, t, c["k"], "x"));
    Status s = mgr.begin(t, at(9));
    CHECK_CODE(s, StatusCode::kIllegalOperation);
    CHECK_FALSE(s.message().empty());
    CHECK(t.active());
    CHECK(t.readTs() == 5);
    CHECK(t.writes().size() == 1);
    CHECK(mgr.stats().begun == 1);
    CHECK(mgr.stats().active == 1);
    REQUIRE_OK(mgr.commit(t));
    CHECK(c["k"].head()->state() == UpdateState::kCommitted);
}

TEST_CASE("transactions: commit, write and setCommitTimestamp without begin are IllegalOperation") {
    TransactionManager mgr;
    UpdateChain chain;
    Transaction t;
    CHECK_CODE(mgr.commit(t), StatusCode::kIllegalOperation);
    CHECK_CODE(mgr.commit(t, 5), StatusCode::kIllegalOperation);
    CHECK_CODE(mgr.write(t, chain, WriteKind::kValue, "x", 0), StatusCode::kIllegalOperation);
    CHECK_CODE(mgr.write(t, chain, WriteKind::kTombstone, {}, 0), StatusCode::kIllegalOperation);
    CHECK_CODE(mgr.setCommitTimestamp(t, 5), StatusCode::kIllegalOperation);
    CHECK(chain.head() == nullptr);
    CHECK(t.state() == TxnState::kIdle);
    mgr.abort(t);  // a no-op
    CHECK(t.state() == TxnState::kIdle);
    MvccStats st = mgr.stats();
    CHECK(st.begun == 0);
    CHECK(st.committed == 0);
    CHECK(st.aborted == 0);
}

TEST_CASE("transactions: after commit or abort, further commits and writes are IllegalOperation") {
    TransactionManager mgr;
    UpdateChain chain;
    Transaction t;
    REQUIRE_OK(mgr.begin(t));
    REQUIRE_OK(mgr.write(t, chain, WriteKind::kValue, "x", 0));
    REQUIRE_OK(mgr.commit(t));
    CHECK_CODE(mgr.commit(t), StatusCode::kIllegalOperation);
    CHECK_CODE(mgr.write(t, chain, WriteKind::kValue, "y", 0), StatusCode::kIllegalOperation);
    mgr.abort(t);  // no-op: the commit stands
    CHECK(t.state() == TxnState::kCommitted);
    CHECK(chain.head()->state() == UpdateState::kCommitted);
    CHECK(chain.length() == 1);

    REQUIRE_OK(mgr.begin(t));
    mgr.abort(t);
    CHECK_CODE(mgr.commit(t), StatusCode::kIllegalOperation);
    CHECK(mgr.stats().committed == 1);
    CHECK(mgr.stats().aborted == 1);
}

TEST_CASE("transactions: a read-only commit needs no timestamp and changes no timestamp") {
    TransactionManager mgr;
    Collection c;
    commitValue(mgr, c["k"], "v", 10);
    Timestamps before = mgr.timestamps();

    Transaction r;
    REQUIRE_OK(mgr.begin(r));
    CHECK(read(r, c["k"]) == "v");
    REQUIRE_OK(mgr.commit(r));
    CHECK(r.state() == TxnState::kCommitted);
    CHECK(r.commitTs() == kNoTimestamp);
    Timestamps after = mgr.timestamps();
    CHECK(after.clock == before.clock);
    CHECK(after.allDurable == before.allDurable);
    CHECK(mgr.stats().committed == 2);
    CHECK(mgr.stats().active == 0);

    // A given timestamp must still be legal.
    REQUIRE_OK(mgr.setStable(58));
    REQUIRE_OK(mgr.begin(r));
    Status s = mgr.commit(r, 37);
    checkRefused(s, 37, 58);
    CHECK(contains(s.message(), "rolled back"));
    CHECK(r.state() == TxnState::kAborted);
    REQUIRE_OK(mgr.begin(r));
    CHECK_OK(mgr.commit(r, 59));
    CHECK(r.state() == TxnState::kCommitted);
}

TEST_CASE("transactions: a read-only commit's timestamp does not move all_durable") {
    TransactionManager mgr;
    Collection c;
    commitValue(mgr, c["k"], "v", 10);

    Transaction r;
    REQUIRE_OK(mgr.begin(r));
    CHECK(read(r, c["k"]) == "v");
    REQUIRE_OK(mgr.commit(r, 1000));
    CHECK(r.commitTs() == 1000);
    // Nothing was written at 1000: the no-holes point stays at 10, so a
    // commit the clock times later is not "behind" all_durable.
    CHECK(mgr.timestamps().allDurable == 10);

    // The same with the timestamp set beforehand.
    REQUIRE_OK(mgr.begin(r));
    REQUIRE_OK(mgr.setCommitTimestamp(r, 2000));
    CHECK(mgr.timestamps().allDurable == 10);
    REQUIRE_OK(mgr.commit(r));
    CHECK(mgr.timestamps().allDurable == 10);

    Timestamp next = commitValue(mgr, c["k"], "w");
    CHECK(mgr.timestamps().allDurable == next);
}

TEST_CASE("transactions: stats count begun, committed, aborted and active") {
    TransactionManager mgr;
    Collection c;
    Transaction a, b, d;
    REQUIRE_OK(mgr.begin(a));
    REQUIRE_OK(mgr.begin(b));
    REQUIRE_OK(mgr.begin(d));
    REQUIRE_OK(put(mgr, a, c["a"], "a"));
    CHECK(mgr.stats().active == 3);
    REQUIRE_OK(mgr.commit(a));
    mgr.abort(b);
    MvccStats st = mgr.stats();
    CHECK(st.begun == 3);
    CHECK(st.committed == 1);
    CHECK(st.aborted == 1);
    CHECK(st.active == 1);
    // A refused commit counts as an abort.
    REQUIRE_OK(put(mgr, d, c["d"], "d"));
    REQUIRE_OK(mgr.setStable(58));
    CHECK_CODE(mgr.commit(d, 37), StatusCode::kInvalidArgument);
    st = mgr.stats();
    CHECK(st.committed == 1);
    CHECK(st.aborted == 2);
    CHECK(st.active == 0);
}

// ---------------------------------------------------------------------------
// Write-conflict retry

TEST_CASE("retry: writeConflictBackoff follows MongoDB's schedule") {
    auto expected = [](uint64_t n) -> std::chrono::milliseconds {
        if (n <= 3)
            return 0ms;
        if (n <= 9)
            return 1ms;
        if (n <= 99)
            return 5ms;
        if (n <= 199)
            return 10ms;
        return 100ms;
    };
    for (uint64_t n = 1; n <= 1000; ++n) {
        CAPTURE(n);
        CHECK(writeConflictBackoff(n) == expected(n));
    }
    CHECK(writeConflictBackoff(1) == 0ms);
    CHECK(writeConflictBackoff(3) == 0ms);
    CHECK(writeConflictBackoff(4) == 1ms);
    CHECK(writeConflictBackoff(10) == 5ms);
    CHECK(writeConflictBackoff(99) == 5ms);
    CHECK(writeConflictBackoff(100) == 10ms);
    CHECK(writeConflictBackoff(199) == 10ms);
    CHECK(writeConflictBackoff(200) == 100ms);
    CHECK(writeConflictBackoff(uint64_t{1} << 40) == 100ms);
}

TEST_CASE("retry: writeConflictRetry gives up at the deadline naming the attempt count") {
    TransactionManager mgr;
    UpdateChain chain;
    Transaction blocker;
    REQUIRE_OK(mgr.begin(blocker));
    REQUIRE_OK(mgr.write(blocker, chain, WriteKind::kValue, "held", 0));

    Transaction t;
    auto attempt = [&] {
        if (Status s = mgr.begin(t); !s.ok())
            return s;
        if (Status s = mgr.write(t, chain, WriteKind::kValue, "mine", 0); !s.ok())
            return s;
        return mgr.commit(t);
    };
    uint64_t aborts = 0;
    auto onConflict = [&] {
        mgr.abort(t);
        ++aborts;
    };

    SUBCASE("an expired deadline: one attempt") {
        RetryCounts counts;
        Status s = writeConflictRetry(Deadline::now(), counts, attempt, onConflict);
        CHECK_CODE(s, StatusCode::kWriteConflict);
        CHECK(counts.attempts == 1);
        CHECK(counts.writeConflicts == 1);
        CAPTURE(s.message());
        CHECK(contains(s.message(), "after 1 attempt"));
        CHECK(contains(s.message(), "has not finished"));  // the last conflict
    }
    SUBCASE("a short deadline") {
        RetryCounts counts;
        Status s = writeConflictRetry(Deadline::in(30ms), counts, attempt, onConflict);
        CHECK_CODE(s, StatusCode::kWriteConflict);
        CHECK(counts.attempts >= 1);
        CHECK(counts.writeConflicts == counts.attempts);
        CAPTURE(s.message());
        CHECK(contains(s.message(), "after " + std::to_string(counts.attempts) + " attempt"));
        CHECK(contains(s.message(), std::to_string(blocker.id())));
    }
    CHECK(aborts >= 1);
    CHECK_FALSE(t.active());
    // Every attempt's version was rolled back; only the blocker's is live.
    for (const Update* u = chain.head(); u; u = u->next())
        CHECK((u->txnId() == blocker.id() || u->state() == UpdateState::kAborted));
    mgr.abort(blocker);
}

TEST_CASE("retry: writeConflictRetry succeeds once the conflict clears") {
    TransactionManager mgr;
    UpdateChain chain;
    Transaction blocker;
    REQUIRE_OK(mgr.begin(blocker));
    REQUIRE_OK(mgr.write(blocker, chain, WriteKind::kValue, "blocker", 0));

    Transaction t;
    RetryCounts counts;
    Status s = writeConflictRetry(
        Deadline::in(10s), counts,
        [&] {
            if (Status b = mgr.begin(t); !b.ok())
                return b;
            if (Status w = mgr.write(t, chain, WriteKind::kValue, "retried", 0); !w.ok())
                return w;
            return mgr.commit(t);
        },
        [&] {
            mgr.abort(t);
            if (counts.writeConflicts == 3)
                REQUIRE_OK(mgr.commit(blocker));  // the other transaction ends
        });
    CHECK_OK(s);
    CHECK(counts.attempts == 4);
    CHECK(counts.writeConflicts == 3);
    CHECK(t.state() == TxnState::kCommitted);

    Transaction r;
    REQUIRE_OK(mgr.begin(r));
    CHECK(read(r, chain) == "retried");
    REQUIRE_OK(mgr.commit(r));
}

TEST_CASE("retry: with a timeout, writeConflictRetry's clock starts at the first conflict") {
    TransactionManager mgr;
    UpdateChain chain;
    Transaction blocker;
    REQUIRE_OK(mgr.begin(blocker));
    REQUIRE_OK(mgr.write(blocker, chain, WriteKind::kValue, "blocker", 0));
    Transaction t;
    auto attempt = [&]() -> Status {
        if (Status b = mgr.begin(t); !b.ok())
            return b;
        if (Status w = mgr.write(t, chain, WriteKind::kValue, "mine", 0); !w.ok())
            return w;
        return mgr.commit(t);
    };

    // A zero timeout: the first conflict ends it, naming one attempt.
    RetryCounts once;
    Status s = writeConflictRetry(0ms, once, attempt, [&] { mgr.abort(t); });
    CHECK_CODE(s, StatusCode::kWriteConflict);
    CHECK(once.attempts == 1);
    CHECK(once.writeConflicts == 1);
    CAPTURE(s.message());
    CHECK(contains(s.message(), "after 1 attempt"));

    // The conflict clears after three conflicts: the fourth attempt succeeds.
    RetryCounts counts;
    s = writeConflictRetry(10s, counts, attempt, [&] {
        mgr.abort(t);
        if (counts.writeConflicts == 3)
            REQUIRE_OK(mgr.commit(blocker));
    });
    CHECK_OK(s);
    CHECK(counts.attempts == 4);
    CHECK(counts.writeConflicts == 3);

    // No conflict: one attempt, whatever the timeout.
    RetryCounts clean;
    CHECK_OK(writeConflictRetry(
        0ms, clean, [] { return Status::OK(); }, [] {}));
    CHECK(clean.attempts == 1);
    CHECK(clean.writeConflicts == 0);
}

TEST_CASE("retry: writeConflictRetry returns other errors at once without retrying") {
    RetryCounts counts;
    int conflicts = 0;
    Status s = writeConflictRetry(
        Deadline::never(), counts, [] { return Status::InvalidArgument("bad input"); },
        [&] { ++conflicts; });
    CHECK_CODE(s, StatusCode::kInvalidArgument);
    CHECK(s.message() == "bad input");
    CHECK(counts.attempts == 1);
    CHECK(counts.writeConflicts == 0);
    CHECK(conflicts == 0);

    RetryCounts ok;
    CHECK_OK(writeConflictRetry(
        Deadline::never(), ok, [] { return Status::OK(); }, [] {}));
    CHECK(ok.attempts == 1);
}
