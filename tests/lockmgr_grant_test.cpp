// Grant semantics of the lock manager: the behaviour MongoDB's own
// lock_manager_test.cpp checks, written fresh for this API: queue order,
// recursion, conversions, cancelled waits, the Global S/X rules and fairness.
// The cases are deterministic and single-threaded (lockBegin /
// pendingGranted / lockComplete). Timeouts, blocking waits, interrupts, the
// partitioned fast path, 2PL and destruction are in lockmgr_wait_test.cpp.
#include <doctest/doctest.h>

#include <string>
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

namespace {

const ResourceId kGlobal = ResourceId::global();

LockResult beginGlobal(Locker& l, LockMode mode) {
    auto r = l.lockGlobalBegin(mode);
    REQUIRE(r.ok());
    return r.value();
}

}  // namespace

// ---------------------------------------------------------------------------
// Queue order, recursion, conversions

TEST_CASE("grant: several X waiters are granted in FIFO order") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr), c(mgr), d(mgr);
        REQUIRE(a.lock(kColl, LockMode::kX, Deadline::now(), "db.c").ok());
        CHECK(begin(b, kColl, LockMode::kX) == LockResult::kWaiting);
        CHECK(begin(c, kColl, LockMode::kX) == LockResult::kWaiting);
        CHECK(begin(d, kColl, LockMode::kX) == LockResult::kWaiting);
        CHECK(queueOf(mgr, kColl) == std::vector<LockerId>{b.id(), c.id(), d.id()});
        checkInvariants(mgr);

        CHECK(a.unlock(kColl).ok());
        CHECK(b.pendingGranted());
        CHECK_FALSE(c.pendingGranted());
        CHECK_FALSE(d.pendingGranted());
        CHECK(b.lockComplete(Deadline::now()).ok());
        CHECK(b.getLockMode(kColl) == LockMode::kX);
        CHECK(queueOf(mgr, kColl) == std::vector<LockerId>{c.id(), d.id()});
        checkInvariants(mgr);

        CHECK(b.unlock(kColl).ok());
        CHECK(c.pendingGranted());
        CHECK_FALSE(d.pendingGranted());
        CHECK(c.lockComplete(Deadline::now()).ok());
        CHECK(queueOf(mgr, kColl) == std::vector<LockerId>{d.id()});

        CHECK(c.unlock(kColl).ok());
        CHECK(d.pendingGranted());
        CHECK(d.lockComplete(Deadline::now()).ok());
        checkOnlyHolder(mgr, kColl, d.id(), LockMode::kX);
        CHECK(d.unlock(kColl).ok());
        checkEmpty(mgr);
    }
    checkEmpty(mgr);
}

TEST_CASE("grant: recursive grants are counted and released one by one") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr);
        for (int i = 0; i < 3; ++i)
            REQUIRE(a.lock(kColl, LockMode::kIS).ok());
        REQUIRE(a.describe().held.size() == 1);
        CHECK(a.describe().held[0].recursiveCount == 3);
        // One request in the table however many times it was taken.
        REQUIRE(infoFor(mgr, kColl).has_value());
        CHECK(infoFor(mgr, kColl)->granted.size() == 1);

        CHECK(begin(b, kColl, LockMode::kX) == LockResult::kWaiting);

        CHECK(a.unlock(kColl).ok());
        CHECK(a.getLockMode(kColl) == LockMode::kIS);
        CHECK_FALSE(b.pendingGranted());
        CHECK(a.unlock(kColl).ok());
        CHECK(a.getLockMode(kColl) == LockMode::kIS);
        CHECK(a.describe().held[0].recursiveCount == 1);
        CHECK_FALSE(b.pendingGranted());
        checkInvariants(mgr);

        CHECK(a.unlock(kColl).ok());
        CHECK(a.getLockMode(kColl) == LockMode::kNone);
        CHECK(a.describe().held.empty());
        CHECK(b.pendingGranted());
        CHECK(b.lockComplete(Deadline::now()).ok());
        checkOnlyHolder(mgr, kColl, b.id(), LockMode::kX);
        // A fourth unlock is an error.
        CHECK(a.unlock(kColl).code() == StatusCode::kInvalidArgument);
        CHECK(b.unlock(kColl).ok());
    }
    checkEmpty(mgr);
}

TEST_CASE("grant: a compatible conversion IS -> IX is granted at once") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr);
        REQUIRE(a.lock(kColl, LockMode::kIS).ok());
        REQUIRE(b.lock(kColl, LockMode::kIS).ok());
        CHECK(begin(a, kColl, LockMode::kIX) == LockResult::kOk);
        CHECK(a.pendingGranted());
        CHECK(a.getLockMode(kColl) == LockMode::kIX);
        CHECK(b.getLockMode(kColl) == LockMode::kIS);
        checkInvariants(mgr);
        // The table sees IX for A.
        auto info = infoFor(mgr, kColl);
        REQUIRE(info.has_value());
        bool sawIX = false;
        for (const auto& e : info->granted) {
            if (e.locker == a.id())
                sawIX = e.mode == LockMode::kIX;
        }
        CHECK(sawIX);
        // The conversion counts as one more acquisition: two unlocks.
        CHECK(a.unlock(kColl).ok());
        CHECK(a.getLockMode(kColl) == LockMode::kIX);
        CHECK(a.unlock(kColl).ok());
        CHECK(a.getLockMode(kColl) == LockMode::kNone);
        checkOnlyHolder(mgr, kColl, b.id(), LockMode::kIS);
        CHECK(b.unlock(kColl).ok());
    }
    checkEmpty(mgr);
}

TEST_CASE("grant: a conversion is favoured over the wait queue") {
    LockManager mgr;
    Locker a(mgr), b(mgr), c(mgr);

    SUBCASE("compatible conversion passes a queued X") {
        REQUIRE(a.lock(kColl, LockMode::kIS).ok());
        REQUIRE(b.lock(kColl, LockMode::kIS).ok());
        CHECK(begin(c, kColl, LockMode::kX) == LockResult::kWaiting);
        CHECK(begin(a, kColl, LockMode::kIX) == LockResult::kOk);
        CHECK(a.getLockMode(kColl) == LockMode::kIX);
        CHECK_FALSE(c.pendingGranted());
        checkInvariants(mgr);
        CHECK(a.unlock(kColl).ok());
        CHECK(a.unlock(kColl).ok());
        CHECK(b.unlock(kColl).ok());
        CHECK(c.pendingGranted());
        CHECK(c.lockComplete(Deadline::now()).ok());
        CHECK(c.unlock(kColl).ok());
    }
    SUBCASE("conflicting conversion is granted before a queued X") {
        REQUIRE(a.lock(kColl, LockMode::kS).ok());
        REQUIRE(b.lock(kColl, LockMode::kS).ok());
        CHECK(begin(c, kColl, LockMode::kX) == LockResult::kWaiting);
        CHECK(begin(a, kColl, LockMode::kX) == LockResult::kWaiting);
        CHECK(a.getLockMode(kColl) == LockMode::kS);  // pending conversion: old mode
        checkInvariants(mgr);
        CHECK(b.unlock(kColl).ok());
        CHECK(a.pendingGranted());
        CHECK_FALSE(c.pendingGranted());
        CHECK(a.lockComplete(Deadline::now()).ok());
        CHECK(a.getLockMode(kColl) == LockMode::kX);
        CHECK(queueOf(mgr, kColl) == std::vector<LockerId>{c.id()});
        checkInvariants(mgr);
        CHECK(a.unlock(kColl).ok());
        CHECK_FALSE(c.pendingGranted());
        CHECK(a.unlock(kColl).ok());
        CHECK(c.pendingGranted());
        CHECK(c.lockComplete(Deadline::now()).ok());
        CHECK(c.unlock(kColl).ok());
    }
    checkEmpty(mgr);
}

TEST_CASE("grant: asking for a weaker mode keeps the stronger one") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr);
        REQUIRE(a.lock(kColl, LockMode::kX).ok());
        CHECK(begin(a, kColl, LockMode::kIS) == LockResult::kOk);
        CHECK(a.getLockMode(kColl) == LockMode::kX);
        CHECK(a.isLockHeldForMode(kColl, LockMode::kS));
        REQUIRE(a.lock(kColl, LockMode::kS).ok());
        CHECK(a.getLockMode(kColl) == LockMode::kX);
        checkOnlyHolder(mgr, kColl, a.id(), LockMode::kX);

        CHECK(begin(b, kColl, LockMode::kIS) == LockResult::kWaiting);
        CHECK(a.unlock(kColl).ok());
        CHECK(a.getLockMode(kColl) == LockMode::kX);
        CHECK(a.unlock(kColl).ok());
        CHECK(a.getLockMode(kColl) == LockMode::kX);
        CHECK_FALSE(b.pendingGranted());
        CHECK(a.unlock(kColl).ok());
        CHECK(a.getLockMode(kColl) == LockMode::kNone);
        CHECK(b.pendingGranted());
        CHECK(b.lockComplete(Deadline::now()).ok());
        checkOnlyHolder(mgr, kColl, b.id(), LockMode::kIS);
        CHECK(b.unlock(kColl).ok());
    }
    checkEmpty(mgr);
}

TEST_CASE("grant: a conflicting conversion is granted only after the other holders release") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr), c(mgr);
        REQUIRE(a.lock(kColl, LockMode::kIS).ok());
        REQUIRE(b.lock(kColl, LockMode::kIS).ok());
        REQUIRE(c.lock(kColl, LockMode::kIX).ok());
        CHECK(begin(a, kColl, LockMode::kX) == LockResult::kWaiting);
        auto info = infoFor(mgr, kColl);
        REQUIRE(info.has_value());
        bool converting = false;
        for (const auto& e : info->granted) {
            if (e.locker == a.id())
                converting = e.convertMode == LockMode::kX;
        }
        CHECK(converting);
        CHECK(info->waiting.empty());  // a conversion is not queued

        CHECK(b.unlock(kColl).ok());
        CHECK_FALSE(a.pendingGranted());
        checkInvariants(mgr);
        CHECK(c.unlock(kColl).ok());
        CHECK(a.pendingGranted());
        CHECK(a.lockComplete(Deadline::now()).ok());
        checkOnlyHolder(mgr, kColl, a.id(), LockMode::kX);
        CHECK(a.unlock(kColl).ok());
        CHECK(a.unlock(kColl).ok());
    }
    checkEmpty(mgr);
}

TEST_CASE("grant: a downgrade wakes a compatible waiter") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr), c(mgr);
        REQUIRE(a.lock(kColl, LockMode::kX).ok());
        CHECK(begin(b, kColl, LockMode::kIS) == LockResult::kWaiting);
        CHECK(begin(c, kColl, LockMode::kIX) == LockResult::kWaiting);

        CHECK(a.downgrade(kColl, LockMode::kS).ok());
        CHECK(a.getLockMode(kColl) == LockMode::kS);
        CHECK(b.pendingGranted());        // IS fits with S
        CHECK_FALSE(c.pendingGranted());  // IX does not
        CHECK(b.lockComplete(Deadline::now()).ok());
        checkInvariants(mgr);

        CHECK(a.downgrade(kColl, LockMode::kIS).ok());
        CHECK(a.getLockMode(kColl) == LockMode::kIS);
        CHECK(c.pendingGranted());
        CHECK(c.lockComplete(Deadline::now()).ok());
        CHECK(holdersOf(mgr, kColl) == sorted({a.id(), b.id(), c.id()}));
        checkInvariants(mgr);
        CHECK(a.unlock(kColl).ok());
        CHECK(b.unlock(kColl).ok());
        CHECK(c.unlock(kColl).ok());
    }
    checkEmpty(mgr);
}

// ---------------------------------------------------------------------------
// Cancelling a wait

TEST_CASE("cancel: a waiting request is withdrawn and lets those behind it move up") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr), c(mgr);
        REQUIRE(a.lock(kColl, LockMode::kIS).ok());
        CHECK(begin(b, kColl, LockMode::kX) == LockResult::kWaiting);
        // C's IS is compatible with A but must not pass the queued X.
        CHECK(begin(c, kColl, LockMode::kIS) == LockResult::kWaiting);
        REQUIRE(b.describe().waitingFor.has_value());
        CHECK(b.describe().waitingFor->mode == LockMode::kX);

        Status s = b.lockComplete(Deadline::now());
        CHECK(s.code() == StatusCode::kLockTimeout);
        CHECK(contains(s.message(), "db.c"));
        CHECK(b.pendingGranted());
        CHECK(b.getLockMode(kColl) == LockMode::kNone);
        CHECK(b.describe().held.empty());
        CHECK_FALSE(b.describe().waitingFor.has_value());

        // With the X gone, C is granted at once.
        CHECK(c.pendingGranted());
        CHECK(c.lockComplete(Deadline::now()).ok());
        CHECK(queueOf(mgr, kColl).empty());
        CHECK(holdersOf(mgr, kColl) == sorted({a.id(), c.id()}));
        checkInvariants(mgr);

        // B can ask again later.
        CHECK(a.unlock(kColl).ok());
        CHECK(c.unlock(kColl).ok());
        CHECK(b.lock(kColl, LockMode::kX, Deadline::now()).ok());
        CHECK(b.unlock(kColl).ok());
    }
    checkEmpty(mgr);
}

TEST_CASE("cancel: a waiting conversion between weak modes (IS -> S against IX)") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr);
        REQUIRE(a.lock(kColl, LockMode::kIS).ok());
        REQUIRE(b.lock(kColl, LockMode::kIX).ok());
        CHECK(begin(a, kColl, LockMode::kS) == LockResult::kWaiting);
        CHECK(a.getLockMode(kColl) == LockMode::kIS);
        CHECK_FALSE(a.pendingGranted());

        Status s = a.lockComplete(Deadline::now());
        CHECK(s.code() == StatusCode::kLockTimeout);
        CHECK(a.getLockMode(kColl) == LockMode::kIS);
        REQUIRE(a.describe().held.size() == 1);
        CHECK(a.describe().held[0].recursiveCount == 1);
        CHECK_FALSE(a.describe().waitingFor.has_value());
        auto info = infoFor(mgr, kColl);
        REQUIRE(info.has_value());
        CHECK(info->granted.size() == 2);
        for (const auto& e : info->granted)
            CHECK(e.convertMode == LockMode::kNone);
        checkInvariants(mgr);

        // One unlock is enough: the failed conversion did not count.
        CHECK(a.unlock(kColl).ok());
        CHECK(a.getLockMode(kColl) == LockMode::kNone);
        checkOnlyHolder(mgr, kColl, b.id(), LockMode::kIX);
        CHECK(b.unlock(kColl).ok());
    }
    checkEmpty(mgr);
}

TEST_CASE("cancel: a waiting conversion between strong modes (S -> X against S)") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr), c(mgr);
        REQUIRE(a.lock(kColl, LockMode::kS).ok());
        REQUIRE(b.lock(kColl, LockMode::kS).ok());
        CHECK(begin(a, kColl, LockMode::kX) == LockResult::kWaiting);
        // The pending conversion to X holds back a newcomer.
        CHECK(begin(c, kColl, LockMode::kIS) == LockResult::kWaiting);

        Status s = a.lockComplete(Deadline::now());
        CHECK(s.code() == StatusCode::kLockTimeout);
        CHECK(a.getLockMode(kColl) == LockMode::kS);
        REQUIRE(a.describe().held.size() == 1);
        CHECK(a.describe().held[0].recursiveCount == 1);

        // Withdrawing the conversion releases the newcomer.
        CHECK(c.pendingGranted());
        CHECK(c.lockComplete(Deadline::now()).ok());
        CHECK(holdersOf(mgr, kColl) == sorted({a.id(), b.id(), c.id()}));
        checkInvariants(mgr);

        // A still holds S: an X from elsewhere waits until A and B are gone.
        CHECK(c.unlock(kColl).ok());
        CHECK(begin(c, kColl, LockMode::kX) == LockResult::kWaiting);
        CHECK(b.unlock(kColl).ok());
        CHECK_FALSE(c.pendingGranted());
        CHECK(a.unlock(kColl).ok());
        CHECK(a.getLockMode(kColl) == LockMode::kNone);
        CHECK(c.pendingGranted());
        CHECK(c.lockComplete(Deadline::now()).ok());
        checkOnlyHolder(mgr, kColl, c.id(), LockMode::kX);
        CHECK(c.unlock(kColl).ok());
    }
    checkEmpty(mgr);
}

// ---------------------------------------------------------------------------
// Global S/X: enqueueAtFront and compatibleFirst

TEST_CASE("global: S and X requests jump the queue (enqueueAtFront)") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr), c(mgr);
        REQUIRE(a.lockGlobal(LockMode::kS).ok());
        CHECK(beginGlobal(b, LockMode::kIX) == LockResult::kWaiting);
        CHECK(beginGlobal(c, LockMode::kX) == LockResult::kWaiting);
        CHECK(queueOf(mgr, kGlobal) == std::vector<LockerId>{c.id(), b.id()});
        checkInvariants(mgr);

        CHECK(a.unlockGlobal().ok());
        CHECK(c.pendingGranted());
        CHECK_FALSE(b.pendingGranted());
        CHECK(c.lockComplete(Deadline::now()).ok());
        CHECK(c.globalMode() == LockMode::kX);
        CHECK(queueOf(mgr, kGlobal) == std::vector<LockerId>{b.id()});
        checkInvariants(mgr);

        CHECK(c.unlockGlobal().ok());
        CHECK(b.pendingGranted());
        CHECK(b.lockComplete(Deadline::now()).ok());
        checkOnlyHolder(mgr, kGlobal, b.id(), LockMode::kIX);
        CHECK(b.unlockGlobal().ok());
    }
    checkEmpty(mgr);
    CHECK(mgr.tickets().read().stats().out == 0);
    CHECK(mgr.tickets().write().stats().out == 0);
}

TEST_CASE("global: a front request compatible with the granted modes is granted at once") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr), c(mgr);
        REQUIRE(a.lockGlobal(LockMode::kIS).ok());
        CHECK(beginGlobal(b, LockMode::kX) == LockResult::kWaiting);
        // S fits the granted IS; it would be first in line, so it does not wait
        // behind the queued X (queued, nothing would ever wake it).
        CHECK(beginGlobal(c, LockMode::kS) == LockResult::kOk);
        CHECK(c.globalMode() == LockMode::kS);
        CHECK(queueOf(mgr, kGlobal) == std::vector<LockerId>{b.id()});
        checkInvariants(mgr);
        CHECK(a.unlockGlobal().ok());
        CHECK(c.unlockGlobal().ok());
        CHECK(b.lockComplete(Deadline::now()).ok());
        CHECK(b.unlockGlobal().ok());
    }
    checkEmpty(mgr);
}

TEST_CASE("global: front requests are FIFO among themselves") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr), c(mgr), d(mgr);
        REQUIRE(a.lockGlobal(LockMode::kX).ok());
        CHECK(beginGlobal(d, LockMode::kIX) == LockResult::kWaiting);
        CHECK(beginGlobal(b, LockMode::kX) == LockResult::kWaiting);
        CHECK(beginGlobal(c, LockMode::kS) == LockResult::kWaiting);
        CHECK(queueOf(mgr, kGlobal) == std::vector<LockerId>{b.id(), c.id(), d.id()});
        CHECK(a.unlockGlobal().ok());
        CHECK(b.pendingGranted());
        CHECK_FALSE(c.pendingGranted());
        CHECK(b.lockComplete(Deadline::now()).ok());
        CHECK(b.unlockGlobal().ok());
        CHECK(c.lockComplete(Deadline::now()).ok());
        CHECK(c.unlockGlobal().ok());
        CHECK(d.lockComplete(Deadline::now()).ok());
        CHECK(d.unlockGlobal().ok());
        checkInvariants(mgr);
    }
    checkEmpty(mgr);
}

TEST_CASE("global: a Global X downgraded to IX stops admitting newcomers first") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr), c(mgr);
        REQUIRE(a.lockGlobal(LockMode::kX).ok());
        CHECK(beginGlobal(b, LockMode::kS) == LockResult::kWaiting);
        CHECK(a.downgrade(kGlobal, LockMode::kIX).ok());
        // S still waits for A's IX; a new IX (compatible with A's IX) must now
        // queue behind the S instead of being admitted first.
        CHECK_FALSE(b.pendingGranted());
        CHECK(beginGlobal(c, LockMode::kIX) == LockResult::kWaiting);
        checkInvariants(mgr);
        CHECK(a.unlockGlobal().ok());
        CHECK(b.lockComplete(Deadline::now()).ok());
        CHECK_FALSE(c.pendingGranted());
        CHECK(b.unlockGlobal().ok());
        CHECK(c.lockComplete(Deadline::now()).ok());
        CHECK(c.unlockGlobal().ok());
    }
    checkEmpty(mgr);
}

TEST_CASE("global: a granted S admits compatible newcomers first (compatibleFirst)") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr), c(mgr), d(mgr), e(mgr), f(mgr);
        REQUIRE(a.lockGlobal(LockMode::kIX).ok());
        // Front requests keep their arrival order among themselves.
        CHECK(beginGlobal(c, LockMode::kS) == LockResult::kWaiting);
        CHECK(beginGlobal(b, LockMode::kX) == LockResult::kWaiting);
        CHECK(queueOf(mgr, kGlobal) == std::vector<LockerId>{c.id(), b.id()});

        CHECK(a.unlockGlobal().ok());
        CHECK(c.pendingGranted());
        CHECK_FALSE(b.pendingGranted());
        CHECK(c.lockComplete(Deadline::now()).ok());
        CHECK(c.globalMode() == LockMode::kS);
        checkInvariants(mgr);

        // While C's S is granted, an IS is granted although X is queued...
        CHECK(beginGlobal(d, LockMode::kIS) == LockResult::kOk);
        CHECK(d.globalMode() == LockMode::kIS);
        // ...but an IX, which conflicts with S, waits.
        CHECK(beginGlobal(e, LockMode::kIX) == LockResult::kWaiting);
        CHECK(queueOf(mgr, kGlobal) == std::vector<LockerId>{b.id(), e.id()});
        checkInvariants(mgr);

        // C gone: FIFO again. The X waits for D; a new IS waits behind the X.
        CHECK(c.unlockGlobal().ok());
        CHECK_FALSE(b.pendingGranted());
        CHECK_FALSE(e.pendingGranted());
        CHECK(beginGlobal(f, LockMode::kIS) == LockResult::kWaiting);
        CHECK(queueOf(mgr, kGlobal) == std::vector<LockerId>{b.id(), e.id(), f.id()});
        checkInvariants(mgr);

        CHECK(d.unlockGlobal().ok());
        CHECK(b.pendingGranted());
        CHECK_FALSE(e.pendingGranted());
        CHECK_FALSE(f.pendingGranted());
        CHECK(b.lockComplete(Deadline::now()).ok());
        CHECK(b.unlockGlobal().ok());
        CHECK(e.pendingGranted());
        CHECK(f.pendingGranted());
        CHECK(e.lockComplete(Deadline::now()).ok());
        CHECK(f.lockComplete(Deadline::now()).ok());
        CHECK(holdersOf(mgr, kGlobal) == sorted({e.id(), f.id()}));
        checkInvariants(mgr);
        CHECK(e.unlockGlobal().ok());
        CHECK(f.unlockGlobal().ok());
    }
    checkEmpty(mgr);
    CHECK(mgr.tickets().read().stats().out == 0);
    CHECK(mgr.tickets().write().stats().out == 0);
}

TEST_CASE("fairness: a compatible newcomer waits behind a queued conflicting request") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr), c(mgr), d(mgr);
        REQUIRE(a.lock(kColl, LockMode::kIS).ok());
        CHECK(begin(b, kColl, LockMode::kX) == LockResult::kWaiting);
        // IX is compatible with the granted IS, but X is queued first.
        CHECK(begin(c, kColl, LockMode::kIX) == LockResult::kWaiting);
        // So does an IS.
        CHECK(begin(d, kColl, LockMode::kIS) == LockResult::kWaiting);
        CHECK(queueOf(mgr, kColl) == std::vector<LockerId>{b.id(), c.id(), d.id()});
        checkInvariants(mgr);

        CHECK(a.unlock(kColl).ok());
        CHECK(b.pendingGranted());
        CHECK_FALSE(c.pendingGranted());
        CHECK_FALSE(d.pendingGranted());
        CHECK(b.lockComplete(Deadline::now()).ok());
        CHECK(b.unlock(kColl).ok());
        // Both compatible waiters are granted together.
        CHECK(c.pendingGranted());
        CHECK(d.pendingGranted());
        CHECK(c.lockComplete(Deadline::now()).ok());
        CHECK(d.lockComplete(Deadline::now()).ok());
        checkInvariants(mgr);
        CHECK(c.unlock(kColl).ok());
        CHECK(d.unlock(kColl).ok());
    }
    checkEmpty(mgr);
}

TEST_CASE("fairness: a queued S holds back a later IX but not a later IS") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr), c(mgr), d(mgr);
        REQUIRE(a.lock(kColl, LockMode::kIX).ok());
        CHECK(begin(b, kColl, LockMode::kS) == LockResult::kWaiting);
        CHECK(begin(c, kColl, LockMode::kIX) == LockResult::kWaiting);
        CHECK(begin(d, kColl, LockMode::kIS) == LockResult::kOk);
        CHECK(queueOf(mgr, kColl) == std::vector<LockerId>{b.id(), c.id()});
        CHECK(a.unlock(kColl).ok());
        CHECK(b.pendingGranted());
        CHECK_FALSE(c.pendingGranted());
        CHECK(b.lockComplete(Deadline::now()).ok());
        CHECK(b.unlock(kColl).ok());
        CHECK(c.pendingGranted());
        CHECK(c.lockComplete(Deadline::now()).ok());
        checkInvariants(mgr);
        CHECK(c.unlock(kColl).ok());
        CHECK(d.unlock(kColl).ok());
    }
    checkEmpty(mgr);
}
