// The visibility matrix of the MVCC layer, tested on bare update chains (no
// engine): own writes, other transactions' uncommitted and aborted writes,
// commits before and after a snapshot, commit timestamps below, at and above
// the read timestamp, and tombstones. docs/architecture.md "Timestamps and
// visibility".
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "mvcc/timestamp.h"
#include "mvcc/transaction.h"
#include "mvcc/txn_manager.h"
#include "mvcc/update.h"
#include "tests/mvcc_test_util.h"
#include "util/status.h"

using namespace mvkv;
using namespace mvkv::mvcc;
using namespace mvkv::mvcc::testing;

// ---------------------------------------------------------------------------
// Own writes

TEST_CASE("visibility: a transaction sees its own uncommitted write") {
    TransactionManager mgr;
    Collection c;
    Transaction t;
    REQUIRE_OK(mgr.begin(t));
    CHECK(t.id() == kNoTxnId);  // no id until the first write
    CHECK(read(t, c["k"]) == std::nullopt);
    REQUIRE_OK(put(mgr, t, c["k"], "mine"));
    CHECK(t.id() != kNoTxnId);
    CHECK(read(t, c["k"]) == "mine");
    const Update* u = t.findVisible(c["k"]);
    REQUIRE(u != nullptr);
    CHECK(u->txnId() == t.id());
    CHECK(u->state() == UpdateState::kUncommitted);
    CHECK(t.writes().size() == 1);
    mgr.abort(t);
}

TEST_CASE("visibility: a transaction sees its own newest update among several of one key") {
    TransactionManager mgr;
    Collection c;
    commitValue(mgr, c["k"], "committed");
    Transaction t;
    REQUIRE_OK(mgr.begin(t));
    CHECK(read(t, c["k"]) == "committed");
    REQUIRE_OK(put(mgr, t, c["k"], "v1"));
    CHECK(read(t, c["k"]) == "v1");
    REQUIRE_OK(put(mgr, t, c["k"], "v2"));
    CHECK(read(t, c["k"]) == "v2");
    REQUIRE_OK(put(mgr, t, c["k"], "v3"));
    CHECK(read(t, c["k"]) == "v3");
    CHECK(c["k"].length() == 4);
    CHECK(t.writes().size() == 3);

    // Once committed, every reader sees the last one.
    REQUIRE_OK(mgr.commit(t));
    Transaction r;
    REQUIRE_OK(mgr.begin(r));
    CHECK(read(r, c["k"]) == "v3");
    REQUIRE_OK(mgr.commit(r));
}

TEST_CASE(
    "visibility: a transaction sees its own tombstone, over its own value and over a commit") {
    TransactionManager mgr;
    Collection c;
    commitValue(mgr, c["old"], "committed");

    Transaction t;
    REQUIRE_OK(mgr.begin(t));
    // Delete of a committed key.
    REQUIRE_OK(remove(mgr, t, c["old"]));
    const Update* u = t.findVisible(c["old"]);
    REQUIRE(u != nullptr);
    CHECK(u->isTombstone());
    CHECK(u->value().empty());
    CHECK(read(t, c["old"]) == std::nullopt);

    // Insert then delete of a new key, then insert again.
    REQUIRE_OK(put(mgr, t, c["new"], "x"));
    REQUIRE_OK(remove(mgr, t, c["new"]));
    u = t.findVisible(c["new"]);
    REQUIRE(u != nullptr);
    CHECK(u->isTombstone());
    REQUIRE_OK(put(mgr, t, c["new"], "again"));
    CHECK(read(t, c["new"]) == "again");

    // Others still see the committed value and nothing of "new".
    Transaction other;
    REQUIRE_OK(mgr.begin(other));
    CHECK(read(other, c["old"]) == "committed");
    CHECK(other.findVisible(c["new"]) == nullptr);
    REQUIRE_OK(mgr.commit(other));
    mgr.abort(t);
}

TEST_CASE("visibility: own writes are visible even above the transaction's read timestamp") {
    TransactionManager mgr;
    Collection c;
    commitValue(mgr, c["k"], "at10", 10);
    Transaction t;
    REQUIRE_OK(mgr.begin(t, at(15)));
    CHECK(read(t, c["k"]) == "at10");
    REQUIRE_OK(put(mgr, t, c["k"], "mine"));
    REQUIRE_OK(mgr.setCommitTimestamp(t, 20));
    CHECK(read(t, c["k"]) == "mine");
    REQUIRE_OK(mgr.commit(t));

    // After commit at 20 a reader at 15 still sees the old version.
    Transaction r;
    REQUIRE_OK(mgr.begin(r, at(15)));
    CHECK(read(r, c["k"]) == "at10");
    REQUIRE_OK(mgr.commit(r));
}

// ---------------------------------------------------------------------------
// Other transactions' writes

TEST_CASE("visibility: another transaction's uncommitted write is invisible") {
    TransactionManager mgr;
    Collection c;
    commitValue(mgr, c["k"], "base");

    Transaction before;  // began before the write
    REQUIRE_OK(mgr.begin(before));

    Transaction w;
    REQUIRE_OK(mgr.begin(w));
    REQUIRE_OK(put(mgr, w, c["k"], "uncommitted"));
    REQUIRE_OK(put(mgr, w, c["fresh"], "uncommitted"));

    Transaction after;  // began after the write, while it is still running
    REQUIRE_OK(mgr.begin(after));
    Transaction afterAtTs;  // same, with a read timestamp far in the future
    REQUIRE_OK(mgr.begin(afterAtTs, at(1000)));

    for (Transaction* r : {&before, &after, &afterAtTs}) {
        CHECK(read(*r, c["k"]) == "base");
        CHECK(r->findVisible(c["fresh"]) == nullptr);
    }
    // Even with its commit timestamp already set, it stays invisible.
    REQUIRE_OK(mgr.setCommitTimestamp(w, 5000));
    CHECK(read(afterAtTs, c["k"]) == "base");

    mgr.abort(w);
    for (Transaction* r : {&before, &after, &afterAtTs})
        REQUIRE_OK(mgr.commit(*r));
}

TEST_CASE("visibility: a commit before the snapshot is visible, one after it is not") {
    TransactionManager mgr;
    Collection c;
    commitValue(mgr, c["k"], "v1");

    Transaction early;
    REQUIRE_OK(mgr.begin(early));
    CHECK(read(early, c["k"]) == "v1");

    commitValue(mgr, c["k"], "v2");
    commitValue(mgr, c["new"], "n");

    // The snapshot was taken before v2: it keeps reading v1, and the new key
    // does not exist for it (findVisible walks past v2 to v1).
    CHECK(read(early, c["k"]) == "v1");
    CHECK(early.findVisible(c["new"]) == nullptr);

    Transaction late;
    REQUIRE_OK(mgr.begin(late));
    CHECK(read(late, c["k"]) == "v2");
    CHECK(read(late, c["new"]) == "n");

    REQUIRE_OK(mgr.commit(early));
    REQUIRE_OK(mgr.commit(late));
}

TEST_CASE("visibility: a writer running at snapshot time stays invisible after it commits") {
    TransactionManager mgr;
    Collection c;
    commitValue(mgr, c["k"], "v1");

    // w has written (so it has an id) when r's snapshot is taken.
    Transaction w;
    REQUIRE_OK(mgr.begin(w));
    REQUIRE_OK(put(mgr, w, c["k"], "v2"));
    Transaction r;
    REQUIRE_OK(mgr.begin(r));
    CHECK(
        std::binary_search(r.snapshot().concurrent.begin(), r.snapshot().concurrent.end(), w.id()));
    REQUIRE_OK(mgr.commit(w));
    CHECK(read(r, c["k"]) == "v1");

    // w2 began before r2 but wrote only after r2's snapshot: also invisible.
    Transaction w2;
    REQUIRE_OK(mgr.begin(w2));
    Transaction r2;
    REQUIRE_OK(mgr.begin(r2));
    REQUIRE_OK(put(mgr, w2, c["k"], "v3"));
    REQUIRE_OK(mgr.commit(w2));
    CHECK(read(r2, c["k"]) == "v2");
    CHECK(read(r, c["k"]) == "v1");

    REQUIRE_OK(mgr.commit(r));
    REQUIRE_OK(mgr.commit(r2));
}

TEST_CASE("visibility: commit timestamps below and at the read timestamp are visible, above not") {
    TransactionManager mgr;
    Collection c;
    commitValue(mgr, c["k"], "at10", 10);
    commitValue(mgr, c["k"], "at20", 20);

    struct Case {
        Timestamp readTs;
        std::optional<std::string> expected;
    };
    const Case cases[] = {
        {9, std::nullopt}, {10, "at10"}, {11, "at10"},   {19, "at10"},
        {20, "at20"},      {21, "at20"}, {1000, "at20"},
    };
    for (const Case& tc : cases) {
        CAPTURE(tc.readTs);
        Transaction r;
        REQUIRE_OK(mgr.begin(r, at(tc.readTs)));
        CHECK(r.readTs() == tc.readTs);
        CHECK(read(r, c["k"]) == tc.expected);
        REQUIRE_OK(mgr.commit(r));
    }
    // Without a read timestamp: the newest commit.
    Transaction r;
    REQUIRE_OK(mgr.begin(r));
    CHECK_FALSE(r.hasReadTs());
    CHECK(read(r, c["k"]) == "at20");
    REQUIRE_OK(mgr.commit(r));
}

TEST_CASE("visibility: a reader with a read timestamp still needs the commit in its snapshot") {
    TransactionManager mgr;
    Collection c;
    Transaction r;
    REQUIRE_OK(mgr.begin(r, at(100)));
    // Commit timestamp 50 <= read timestamp 100, but the commit came after
    // the snapshot: both conditions are required.
    commitValue(mgr, c["k"], "at50", 50);
    CHECK(r.findVisible(c["k"]) == nullptr);
    REQUIRE_OK(mgr.commit(r));
}

TEST_CASE("visibility: aborted updates are skipped and the older version is read") {
    TransactionManager mgr;
    Collection c;
    commitValue(mgr, c["k"], "v1", 5);

    Transaction w;
    REQUIRE_OK(mgr.begin(w));
    REQUIRE_OK(put(mgr, w, c["k"], "doomed"));
    REQUIRE_OK(put(mgr, w, c["new"], "doomed"));
    const Update* doomed = c["k"].head();
    mgr.abort(w);
    CHECK(w.state() == TxnState::kAborted);
    CHECK(doomed->state() == UpdateState::kAborted);
    CHECK(c["k"].head() == doomed);  // still on the chain, just ignored

    for (const BeginOptions& o : {BeginOptions{}, at(5), at(1000)}) {
        Transaction r;
        REQUIRE_OK(mgr.begin(r, o));
        CHECK(read(r, c["k"]) == "v1");
        CHECK(r.findVisible(c["new"]) == nullptr);
        REQUIRE_OK(mgr.commit(r));
    }

    // A later commit on top of the aborted version reads normally.
    commitValue(mgr, c["k"], "v2", 7);
    Transaction r;
    REQUIRE_OK(mgr.begin(r));
    CHECK(read(r, c["k"]) == "v2");
    REQUIRE_OK(mgr.commit(r));
    Transaction r6;
    REQUIRE_OK(mgr.begin(r6, at(6)));
    CHECK(read(r6, c["k"]) == "v1");
    REQUIRE_OK(mgr.commit(r6));
}

TEST_CASE(
    "visibility: a committed tombstone is visible as a tombstone at and after its timestamp") {
    TransactionManager mgr;
    Collection c;
    commitValue(mgr, c["k"], "v1", 10);
    commitTombstone(mgr, c["k"], 20);
    commitValue(mgr, c["k"], "reborn", 30);

    auto visibleAt = [&](Timestamp ts) {
        Transaction r;
        REQUIRE_OK(mgr.begin(r, at(ts)));
        const Update* u = r.findVisible(c["k"]);
        REQUIRE_OK(mgr.commit(r));
        return u;
    };
    CHECK(visibleAt(9) == nullptr);
    const Update* u = visibleAt(15);
    REQUIRE(u != nullptr);
    CHECK_FALSE(u->isTombstone());
    CHECK(u->value() == "v1");
    for (Timestamp ts : {Timestamp{20}, Timestamp{29}}) {
        CAPTURE(ts);
        u = visibleAt(ts);
        // A tombstone, not "nothing": the reader must not fall through to v1.
        REQUIRE(u != nullptr);
        CHECK(u->isTombstone());
        CHECK(u->startTs() == 20);
        CHECK(u->state() == UpdateState::kCommitted);
    }
    u = visibleAt(30);
    REQUIRE(u != nullptr);
    CHECK(u->value() == "reborn");
}

TEST_CASE("visibility: findVisible walks past several invisible versions to the visible one") {
    TransactionManager mgr;
    Collection c;
    commitValue(mgr, c["k"], "at10", 10);

    Transaction r;
    REQUIRE_OK(mgr.begin(r, at(15)));

    commitValue(mgr, c["k"], "at12", 12);  // after the snapshot
    commitValue(mgr, c["k"], "at20", 20);  // after the snapshot and above the read ts
    Transaction aborted;
    REQUIRE_OK(mgr.begin(aborted));
    REQUIRE_OK(put(mgr, aborted, c["k"], "aborted"));
    mgr.abort(aborted);
    Transaction running;
    REQUIRE_OK(mgr.begin(running));
    REQUIRE_OK(put(mgr, running, c["k"], "uncommitted"));

    CHECK(c["k"].length() == 5);
    const Update* u = r.findVisible(c["k"]);
    REQUIRE(u != nullptr);
    CHECK(u->value() == "at10");
    CHECK(u->startTs() == 10);
    CHECK(u == c["k"].head()->next()->next()->next()->next());

    // canSee, version by version from the newest.
    const Update* v = c["k"].head();
    CHECK_FALSE(r.canSee(v));              // uncommitted
    CHECK_FALSE(r.canSee(v = v->next()));  // aborted
    CHECK_FALSE(r.canSee(v = v->next()));  // after snapshot, ts 20 > 15
    CHECK_FALSE(r.canSee(v = v->next()));  // after snapshot, ts 12 <= 15
    CHECK(r.canSee(v = v->next()));        // before snapshot, ts 10 <= 15
    CHECK(v->next() == nullptr);

    mgr.abort(running);
    REQUIRE_OK(mgr.commit(r));
}

TEST_CASE("visibility: an empty chain has no visible version") {
    TransactionManager mgr;
    UpdateChain chain;
    Transaction r;
    REQUIRE_OK(mgr.begin(r));
    CHECK(r.findVisible(chain) == nullptr);
    CHECK(chain.length() == 0);
    REQUIRE_OK(mgr.commit(r));
}

// ---------------------------------------------------------------------------
// Sessions: one Transaction object reused

TEST_CASE("visibility: a session without a read timestamp sees its own earlier commits") {
    TransactionManager mgr;
    Collection c;
    Transaction session;
    REQUIRE_OK(mgr.begin(session));
    REQUIRE_OK(put(mgr, session, c["k"], "first"));
    REQUIRE_OK(mgr.commit(session, 50));

    // Even though another session holds an older snapshot.
    Transaction other;
    REQUIRE_OK(mgr.begin(other, at(40)));

    REQUIRE_OK(mgr.begin(session));
    CHECK(session.state() == TxnState::kActive);
    CHECK(read(session, c["k"]) == "first");
    REQUIRE_OK(put(mgr, session, c["k"], "second"));
    REQUIRE_OK(mgr.commit(session));  // clock timestamp, > 50

    REQUIRE_OK(mgr.begin(session));
    CHECK(read(session, c["k"]) == "second");
    REQUIRE_OK(mgr.commit(session));

    // With a read timestamp below its commit, a session does not see it.
    REQUIRE_OK(mgr.begin(session, at(49)));
    CHECK(session.findVisible(c["k"]) == nullptr);
    REQUIRE_OK(mgr.commit(session));
    CHECK(other.findVisible(c["k"]) == nullptr);
    REQUIRE_OK(mgr.commit(other));
}

TEST_CASE("visibility: a session does not see its own aborted writes after it begins again") {
    TransactionManager mgr;
    Collection c;
    commitValue(mgr, c["k"], "base");
    Transaction session;
    REQUIRE_OK(mgr.begin(session));
    REQUIRE_OK(put(mgr, session, c["k"], "undone"));
    TxnId firstId = session.id();
    mgr.abort(session);

    REQUIRE_OK(mgr.begin(session));
    CHECK(read(session, c["k"]) == "base");
    // A new transaction: a new id on its first write, and no conflict with
    // its own aborted version.
    REQUIRE_OK(put(mgr, session, c["k"], "redo"));
    CHECK(session.id() != firstId);
    CHECK(read(session, c["k"]) == "redo");
    REQUIRE_OK(mgr.commit(session));
}

TEST_CASE("visibility: updates record their transaction, timestamps and state at commit") {
    TransactionManager mgr;
    Collection c;
    Transaction t;
    REQUIRE_OK(mgr.begin(t));
    REQUIRE_OK(put(mgr, t, c["a"], "va"));
    REQUIRE_OK(remove(mgr, t, c["b"]));
    const Update* a = c["a"].head();
    const Update* b = c["b"].head();
    CHECK(a->startTs() == kNoTimestamp);
    REQUIRE_OK(mgr.commit(t, 42));
    CHECK(t.state() == TxnState::kCommitted);
    CHECK(t.commitTs() == 42);
    for (const Update* u : {a, b}) {
        CHECK(u->txnId() == t.id());
        CHECK(u->state() == UpdateState::kCommitted);
        CHECK(u->startTs() == 42);
    }
    CHECK(a->value() == "va");
    CHECK(b->isTombstone());
    // A chain holds its versions' bytes and nothing else (the engine keeps
    // the head in the B+tree leaf, not in an object of its own).
    CHECK(c["a"].footprint() == a->footprint());
    // The value starts inside the header's tail padding: 28 + 2 bytes fit
    // the object's own 32.
    CHECK(a->footprint() == sizeof(Update));
    CHECK(b->footprint() == sizeof(Update));
}

TEST_CASE("updates: a version's header is 28 bytes, so a 100-byte value's version is 128") {
    const std::string value(100, 'v');
    Update* u = Update::make(7, false, value);
    CHECK(u->footprint() == 128);
    CHECK(u->value() == value);
    Update::destroy(u);
    Update* big = Update::make(7, false, std::string(5000, 'w'));  // past the arena: operator new
    CHECK(big->footprint() == 28 + 5000);
    CHECK(big->value() == std::string(5000, 'w'));
    Update::destroy(big);
}

TEST_CASE("updates: state, tombstone, history mark and depth share a word without touching the id") {
    for (bool tombstone : {false, true}) {
        for (TxnId id : {TxnId(1), TxnId(0x123456789ab), Update::kMaxTxnId}) {
            CAPTURE(id);
            Update* u = Update::make(id, tombstone, "abc");
            auto same = [&](UpdateState state, bool marked, unsigned depth) {
                CHECK(u->txnId() == id);
                CHECK(u->isTombstone() == tombstone);
                CHECK(u->value() == (tombstone ? "" : "abc"));
                CHECK(u->state() == state);
                CHECK(u->olderInHistory() == marked);
                CHECK(u->depth() == depth);
            };
            same(UpdateState::kUncommitted, false, 1);
            u->markPrepared(30);
            same(UpdateState::kPrepared, false, 1);
            CHECK(u->startTs() == 30);
            u->setDepth(300);  // saturates
            same(UpdateState::kPrepared, false, 255);
            u->markCommitted(35);
            same(UpdateState::kCommitted, false, 255);
            CHECK(u->startTs() == 35);
            u->truncateBelow(true);
            same(UpdateState::kCommitted, true, 1);
            u->setDepth(9);
            u->truncateBelow(false);  // the mark stays
            same(UpdateState::kCommitted, true, 1);
            Update::destroy(u);
        }
    }
    Update* aborted = Update::make(Update::kMaxTxnId, false, "x");
    aborted->markAborted();
    CHECK(aborted->state() == UpdateState::kAborted);
    CHECK(aborted->txnId() == Update::kMaxTxnId);
    Update::destroy(aborted);
}

TEST_CASE("transaction ids: a logged id past what a version can carry is corruption; none is handed out") {
    TransactionManager mgr;
    Status s = mgr.raiseNextTxnId(Update::kMaxTxnId + 1);
    CHECK(s.code() == StatusCode::kCorruption);
    CHECK(contains(s.message(), std::to_string(Update::kMaxTxnId + 1)));
    // The last id is handed out; the one after it is refused, with nothing written.
    REQUIRE_OK(mgr.raiseNextTxnId(Update::kMaxTxnId - 1));
    Collection c;
    Transaction last;
    REQUIRE_OK(mgr.begin(last));
    REQUIRE_OK(put(mgr, last, c["a"], "va"));
    CHECK(last.id() == Update::kMaxTxnId);
    CHECK(c["a"].head()->txnId() == Update::kMaxTxnId);
    REQUIRE_OK(mgr.commit(last, 5));
    Transaction next;
    REQUIRE_OK(mgr.begin(next));
    Status exhausted = put(mgr, next, c["b"], "vb");
    CHECK(exhausted.code() == StatusCode::kInternal);
    CHECK(contains(exhausted.message(), "exhausted"));
    CHECK(c["b"].head() == nullptr);
    mgr.abort(next);
}
