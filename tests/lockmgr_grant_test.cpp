// Grant semantics of the lock manager: the behaviour MongoDB's own
// lock_manager_test.cpp checks, written fresh for this API. Most cases are
// deterministic and single-threaded (lockBegin / pendingGranted /
// lockComplete); threads are used only where a blocking wait is itself the
// behaviour under test.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "lockmgr/lock_manager.h"
#include "lockmgr/lock_mode.h"
#include "lockmgr/locker.h"
#include "lockmgr/resource_id.h"
#include "util/deadline.h"
#include "util/status.h"

using namespace mvkv;
using namespace mvkv::lockmgr;
using namespace std::chrono_literals;

namespace doctest {
template <>
struct StringMaker<LockMode> {
    static String convert(LockMode m) { return String(std::string(modeName(m)).c_str()); }
};
template <>
struct StringMaker<LockResult> {
    static String convert(LockResult r) { return String(std::string(lockResultName(r)).c_str()); }
};
template <>
struct StringMaker<StatusCode> {
    static String convert(StatusCode c) { return String(std::string(statusCodeName(c)).c_str()); }
};
}  // namespace doctest

namespace {

const ResourceId kColl = ResourceId::collection("db.c");
const ResourceId kGlobal = ResourceId::global();

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

std::optional<LockHeadInfo> infoFor(const LockManager& mgr, ResourceId id) {
    for (LockHeadInfo& info : mgr.dump()) {
        if (info.resource == id) return std::move(info);
    }
    return std::nullopt;
}

// Lockers waiting in the queue of `id`, front to back.
std::vector<LockerId> queueOf(const LockManager& mgr, ResourceId id) {
    std::vector<LockerId> out;
    if (auto info = infoFor(mgr, id)) {
        for (const auto& e : info->waiting) out.push_back(e.locker);
    }
    return out;
}

// Lockers granted on `id` (any order), sorted.
std::vector<LockerId> holdersOf(const LockManager& mgr, ResourceId id) {
    std::vector<LockerId> out;
    if (auto info = infoFor(mgr, id)) {
        for (const auto& e : info->granted) out.push_back(e.locker);
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<LockerId> sorted(std::vector<LockerId> v) {
    std::sort(v.begin(), v.end());
    return v;
}

// Is `locker` waiting on `id` (queued, or converting)?
bool isWaitingOn(const LockManager& mgr, ResourceId id, LockerId locker) {
    auto info = infoFor(mgr, id);
    if (!info) return false;
    for (const auto& e : info->waiting) {
        if (e.locker == locker) return true;
    }
    for (const auto& e : info->granted) {
        if (e.locker == locker && e.convertMode != LockMode::kNone) return true;
    }
    return false;
}

// Polls `pred` for up to 5 s (the bound only matters when the code is broken).
bool eventually(const std::function<bool()>& pred) {
    for (int i = 0; i < 5000; ++i) {
        if (pred()) return true;
        std::this_thread::sleep_for(1ms);
    }
    return pred();
}

void checkInvariants(const LockManager& mgr) { CHECK(mgr.checkInvariants() == std::string()); }

// Only `locker` is on `id`, granted `mode`, nothing pending or queued.
void checkOnlyHolder(const LockManager& mgr, ResourceId id, LockerId locker, LockMode mode) {
    checkInvariants(mgr);
    auto info = infoFor(mgr, id);
    REQUIRE(info.has_value());
    REQUIRE(info->granted.size() == 1);
    CHECK(info->granted[0].locker == locker);
    CHECK(info->granted[0].mode == mode);
    CHECK(info->granted[0].convertMode == LockMode::kNone);
    CHECK(info->waiting.empty());
}

void checkEmpty(const LockManager& mgr) {
    checkInvariants(mgr);
    CHECK(mgr.dump().empty());
}

// lockBegin that must succeed, returning its result.
LockResult begin(Locker& l, ResourceId id, LockMode mode) {
    auto r = l.lockBegin(id, mode, id == kColl ? "db.c" : "");
    REQUIRE(r.ok());
    return r.value();
}

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
        for (int i = 0; i < 3; ++i) REQUIRE(a.lock(kColl, LockMode::kIS).ok());
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
            if (e.locker == a.id()) sawIX = e.mode == LockMode::kIX;
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
            if (e.locker == a.id()) converting = e.convertMode == LockMode::kX;
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
        for (const auto& e : info->granted) CHECK(e.convertMode == LockMode::kNone);
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

TEST_CASE("global: a granted S admits compatible newcomers first (compatibleFirst)") {
    LockManager mgr;
    {
        Locker a(mgr), b(mgr), c(mgr), d(mgr), e(mgr), f(mgr);
        REQUIRE(a.lockGlobal(LockMode::kIS).ok());
        CHECK(beginGlobal(b, LockMode::kX) == LockResult::kWaiting);
        CHECK(beginGlobal(c, LockMode::kS) == LockResult::kWaiting);
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
        SUBCASE("Deadline::now()") { deadline = Deadline::now(); }
        SUBCASE("Deadline::in(20ms)") { deadline = Deadline::in(20ms); }

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
        SUBCASE("Deadline::now()") { deadline = Deadline::now(); }
        SUBCASE("Deadline::in(20ms)") { deadline = Deadline::in(20ms); }

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
        for (const auto& e : info->granted) CHECK(e.convertMode == LockMode::kNone);
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
        for (const auto& e : info->granted) partitioned += e.partitioned ? 1 : 0;
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
        for (const auto& e : info->granted) CHECK_FALSE(e.partitioned);
        checkInvariants(mgr);
        // With S granted, IX can no longer take the fast path.
        CHECK(begin(ix, kColl, LockMode::kIX) == LockResult::kWaiting);
        CHECK(s.unlock(kColl).ok());
        CHECK(ix.pendingGranted());
        CHECK(ix.lockComplete(Deadline::now()).ok());
        checkInvariants(mgr);
        CHECK(ix.unlock(kColl).ok());
        for (auto& h : holders) CHECK(h->unlock(kColl).ok());
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
