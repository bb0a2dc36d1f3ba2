// Lock modes, resource ids, the conflict table checked through real lockers,
// and every kind of bad input the Locker must refuse without leaving a trace.
#include <doctest/doctest.h>

#include <array>
#include <chrono>
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
using namespace std::chrono_literals;
using mvkv::lockmgr::testing::contains;

namespace {

constexpr std::array<LockMode, 4> kModes = {LockMode::kIS, LockMode::kIX, LockMode::kS,
                                            LockMode::kX};

// The seed table, written out independently of conflictMask():
// kCompatible[requested][granted], index 0..3 = IS, IX, S, X.
constexpr bool kCompatible[4][4] = {
    /* IS */ {true, true, true, false},
    /* IX */ {true, true, false, false},
    /* S  */ {true, false, true, false},
    /* X  */ {false, false, false, false},
};
// kCovers[wanted][held]: holding `held` gives everything `wanted` asks for.
constexpr bool kCovers[4][4] = {
    /* IS */ {true, true, true, true},
    /* IX */ {false, true, false, true},
    /* S  */ {false, false, true, true},
    /* X  */ {false, false, false, true},
};

// The lock table holds nothing at all and its invariants hold.
void checkTableEmpty(const LockManager& mgr) {
    CHECK(mgr.checkInvariants() == std::string());
    CHECK(mgr.dump().empty());
}

// Exactly one granted entry on `id`, owned by `locker` in `mode`, nobody waiting.
// Stricter than testing::checkOnlyHolder: `id` must be the table's only entry.
void checkOnlyHolder(const LockManager& mgr, ResourceId id, LockerId locker, LockMode mode) {
    CHECK(mgr.checkInvariants() == std::string());
    auto dump = mgr.dump();
    REQUIRE(dump.size() == 1);
    CHECK(dump[0].resource == id);
    REQUIRE(dump[0].granted.size() == 1);
    CHECK(dump[0].granted[0].locker == locker);
    CHECK(dump[0].granted[0].mode == mode);
    CHECK(dump[0].granted[0].convertMode == LockMode::kNone);
    CHECK(dump[0].waiting.empty());
}

}  // namespace

// ---------------------------------------------------------------------------
// Mode helpers

TEST_CASE("modes: conflicts() matches the seed table for every pair") {
    for (size_t req = 0; req < 4; ++req) {
        for (size_t held = 0; held < 4; ++held) {
            CAPTURE(kModes[req]);
            CAPTURE(kModes[held]);
            CHECK(conflicts(kModes[req], modeMask(kModes[held])) == !kCompatible[req][held]);
            // The table is symmetric.
            CHECK(conflicts(kModes[held], modeMask(kModes[req])) == !kCompatible[req][held]);
        }
    }
    // Against a set of modes: conflicts with any member.
    uint32_t isAndS = modeMask(LockMode::kIS) | modeMask(LockMode::kS);
    CHECK_FALSE(conflicts(LockMode::kIS, isAndS));
    CHECK_FALSE(conflicts(LockMode::kS, isAndS));
    CHECK(conflicts(LockMode::kIX, isAndS));
    CHECK(conflicts(LockMode::kX, isAndS));
    // Nothing granted: nothing conflicts.
    for (LockMode m : kModes)
        CHECK_FALSE(conflicts(m, 0));
}

TEST_CASE("modes: isModeCovered() for every pair") {
    for (size_t wanted = 0; wanted < 4; ++wanted) {
        for (size_t held = 0; held < 4; ++held) {
            CAPTURE(kModes[wanted]);
            CAPTURE(kModes[held]);
            CHECK(isModeCovered(kModes[wanted], kModes[held]) == kCovers[wanted][held]);
        }
    }
}

TEST_CASE("modes: validity, names and classes") {
    for (LockMode m : kModes)
        CHECK(isValidMode(m));
    CHECK_FALSE(isValidMode(LockMode::kNone));
    CHECK_FALSE(isValidMode(static_cast<LockMode>(5)));
    CHECK_FALSE(isValidMode(static_cast<LockMode>(7)));
    CHECK_FALSE(isValidMode(static_cast<LockMode>(255)));

    CHECK(modeName(LockMode::kIS) == "IS");
    CHECK(modeName(LockMode::kIX) == "IX");
    CHECK(modeName(LockMode::kS) == "S");
    CHECK(modeName(LockMode::kX) == "X");
    CHECK(modeName(LockMode::kNone) == "NONE");
    CHECK(modeStatsLetter(LockMode::kIS) == "r");
    CHECK(modeStatsLetter(LockMode::kIX) == "w");
    CHECK(modeStatsLetter(LockMode::kS) == "R");
    CHECK(modeStatsLetter(LockMode::kX) == "W");

    CHECK(isSharedMode(LockMode::kIS));
    CHECK(isSharedMode(LockMode::kS));
    CHECK_FALSE(isSharedMode(LockMode::kIX));
    CHECK_FALSE(isSharedMode(LockMode::kX));
    CHECK(isIntentMode(LockMode::kIS));
    CHECK(isIntentMode(LockMode::kIX));
    CHECK_FALSE(isIntentMode(LockMode::kS));
    CHECK_FALSE(isIntentMode(LockMode::kX));
}

// ---------------------------------------------------------------------------
// ResourceId

TEST_CASE("resource id: same name same id, other type or name other id, empty invalid") {
    ResourceId a1 = ResourceId::collection("db.c");
    ResourceId a2 = ResourceId::collection(std::string("db.") + "c");
    CHECK(a1.isValid());
    CHECK(a1 == a2);
    CHECK(a1.hash() == a2.hash());
    CHECK(a1.type() == ResourceType::kCollection);
    CHECK(ResourceIdHasher{}(a1) == ResourceIdHasher{}(a2));

    // Same name, different type: different resources.
    ResourceId asDb(ResourceType::kDatabase, "db.c");
    CHECK(asDb.isValid());
    CHECK_FALSE(asDb == a1);
    CHECK(ResourceId::database("db") == ResourceId(ResourceType::kDatabase, "db"));
    CHECK_FALSE(ResourceId::database("db") == ResourceId(ResourceType::kMetadata, "db"));

    // Different name, same type.
    CHECK_FALSE(ResourceId::collection("db.c") == ResourceId::collection("db.d"));

    // Invalid ids.
    CHECK_FALSE(ResourceId().isValid());
    CHECK(ResourceId().type() == ResourceType::kInvalid);
    CHECK_FALSE(ResourceId::database("").isValid());
    CHECK_FALSE(ResourceId::collection("").isValid());
    CHECK_FALSE(ResourceId(ResourceType::kInvalid, "x").isValid());
    CHECK(ResourceId::database("") == ResourceId());

    // Global is a fixed valid id.
    CHECK(ResourceId::global().isValid());
    CHECK(ResourceId::global().type() == ResourceType::kGlobal);
    CHECK(ResourceId::global() == ResourceId::global());
    // The precomputed constant is the hash of the name "global".
    CHECK(ResourceId::global() == ResourceId(ResourceType::kGlobal, "global"));

    CHECK(contains(a1.toString(), "Collection"));
    CHECK(contains(asDb.toString(), "Database"));
    CHECK(resourceTypeName(ResourceType::kGlobal) == "Global");
}

// ---------------------------------------------------------------------------
// The conflict matrix through two real lockers

namespace {

// A holds `held` on `id`; B asks for `requested`. B must be granted at once
// iff the pair is compatible; otherwise it waits, and is granted as soon as A
// lets go.
void checkPair(ResourceId id, LockMode held, LockMode requested, bool compatible) {
    CAPTURE(id.toString());
    CAPTURE(held);
    CAPTURE(requested);
    LockManager mgr;
    {
        Locker a(mgr);
        Locker b(mgr);
        REQUIRE(a.lock(id, held, Deadline::now()).ok());
        auto begun = b.lockBegin(id, requested);
        REQUIRE(begun.ok());
        CHECK(mgr.checkInvariants() == std::string());
        if (compatible) {
            CHECK(begun.value() == LockResult::kOk);
            CHECK(b.pendingGranted());
            CHECK(b.getLockMode(id) == requested);
            CHECK(a.getLockMode(id) == held);
            CHECK(b.unlock(id).ok());
            CHECK(a.unlock(id).ok());
        } else {
            CHECK(begun.value() == LockResult::kWaiting);
            CHECK_FALSE(b.pendingGranted());
            CHECK(b.getLockMode(id) == LockMode::kNone);
            // The waiter shows up in the queue.
            auto dump = mgr.dump();
            REQUIRE(dump.size() == 1);
            REQUIRE(dump[0].waiting.size() == 1);
            CHECK(dump[0].waiting[0].locker == b.id());
            CHECK(dump[0].waiting[0].mode == requested);
            // A lets go: B is granted without waiting any further.
            CHECK(a.unlock(id).ok());
            CHECK(b.pendingGranted());
            CHECK(b.lockComplete(Deadline::now()).ok());
            CHECK(b.getLockMode(id) == requested);
            checkOnlyHolder(mgr, id, b.id(), requested);
            CHECK(b.unlock(id).ok());
        }
        checkTableEmpty(mgr);
    }
    checkTableEmpty(mgr);
}

}  // namespace

TEST_CASE("matrix: two lockers on a collection") {
    for (size_t held = 0; held < 4; ++held) {
        for (size_t req = 0; req < 4; ++req) {
            checkPair(ResourceId::collection("db.c"), kModes[held], kModes[req],
                      kCompatible[req][held]);
        }
    }
}

TEST_CASE("matrix: two lockers on a database") {
    for (size_t held = 0; held < 4; ++held) {
        for (size_t req = 0; req < 4; ++req) {
            checkPair(ResourceId::database("db"), kModes[held], kModes[req],
                      kCompatible[req][held]);
        }
    }
}

TEST_CASE("matrix: two lockers on the Global lock") {
    for (size_t held = 0; held < 4; ++held) {
        for (size_t req = 0; req < 4; ++req) {
            checkPair(ResourceId::global(), kModes[held], kModes[req], kCompatible[req][held]);
        }
    }
}

TEST_CASE("matrix: a locker never conflicts with itself (recursion or conversion)") {
    // Whatever A holds, A asking again for a mode it covers is granted at once.
    for (size_t held = 0; held < 4; ++held) {
        for (size_t req = 0; req < 4; ++req) {
            if (!kCovers[req][held])
                continue;
            CAPTURE(kModes[held]);
            CAPTURE(kModes[req]);
            LockManager mgr;
            Locker a(mgr);
            ResourceId id = ResourceId::collection("db.c");
            REQUIRE(a.lock(id, kModes[held]).ok());
            auto begun = a.lockBegin(id, kModes[req]);
            REQUIRE(begun.ok());
            CHECK(begun.value() == LockResult::kOk);
            CHECK(a.getLockMode(id) == kModes[held]);
            CHECK(a.unlock(id).ok());
            CHECK(a.unlock(id).ok());
            checkTableEmpty(mgr);
        }
    }
}

// ---------------------------------------------------------------------------
// Bad input

TEST_CASE("bad input: unlock of what is not held") {
    LockManager mgr;
    Locker a(mgr);
    ResourceId id = ResourceId::collection("db.c");

    SUBCASE("never locked") {
        Status s = a.unlock(id);
        CHECK(s.code() == StatusCode::kInvalidArgument);
        CHECK_FALSE(s.message().empty());
        CHECK(contains(s.message(), "not hold"));
        checkTableEmpty(mgr);
    }
    SUBCASE("unlocked once too often") {
        REQUIRE(a.lock(id, LockMode::kIX).ok());
        CHECK(a.unlock(id).ok());
        Status s = a.unlock(id);
        CHECK(s.code() == StatusCode::kInvalidArgument);
        CHECK(contains(s.message(), "not hold"));
        checkTableEmpty(mgr);
    }
    SUBCASE("held by another locker only") {
        Locker b(mgr);
        REQUIRE(b.lock(id, LockMode::kS).ok());
        Status s = a.unlock(id);
        CHECK(s.code() == StatusCode::kInvalidArgument);
        CHECK(contains(s.message(), "not hold"));
        // B keeps its lock.
        checkOnlyHolder(mgr, id, b.id(), LockMode::kS);
        CHECK(b.getLockMode(id) == LockMode::kS);
        CHECK(b.unlock(id).ok());
        checkTableEmpty(mgr);
    }
    SUBCASE("the Global lock, never taken") {
        Status s = a.unlockGlobal();
        CHECK(s.code() == StatusCode::kInvalidArgument);
        CHECK_FALSE(s.message().empty());
        checkTableEmpty(mgr);
        CHECK_FALSE(a.isLocked());
    }
    SUBCASE("an invalid resource") {
        Status s = a.unlock(ResourceId());
        CHECK(s.code() == StatusCode::kInvalidArgument);
        CHECK_FALSE(s.message().empty());
        checkTableEmpty(mgr);
    }
    CHECK(a.describe().held.empty());
    CHECK(mgr.checkInvariants() == std::string());
}

TEST_CASE("bad input: IX and S do not convert into each other") {
    LockManager mgr;
    Locker a(mgr);
    ResourceId id = ResourceId::collection("db.c");

    SUBCASE("IX -> S") {
        REQUIRE(a.lock(id, LockMode::kIX).ok());
        Status s = a.lock(id, LockMode::kS);
        CHECK(s.code() == StatusCode::kInvalidArgument);
        CHECK(contains(s.message(), "convert"));
        CHECK(contains(s.message(), "IX"));
        CHECK(a.getLockMode(id) == LockMode::kIX);
        checkOnlyHolder(mgr, id, a.id(), LockMode::kIX);
        // Also through lockBegin, and nothing is left pending.
        auto begun = a.lockBegin(id, LockMode::kS);
        CHECK(begun.status().code() == StatusCode::kInvalidArgument);
        CHECK(a.pendingGranted());
        CHECK(a.lockComplete().code() == StatusCode::kIllegalOperation);
        // One unlock releases: the failed calls did not count.
        CHECK(a.unlock(id).ok());
        checkTableEmpty(mgr);
    }
    SUBCASE("S -> IX") {
        REQUIRE(a.lock(id, LockMode::kS).ok());
        Status s = a.lock(id, LockMode::kIX);
        CHECK(s.code() == StatusCode::kInvalidArgument);
        CHECK(contains(s.message(), "convert"));
        CHECK(contains(s.message(), "IX"));
        CHECK(a.getLockMode(id) == LockMode::kS);
        CHECK(a.isLockHeldForMode(id, LockMode::kIS));
        CHECK_FALSE(a.isLockHeldForMode(id, LockMode::kIX));
        checkOnlyHolder(mgr, id, a.id(), LockMode::kS);
        CHECK(a.unlock(id).ok());
        checkTableEmpty(mgr);
    }
    CHECK(a.getLockMode(id) == LockMode::kNone);
    CHECK(a.describe().held.empty());
}

TEST_CASE("bad input: invalid lock modes") {
    LockManager mgr;
    Locker a(mgr);
    ResourceId id = ResourceId::collection("db.c");
    for (LockMode bad : {static_cast<LockMode>(7), LockMode::kNone, static_cast<LockMode>(5)}) {
        CAPTURE(static_cast<int>(bad));
        Status s = a.lock(id, bad);
        CHECK(s.code() == StatusCode::kInvalidArgument);
        CHECK(contains(s.message(), "mode"));
        CHECK(contains(s.message(), std::to_string(static_cast<int>(bad))));

        auto begun = a.lockBegin(id, bad);
        CHECK(begun.status().code() == StatusCode::kInvalidArgument);
        CHECK(contains(begun.status().message(), "mode"));

        Status g = a.lockGlobal(bad);
        CHECK(g.code() == StatusCode::kInvalidArgument);
        CHECK(contains(g.message(), "mode"));
        auto gb = a.lockGlobalBegin(bad);
        CHECK(gb.status().code() == StatusCode::kInvalidArgument);

        CHECK(a.pendingGranted());
        CHECK_FALSE(a.isLocked());
        CHECK(a.getLockMode(id) == LockMode::kNone);
        checkTableEmpty(mgr);
    }
    // No ticket was kept by the refused Global calls.
    CHECK(mgr.tickets().read().stats().out == 0);
    CHECK(mgr.tickets().write().stats().out == 0);

    // Downgrade to an invalid mode, while holding the lock.
    REQUIRE(a.lock(id, LockMode::kX).ok());
    Status d = a.downgrade(id, static_cast<LockMode>(7));
    CHECK(d.code() == StatusCode::kInvalidArgument);
    CHECK(contains(d.message(), "mode"));
    CHECK(a.getLockMode(id) == LockMode::kX);
    CHECK(a.unlock(id).ok());
    checkTableEmpty(mgr);
}

TEST_CASE("bad input: negative and absurd deadlines") {
    LockManager mgr;
    Locker a(mgr);
    Locker holder(mgr);
    ResourceId id = ResourceId::collection("db.c");
    const Deadline negative = Deadline::in(std::chrono::milliseconds(-5));
    const Deadline absurd = Deadline::in(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::hours(24 * 365 * 100)));
    CHECK_FALSE(negative.valid());
    CHECK_FALSE(absurd.valid());
    CHECK(contains(negative.invalidReason(), "negative"));
    CHECK(contains(absurd.invalidReason(), "limit"));
    // The limit itself is fine, one microsecond more is not.
    CHECK(Deadline::in(Deadline::kMaxTimeout).valid());
    CHECK_FALSE(
        Deadline::in(std::chrono::duration_cast<std::chrono::microseconds>(Deadline::kMaxTimeout) +
                     1us)
            .valid());

    SUBCASE("on a free resource") {
        Status s = a.lock(id, LockMode::kX, negative);
        CHECK(s.code() == StatusCode::kInvalidArgument);
        CHECK(contains(s.message(), "negative"));
        checkTableEmpty(mgr);

        s = a.lock(id, LockMode::kX, absurd);
        CHECK(s.code() == StatusCode::kInvalidArgument);
        CHECK(contains(s.message(), "limit"));
        checkTableEmpty(mgr);
    }
    SUBCASE("on the Global lock") {
        Status s = a.lockGlobal(LockMode::kIS, negative);
        CHECK(s.code() == StatusCode::kInvalidArgument);
        CHECK(contains(s.message(), "negative"));
        s = a.lockGlobal(LockMode::kX, absurd);
        CHECK(s.code() == StatusCode::kInvalidArgument);
        CHECK(contains(s.message(), "limit"));
        auto begun = a.lockGlobalBegin(LockMode::kIX, negative);
        CHECK(begun.status().code() == StatusCode::kInvalidArgument);
        CHECK_FALSE(a.isLocked());
        checkTableEmpty(mgr);
        CHECK(mgr.tickets().read().stats().out == 0);
        CHECK(mgr.tickets().write().stats().out == 0);
    }
    SUBCASE("on a resource another locker holds (would otherwise wait)") {
        REQUIRE(holder.lock(id, LockMode::kX).ok());
        Status s = a.lock(id, LockMode::kS, negative);
        CHECK(s.code() == StatusCode::kInvalidArgument);
        CHECK(contains(s.message(), "negative"));
        s = a.lock(id, LockMode::kS, absurd);
        CHECK(s.code() == StatusCode::kInvalidArgument);
        CHECK(contains(s.message(), "limit"));
        checkOnlyHolder(mgr, id, holder.id(), LockMode::kX);
        CHECK(a.getLockMode(id) == LockMode::kNone);
        CHECK(a.pendingGranted());
        CHECK(holder.unlock(id).ok());
        checkTableEmpty(mgr);
    }
    SUBCASE("on an upgrade (would otherwise wait)") {
        REQUIRE(holder.lock(id, LockMode::kIS).ok());
        REQUIRE(a.lock(id, LockMode::kIS).ok());
        Status s = a.lock(id, LockMode::kX, negative);
        CHECK(s.code() == StatusCode::kInvalidArgument);
        CHECK(contains(s.message(), "negative"));
        CHECK(a.getLockMode(id) == LockMode::kIS);
        CHECK(a.describe().held.size() == 1);
        CHECK(a.describe().held[0].recursiveCount == 1);
        CHECK_FALSE(a.describe().waitingFor.has_value());
        CHECK(mgr.checkInvariants() == std::string());
        for (const auto& info : mgr.dump()) {
            CHECK(info.waiting.empty());
            for (const auto& e : info.granted)
                CHECK(e.convertMode == LockMode::kNone);
        }
        CHECK(a.unlock(id).ok());
        CHECK(holder.unlock(id).ok());
        checkTableEmpty(mgr);
    }
    SUBCASE("lockComplete with an invalid deadline withdraws the pending request") {
        REQUIRE(holder.lock(id, LockMode::kX).ok());
        auto begun = a.lockBegin(id, LockMode::kS);
        REQUIRE(begun.ok());
        REQUIRE(begun.value() == LockResult::kWaiting);
        Status s = a.lockComplete(negative);
        CHECK(s.code() == StatusCode::kInvalidArgument);
        CHECK(contains(s.message(), "negative"));
        CHECK(a.pendingGranted());
        CHECK(a.getLockMode(id) == LockMode::kNone);
        checkOnlyHolder(mgr, id, holder.id(), LockMode::kX);
        CHECK(holder.unlock(id).ok());
        checkTableEmpty(mgr);
    }
    // Whatever was refused, the locker still works.
    REQUIRE(a.lock(id, LockMode::kX, Deadline::now()).ok());
    CHECK(a.unlock(id).ok());
    checkTableEmpty(mgr);
}

TEST_CASE("bad input: a lock on an empty name or an invalid resource") {
    LockManager mgr;
    Locker a(mgr);
    for (ResourceId bad : {ResourceId::database(""), ResourceId::collection(""), ResourceId()}) {
        Status s = a.lock(bad, LockMode::kIS);
        CHECK(s.code() == StatusCode::kInvalidArgument);
        CHECK_FALSE(s.message().empty());
        CHECK(contains(s.message(), "invalid resource"));
        auto begun = a.lockBegin(bad, LockMode::kX);
        CHECK(begun.status().code() == StatusCode::kInvalidArgument);
        CHECK(contains(begun.status().message(), "invalid resource"));
        Status d = a.downgrade(bad, LockMode::kIS);
        CHECK(d.code() == StatusCode::kInvalidArgument);
        CHECK(a.pendingGranted());
        checkTableEmpty(mgr);
    }
    CHECK(a.describe().held.empty());
}

TEST_CASE("bad input: setMaxLockTimeout out of range") {
    LockManager mgr;
    Locker a(mgr);
    Status s = a.setMaxLockTimeout(std::chrono::milliseconds(-1));
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK_FALSE(s.message().empty());
    CHECK(contains(s.message(), "-1"));
    CHECK(contains(s.message(), "timeout"));

    Status tooLong = a.setMaxLockTimeout(Deadline::kMaxTimeout + 1ms);
    CHECK(tooLong.code() == StatusCode::kInvalidArgument);
    CHECK_FALSE(tooLong.message().empty());

    // The refused values did not take effect: a wait still has no cap, and the
    // bounds themselves are accepted.
    CHECK(a.setMaxLockTimeout(0ms).ok());
    CHECK(a.setMaxLockTimeout(Deadline::kMaxTimeout).ok());
    a.unsetMaxLockTimeout();
    REQUIRE(a.lock(ResourceId::collection("db.c"), LockMode::kX).ok());
    CHECK(a.unlock(ResourceId::collection("db.c")).ok());
    checkTableEmpty(mgr);
}

TEST_CASE("bad input: illegal sequences") {
    LockManager mgr;
    Locker a(mgr);
    Locker holder(mgr);
    ResourceId id = ResourceId::collection("db.c");

    SUBCASE("lockComplete with nothing pending") {
        Status s = a.lockComplete();
        CHECK(s.code() == StatusCode::kIllegalOperation);
        CHECK(contains(s.message(), "pending"));
        // Also after a request that was granted at once.
        auto begun = a.lockBegin(id, LockMode::kIX);
        REQUIRE(begun.ok());
        CHECK(begun.value() == LockResult::kOk);
        s = a.lockComplete(Deadline::now());
        CHECK(s.code() == StatusCode::kIllegalOperation);
        CHECK(a.getLockMode(id) == LockMode::kIX);
        CHECK(a.unlock(id).ok());
        checkTableEmpty(mgr);
    }
    SUBCASE("endWriteUnitOfWork without begin") {
        Status s = a.endWriteUnitOfWork();
        CHECK(s.code() == StatusCode::kIllegalOperation);
        CHECK(contains(s.message(), "beginWriteUnitOfWork"));
        CHECK_FALSE(a.inWriteUnitOfWork());
        // Balanced begin/end is fine; one more end is not.
        a.beginWriteUnitOfWork();
        CHECK(a.endWriteUnitOfWork().ok());
        CHECK(a.endWriteUnitOfWork().code() == StatusCode::kIllegalOperation);
        checkTableEmpty(mgr);
    }
    SUBCASE("a second lockBegin while one is pending") {
        REQUIRE(holder.lock(id, LockMode::kX).ok());
        auto first = a.lockBegin(id, LockMode::kIS);
        REQUIRE(first.ok());
        REQUIRE(first.value() == LockResult::kWaiting);
        auto second = a.lockBegin(ResourceId::collection("db.other"), LockMode::kIS);
        CHECK(second.status().code() == StatusCode::kIllegalOperation);
        CHECK(contains(second.status().message(), "lockComplete"));
        // Unlock of the pending resource is refused too.
        Status u = a.unlock(id);
        CHECK(u.code() == StatusCode::kIllegalOperation);
        // The first request is untouched: still queued.
        auto dump = mgr.dump();
        REQUIRE(dump.size() == 1);
        REQUIRE(dump[0].waiting.size() == 1);
        CHECK(dump[0].waiting[0].locker == a.id());
        CHECK(holder.unlock(id).ok());
        CHECK(a.lockComplete(Deadline::now()).ok());
        CHECK(a.getLockMode(id) == LockMode::kIS);
        CHECK(a.unlock(id).ok());
        checkTableEmpty(mgr);
    }
    SUBCASE("downgrade of what is not held, or to a stronger mode") {
        Status s = a.downgrade(id, LockMode::kIS);
        CHECK(s.code() == StatusCode::kInvalidArgument);
        CHECK(contains(s.message(), "not held"));
        REQUIRE(a.lock(id, LockMode::kIS).ok());
        s = a.downgrade(id, LockMode::kX);
        CHECK(s.code() == StatusCode::kInvalidArgument);
        CHECK(contains(s.message(), "weaker"));
        CHECK(a.getLockMode(id) == LockMode::kIS);
        REQUIRE(a.lock(id, LockMode::kIX).ok());  // IS -> IX conversion, count 2
        s = a.downgrade(id, LockMode::kS);        // S is not covered by IX
        CHECK(s.code() == StatusCode::kInvalidArgument);
        CHECK(a.getLockMode(id) == LockMode::kIX);
        CHECK(a.unlock(id).ok());
        CHECK(a.unlock(id).ok());
        checkTableEmpty(mgr);
    }
    CHECK(mgr.checkInvariants() == std::string());
}
