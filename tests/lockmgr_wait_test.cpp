// Waiting in the lock manager: timeouts, blocking waits and interrupts, the
// partitioned intent-mode fast path, two-phase locking inside a write unit of
// work, and what a destroyed locker leaves behind. Split from
// lockmgr_grant_test.cpp; threads are used only where a blocking wait is
// itself the behaviour under test.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lockmgr/lock_manager.h"
#include "lockmgr/lock_mode.h"
#include "lockmgr/locker.h"
#include "lockmgr/resource_id.h"
#include "lockmgr_test_util.h"
#include "util/deadline.h"
#include "util/status.h"

using namespace mvkv;
using namespace mvkv::lockmgr;
using namespace mvkv::lockmgr::testing;
using namespace std::chrono_literals;

namespace {

// Is `locker` waiting on `id` (queued, or converting)?
bool isWaitingOn(const LockManager& mgr, ResourceId id, LockerId locker) {
    auto info = infoFor(mgr, id);
    if (!info)
        return false;
    for (const auto& e : info->waiting) {
        if (e.locker == locker)
            return true;
    }
    for (const auto& e : info->granted) {
        if (e.locker == locker && e.convertMode != LockMode::kNone)
            return true;
    }
    return false;
}

}  // namespace

// ---------------------------------------------------------------------------
// Timeouts

TEST_CASE("timeout: a new request that times out leaves no trace") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr);
        const ResourceId other = ResourceId::collection("db.other");
        REQUIRE(a.lock(kColl, LockMode::kX, Deadline::never(), "db.c").ok());
        REQUIRE(b.lock(other, LockMode::kIX, Deadline::now(), "db.other").ok());
        const std::string before = b.describe().toString();

        Deadline deadline = Deadline::now();
        SUBCASE("Deadline::now()") {
            deadline = Deadline::now();
        }
        SUBCASE("Deadline::in(20ms)") {
            deadline = Deadline::in(20ms);
        }

        Status s = b.lock(kColl, LockMode::kS, deadline);
        CHECK(s.code() == StatusCode::kLockTimeout);
        CHECK(contains(s.message(), "db.c"));
        CHECK(b.getLockMode(kColl) == LockMode::kNone);
        CHECK(b.describe().toString() == before);
        CHECK(b.describe().held.size() == 1);
        CHECK_FALSE(b.describe().waitingFor.has_value());
        CHECK(b.pendingGranted());
        checkOnlyHolder(mgr, kColl, a.id(), LockMode::kX);
        CHECK(mgr.queuedReaders() == 0);
        CHECK(mgr.queuedWriters() == 0);

        // A later lock works, in both directions.
        CHECK(a.unlock(kColl).ok());
        CHECK(b.lock(kColl, LockMode::kS, Deadline::now()).ok());
        CHECK(b.unlock(kColl).ok());
        CHECK(b.unlock(other).ok());
    }
    checkEmpty(mgr);
}

TEST_CASE("timeout: an upgrade that times out leaves the old mode") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr);
        REQUIRE(a.lock(kColl, LockMode::kS, Deadline::never(), "db.c").ok());
        REQUIRE(b.lock(kColl, LockMode::kS).ok());
        const std::string before = a.describe().toString();

        Deadline deadline = Deadline::now();
        SUBCASE("Deadline::now()") {
            deadline = Deadline::now();
        }
        SUBCASE("Deadline::in(20ms)") {
            deadline = Deadline::in(20ms);
        }

        Status s = a.lock(kColl, LockMode::kX, deadline);
        CHECK(s.code() == StatusCode::kLockTimeout);
        CHECK(contains(s.message(), "db.c"));
        CHECK(a.getLockMode(kColl) == LockMode::kS);
        CHECK(a.describe().toString() == before);
        CHECK_FALSE(a.describe().waitingFor.has_value());
        auto info = infoFor(mgr, kColl);
        REQUIRE(info.has_value());
        CHECK(holdersOf(mgr, kColl) == sorted({a.id(), b.id()}));
        for (const auto& e : info->granted) {
            CHECK(e.mode == LockMode::kS);
            CHECK(e.convertMode == LockMode::kNone);
        }
        CHECK(info->waiting.empty());
        checkInvariants(mgr);

        // Nothing is held back by a leftover conversion: an IS is granted.
        Locker c(mgr);
        CHECK(c.lock(kColl, LockMode::kIS, Deadline::now()).ok());
        CHECK(c.unlock(kColl).ok());

        // A later upgrade works once B is gone; one unlock for S, one for X.
        CHECK(b.unlock(kColl).ok());
        CHECK(a.lock(kColl, LockMode::kX, Deadline::now()).ok());
        CHECK(a.getLockMode(kColl) == LockMode::kX);
        CHECK(a.unlock(kColl).ok());
        CHECK(a.unlock(kColl).ok());
    }
    checkEmpty(mgr);
}

TEST_CASE("timeout: setMaxLockTimeout caps a wait without deadline") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr);
        REQUIRE(a.lock(kColl, LockMode::kX).ok());
        REQUIRE(b.setMaxLockTimeout(20ms).ok());

        SUBCASE("through lock()") {
            Status s = b.lock(kColl, LockMode::kIS, Deadline::never());
            CHECK(s.code() == StatusCode::kLockTimeout);
        }
        SUBCASE("through lockComplete()") {
            CHECK(begin(b, kColl, LockMode::kIS) == LockResult::kWaiting);
            Status s = b.lockComplete(Deadline::never());
            CHECK(s.code() == StatusCode::kLockTimeout);
        }
        SUBCASE("a zero cap fails at once") {
            REQUIRE(b.setMaxLockTimeout(0ms).ok());
            Status s = b.lock(kColl, LockMode::kIS, Deadline::never());
            CHECK(s.code() == StatusCode::kLockTimeout);
        }
        SUBCASE("an upgrade") {
            CHECK(a.unlock(kColl).ok());
            REQUIRE(a.lock(kColl, LockMode::kIS).ok());
            REQUIRE(b.lock(kColl, LockMode::kIS).ok());
            Status s = b.lock(kColl, LockMode::kX, Deadline::never());
            CHECK(s.code() == StatusCode::kLockTimeout);
            CHECK(b.getLockMode(kColl) == LockMode::kIS);
            CHECK(b.unlock(kColl).ok());
            CHECK(a.unlock(kColl).ok());
            REQUIRE(a.lock(kColl, LockMode::kX).ok());
        }
        CHECK(b.getLockMode(kColl) == LockMode::kNone);
        checkOnlyHolder(mgr, kColl, a.id(), LockMode::kX);
        CHECK(a.unlock(kColl).ok());
        // The cap does not fail a grant that needs no wait.
        CHECK(b.lock(kColl, LockMode::kX, Deadline::never()).ok());
        CHECK(b.unlock(kColl).ok());
    }
    checkEmpty(mgr);
}

// ---------------------------------------------------------------------------
// Blocking waits (threads)

TEST_CASE("blocking: a waiter blocked in lock() is woken by the holder's unlock") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr);
        REQUIRE(a.lock(kColl, LockMode::kX).ok());
        Status result = Status::Internal("not run");
        std::thread t([&] { result = b.lock(kColl, LockMode::kS, Deadline::never()); });
        bool waiting = eventually([&] { return isWaitingOn(mgr, kColl, b.id()); });
        CHECK(a.unlock(kColl).ok());
        t.join();
        REQUIRE(waiting);
        CHECK(result.ok());
        CHECK(b.getLockMode(kColl) == LockMode::kS);
        checkOnlyHolder(mgr, kColl, b.id(), LockMode::kS);
        CHECK(b.unlock(kColl).ok());
    }
    checkEmpty(mgr);
}

TEST_CASE("dump: a waiter is always shown with the locks it took before it queued") {
    // currentOp reads a locker's locks from dump(). Read bucket by bucket, a
    // dump could catch the database intent before its grant and the queued
    // collection request after it: a waiter without its intent. Each round
    // races one such acquisition against back-to-back dumps.
    LockManager mgr;
    int waitsSeen = 0;
    for (int round = 0; round < 200; ++round) {
        const std::string db = "db" + std::to_string(round % 16);
        const std::string ns = db + ".c";
        const ResourceId dbId = ResourceId::database(db), collId = ResourceId::collection(ns);
        Locker holder(mgr), waiter(mgr);
        REQUIRE(holder.lock(collId, LockMode::kX, Deadline::never(), ns).ok());
        Status result = Status::Internal("not run");
        std::thread t([&] {
            if (Status s = waiter.lock(dbId, LockMode::kIX, Deadline::never(), db); !s.ok()) {
                result = s;
                return;
            }
            result = waiter.lock(collId, LockMode::kX, Deadline::never(), ns);
        });
        bool waiting = false;
        for (int i = 0; i < 1'000'000 && !waiting; ++i) {
            bool holdsDb = false;
            for (const LockHeadInfo& h : mgr.dump()) {
                for (const auto& e : h.granted)
                    holdsDb |= h.resource == dbId && e.locker == waiter.id();
                for (const auto& e : h.waiting)
                    waiting |= h.resource == collId && e.locker == waiter.id();
            }
            if (waiting)
                CHECK_MESSAGE(holdsDb, "round " << round << ": a waiter on " << ns
                                                << " shown without its intent on " << db);
            if (!waiting && i > 1000)
                std::this_thread::yield();
        }
        CHECK(holder.unlock(collId).ok());
        t.join();
        waitsSeen += waiting;
        REQUIRE(result.ok());
        CHECK(waiter.unlock(collId).ok());
        CHECK(waiter.unlock(dbId).ok());
    }
    CHECK(waitsSeen == 200);
    checkEmpty(mgr);
}

TEST_CASE("interrupt: a waiting locker returns Interrupted and can lock again after clearing") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr);
        const ResourceId free = ResourceId::collection("db.free");
        REQUIRE(a.lock(kColl, LockMode::kX, Deadline::never(), "db.c").ok());
        Status result = Status::Internal("not run");
        std::thread t([&] { result = b.lock(kColl, LockMode::kIX, Deadline::never()); });
        bool waiting = eventually([&] { return isWaitingOn(mgr, kColl, b.id()); });
        b.interrupt();
        t.join();
        REQUIRE(waiting);
        CHECK(result.code() == StatusCode::kInterrupted);
        CHECK(contains(result.message(), "db.c"));
        CHECK(b.getLockMode(kColl) == LockMode::kNone);
        CHECK(b.pendingGranted());
        checkOnlyHolder(mgr, kColl, a.id(), LockMode::kX);
        CHECK(mgr.queuedReaders() + mgr.queuedWriters() == 0);

        // Still interrupted: a wait fails at once, a free grant succeeds.
        CHECK(b.isInterrupted());
        CHECK(b.lock(kColl, LockMode::kIX, Deadline::in(2000ms)).code() ==
              StatusCode::kInterrupted);
        CHECK(b.lock(free, LockMode::kX, Deadline::never()).ok());
        CHECK(b.unlock(free).ok());

        b.clearInterrupt();
        CHECK_FALSE(b.isInterrupted());
        CHECK(a.unlock(kColl).ok());
        CHECK(b.lock(kColl, LockMode::kIX, Deadline::now()).ok());
        CHECK(b.unlock(kColl).ok());
    }
    checkEmpty(mgr);
}

TEST_CASE("interrupt: a waiting conversion returns Interrupted and keeps the old mode") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr);
        REQUIRE(a.lock(kColl, LockMode::kIS).ok());
        REQUIRE(b.lock(kColl, LockMode::kIS).ok());
        Status result = Status::Internal("not run");
        std::thread t([&] { result = b.lock(kColl, LockMode::kX, Deadline::never()); });
        bool waiting = eventually([&] { return isWaitingOn(mgr, kColl, b.id()); });
        b.interrupt();
        t.join();
        REQUIRE(waiting);
        CHECK(result.code() == StatusCode::kInterrupted);
        CHECK(b.getLockMode(kColl) == LockMode::kIS);
        REQUIRE(b.describe().held.size() == 1);
        CHECK(b.describe().held[0].recursiveCount == 1);
        auto info = infoFor(mgr, kColl);
        REQUIRE(info.has_value());
        for (const auto& e : info->granted)
            CHECK(e.convertMode == LockMode::kNone);
        checkInvariants(mgr);
        b.clearInterrupt();
        CHECK(b.unlock(kColl).ok());
        CHECK(a.unlock(kColl).ok());
    }
    checkEmpty(mgr);
}

// ---------------------------------------------------------------------------
// The partitioned intent-mode fast path

TEST_CASE("partitioned: intent holders migrate when an X arrives and stay visible") {
    constexpr int kHolders = 40;  // more than kNumPartitions: some share one
    LockManager mgr;
    {
        std::vector<std::unique_ptr<Locker>> holders;
        std::vector<LockerId> ids;
        for (int i = 0; i < kHolders; ++i) {
            holders.push_back(std::make_unique<Locker>(mgr));
            LockMode m = i % 2 == 0 ? LockMode::kIS : LockMode::kIX;
            REQUIRE(holders.back()->lock(kColl, m, Deadline::now(), "db.c").ok());
            ids.push_back(holders.back()->id());
        }
        auto info = infoFor(mgr, kColl);
        REQUIRE(info.has_value());
        CHECK(info->granted.size() == kHolders);
        CHECK(holdersOf(mgr, kColl) == sorted(ids));
        int partitioned = 0;
        for (const auto& e : info->granted)
            partitioned += e.partitioned ? 1 : 0;
        CHECK(partitioned == kHolders);  // all on the fast path
        checkInvariants(mgr);

        Locker x(mgr);
        CHECK(begin(x, kColl, LockMode::kX) == LockResult::kWaiting);
        info = infoFor(mgr, kColl);
        REQUIRE(info.has_value());
        CHECK(holdersOf(mgr, kColl) == sorted(ids));
        for (const auto& e : info->granted) {
            CHECK_FALSE(e.partitioned);
            auto pos = std::find(ids.begin(), ids.end(), e.locker) - ids.begin();
            CHECK(e.mode == (pos % 2 == 0 ? LockMode::kIS : LockMode::kIX));
        }
        REQUIRE(info->waiting.size() == 1);
        CHECK(info->waiting[0].locker == x.id());
        checkInvariants(mgr);

        // A newcomer in intent mode waits behind the X now.
        Locker late(mgr);
        CHECK(begin(late, kColl, LockMode::kIS) == LockResult::kWaiting);

        // Holders can still recurse, convert compatibly and release.
        CHECK(holders[0]->lock(kColl, LockMode::kIS).ok());
        CHECK(holders[0]->lock(kColl, LockMode::kIX).ok());  // IS -> IX with IX around
        CHECK(holders[0]->getLockMode(kColl) == LockMode::kIX);
        CHECK(holders[0]->unlock(kColl).ok());
        CHECK(holders[0]->unlock(kColl).ok());
        checkInvariants(mgr);

        for (int i = 0; i < kHolders - 1; ++i) {
            CHECK(holders[i]->unlock(kColl).ok());
            CHECK_FALSE(x.pendingGranted());
        }
        checkInvariants(mgr);
        CHECK(holders[kHolders - 1]->unlock(kColl).ok());
        CHECK(x.pendingGranted());
        CHECK_FALSE(late.pendingGranted());
        CHECK(x.lockComplete(Deadline::now()).ok());
        CHECK(holdersOf(mgr, kColl) == std::vector<LockerId>{x.id()});
        CHECK(queueOf(mgr, kColl) == std::vector<LockerId>{late.id()});
        checkInvariants(mgr);
        CHECK(x.unlock(kColl).ok());
        CHECK(late.pendingGranted());
        CHECK(late.lockComplete(Deadline::now()).ok());
        CHECK(late.unlock(kColl).ok());
        checkEmpty(mgr);

        // After all that, intent locks take the fast path again.
        CHECK(holders[0]->lock(kColl, LockMode::kIX).ok());
        info = infoFor(mgr, kColl);
        REQUIRE(info.has_value());
        REQUIRE(info->granted.size() == 1);
        CHECK(info->granted[0].partitioned);
        CHECK(holders[0]->unlock(kColl).ok());
    }
    checkEmpty(mgr);
}

TEST_CASE("partitioned: an S request migrates IS holders and is granted with them") {
    LockManager mgr;
    {
        std::vector<std::unique_ptr<Locker>> holders;
        for (int i = 0; i < 10; ++i) {
            holders.push_back(std::make_unique<Locker>(mgr));
            REQUIRE(holders.back()->lock(kColl, LockMode::kIS).ok());
        }
        Locker s(mgr), ix(mgr);
        CHECK(begin(s, kColl, LockMode::kS) == LockResult::kOk);
        auto info = infoFor(mgr, kColl);
        REQUIRE(info.has_value());
        CHECK(info->granted.size() == 11);
        for (const auto& e : info->granted)
            CHECK_FALSE(e.partitioned);
        checkInvariants(mgr);
        // With S granted, IX can no longer take the fast path.
        CHECK(begin(ix, kColl, LockMode::kIX) == LockResult::kWaiting);
        CHECK(s.unlock(kColl).ok());
        CHECK(ix.pendingGranted());
        CHECK(ix.lockComplete(Deadline::now()).ok());
        checkInvariants(mgr);
        CHECK(ix.unlock(kColl).ok());
        for (auto& h : holders)
            CHECK(h->unlock(kColl).ok());
    }
    checkEmpty(mgr);
}

// ---------------------------------------------------------------------------
// Two-phase locking

TEST_CASE("2PL: IX/X unlocks are deferred to the end of the unit of work, IS ones are not") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr);
        const ResourceId db = ResourceId::database("db");

        a.beginWriteUnitOfWork();
        CHECK(a.inWriteUnitOfWork());
        REQUIRE(a.lock(db, LockMode::kIS).ok());
        REQUIRE(a.lock(kColl, LockMode::kIX).ok());
        CHECK(a.unlock(kColl).ok());
        CHECK(a.getLockMode(kColl) == LockMode::kIX);  // still held
        // A second unlock of the same level is refused: it is already released
        // as far as the caller is concerned.
        CHECK(a.unlock(kColl).code() == StatusCode::kInvalidArgument);
        // IS is released at once.
        CHECK(a.unlock(db).ok());
        CHECK(a.getLockMode(db) == LockMode::kNone);
        CHECK_FALSE(infoFor(mgr, db).has_value());

        CHECK(begin(b, kColl, LockMode::kX) == LockResult::kWaiting);
        CHECK(a.endWriteUnitOfWork().ok());
        CHECK_FALSE(a.inWriteUnitOfWork());
        CHECK(a.getLockMode(kColl) == LockMode::kNone);
        CHECK(a.describe().held.empty());
        CHECK(b.pendingGranted());
        CHECK(b.lockComplete(Deadline::now()).ok());
        checkOnlyHolder(mgr, kColl, b.id(), LockMode::kX);
        CHECK(b.unlock(kColl).ok());
        checkEmpty(mgr);
    }
    checkEmpty(mgr);
}

TEST_CASE("2PL: nested units, recursive X locks and the S mode") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr);
        a.beginWriteUnitOfWork();
        a.beginWriteUnitOfWork();
        REQUIRE(a.lock(kColl, LockMode::kX).ok());
        REQUIRE(a.lock(kColl, LockMode::kX).ok());
        const ResourceId s = ResourceId::collection("db.s");
        REQUIRE(a.lock(s, LockMode::kS).ok());
        CHECK(a.unlock(s).ok());  // S is not deferred
        CHECK(a.getLockMode(s) == LockMode::kNone);
        CHECK(a.unlock(kColl).ok());
        CHECK(a.unlock(kColl).ok());
        CHECK(a.getLockMode(kColl) == LockMode::kX);
        REQUIRE(a.describe().held.size() == 1);
        CHECK(a.describe().held[0].unlockPending == 2);

        CHECK(begin(b, kColl, LockMode::kIS) == LockResult::kWaiting);
        CHECK(a.endWriteUnitOfWork().ok());  // inner: nothing released
        CHECK(a.getLockMode(kColl) == LockMode::kX);
        CHECK_FALSE(b.pendingGranted());
        CHECK(a.endWriteUnitOfWork().ok());  // outer: released
        CHECK(a.getLockMode(kColl) == LockMode::kNone);
        CHECK(b.pendingGranted());
        CHECK(b.lockComplete(Deadline::now()).ok());
        CHECK(b.unlock(kColl).ok());
    }
    checkEmpty(mgr);
}

TEST_CASE("2PL: a held lock taken again inside the unit is released only with its last level") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr);
        REQUIRE(a.lock(kColl, LockMode::kIX).ok());  // outside the unit
        a.beginWriteUnitOfWork();
        REQUIRE(a.lock(kColl, LockMode::kIX).ok());
        CHECK(a.unlock(kColl).ok());  // deferred
        CHECK(a.endWriteUnitOfWork().ok());
        // One level remains from before the unit.
        CHECK(a.getLockMode(kColl) == LockMode::kIX);
        CHECK(begin(b, kColl, LockMode::kS) == LockResult::kWaiting);
        CHECK(a.unlock(kColl).ok());
        CHECK(b.pendingGranted());
        CHECK(b.lockComplete(Deadline::now()).ok());
        CHECK(b.unlock(kColl).ok());
    }
    checkEmpty(mgr);
}

// ---------------------------------------------------------------------------
// Destruction

TEST_CASE("destruction: a destroyed locker releases its locks and its pending request") {
    LockManager mgr;
    Locker keeper(mgr);
    REQUIRE(keeper.lock(kColl, LockMode::kS).ok());
    {
        Locker a(mgr);
        REQUIRE(a.lockGlobal(LockMode::kIX).ok());
        REQUIRE(a.lock(ResourceId::database("db"), LockMode::kIX).ok());
        CHECK(begin(a, kColl, LockMode::kX) == LockResult::kWaiting);
    }
    checkOnlyHolder(mgr, kColl, keeper.id(), LockMode::kS);
    CHECK(mgr.dump().size() == 1);
    CHECK(mgr.tickets().write().stats().out == 0);
    CHECK(keeper.unlock(kColl).ok());
    checkEmpty(mgr);
}

TEST_CASE("2PL: ending the unit of work while a request is pending is refused") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr);
        const ResourceId other = ResourceId::collection("db.other");
        REQUIRE(b.lock(other, LockMode::kIX).ok());
        a.beginWriteUnitOfWork();
        REQUIRE(a.lock(kColl, LockMode::kIX).ok());
        CHECK(a.unlock(kColl).ok());  // deferred
        CHECK(begin(a, other, LockMode::kX) == LockResult::kWaiting);
        Status s = a.endWriteUnitOfWork();
        CHECK(s.code() == StatusCode::kIllegalOperation);
        CHECK(contains(s.message(), "pending"));
        CHECK(a.inWriteUnitOfWork());
        CHECK(a.getLockMode(kColl) == LockMode::kIX);  // still held, still deferred
        CHECK(b.unlock(other).ok());
        CHECK(a.lockComplete(Deadline::now()).ok());
        CHECK(a.endWriteUnitOfWork().ok());
        CHECK(a.getLockMode(kColl) == LockMode::kNone);
        CHECK(a.unlock(other).ok());
        checkInvariants(mgr);
    }
    checkEmpty(mgr);
}

TEST_CASE("timeout: an invalid deadline after the grant arrived keeps the lock") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr);
        REQUIRE(a.lock(kColl, LockMode::kX).ok());
        CHECK(begin(b, kColl, LockMode::kX) == LockResult::kWaiting);
        CHECK(a.unlock(kColl).ok());
        CHECK(b.pendingGranted());
        CHECK(b.lockComplete(Deadline::in(-5ms)).ok());
        CHECK(b.getLockMode(kColl) == LockMode::kX);
        CHECK(b.unlock(kColl).ok());
        checkInvariants(mgr);
    }
    checkEmpty(mgr);
}
