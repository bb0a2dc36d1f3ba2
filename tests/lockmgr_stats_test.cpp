// Lock statistics in MongoDB's serverStatus shape: per locker
// (Locker::stats()), engine-wide (LockManager::stats().snapshot()) and as
// JSON (LockStats::toJson(), LockManager::serverStatusJson()).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "lockmgr/lock_manager.h"
#include "lockmgr/locker.h"
#include "lockmgr/raii_locks.h"
#include "lockmgr_test_util.h"

using namespace mvkv;
using namespace mvkv::lockmgr;
using namespace std::chrono_literals;
using mvkv::lockmgr::testing::eventually;
using json = nlohmann::json;

namespace {

bool someoneWaitsOn(const LockManager& mgr, ResourceId id) {
    for (const LockHeadInfo& info : mgr.dump()) {
        if (info.resource == id && !info.waiting.empty())
            return true;
    }
    return false;
}

uint64_t get(const LockStats& s, ResourceType t, LockMode m, LockStatKind k) {
    return s.get(t, m, k);
}

// Checks the "locks" document of one IS access to one collection.
void checkOneReadAccess(const json& j) {
    CAPTURE(j.dump());
    for (const char* type : {"Global", "Database", "Collection"}) {
        CAPTURE(type);
        REQUIRE(j.contains(type));
        CHECK(j[type]["acquireCount"] == json{{"r", 1}});
        // Zero counters are left out.
        CHECK_FALSE(j[type].contains("acquireWaitCount"));
        CHECK_FALSE(j[type].contains("timeAcquiringMicros"));
        CHECK_FALSE(j[type].contains("deadlockCount"));
    }
    CHECK_FALSE(j.contains("Metadata"));
    CHECK_FALSE(j.contains("Mutex"));
    CHECK(j.size() == 3);
}

}  // namespace

TEST_CASE("stats: an uncontended read counts one acquire per level") {
    LockManager mgr;
    Locker l(mgr);
    {
        AutoGetCollection agc(l, "db.c", LockMode::kIS);
        REQUIRE(agc.status().ok());

        auto ss = json::parse(mgr.serverStatusJson());
        CHECK(ss["tickets"]["read"]["out"] == 1);
        CHECK(ss["tickets"]["read"]["available"] == TicketHolder::kDefaultTickets - 1);
        CHECK(ss["tickets"]["read"]["totalTickets"] == TicketHolder::kDefaultTickets);
        CHECK(ss["tickets"]["write"]["out"] == 0);
        CHECK(ss["tickets"]["write"]["available"] == TicketHolder::kDefaultTickets);
        CHECK(ss["tickets"]["write"]["totalTickets"] == TicketHolder::kDefaultTickets);
    }
    const LockStats& mine = l.stats();
    for (ResourceType t :
         {ResourceType::kGlobal, ResourceType::kDatabase, ResourceType::kCollection}) {
        CAPTURE(resourceTypeName(t));
        CHECK(get(mine, t, LockMode::kIS, LockStatKind::kAcquireCount) == 1);
        CHECK(get(mine, t, LockMode::kIS, LockStatKind::kAcquireWaitCount) == 0);
        CHECK(get(mine, t, LockMode::kIX, LockStatKind::kAcquireCount) == 0);
        CHECK(get(mine, t, LockMode::kS, LockStatKind::kAcquireCount) == 0);
        CHECK(get(mine, t, LockMode::kX, LockStatKind::kAcquireCount) == 0);
    }
    checkOneReadAccess(json::parse(mine.toJson()));
    LockStats all = mgr.stats().snapshot();
    CHECK(get(all, ResourceType::kCollection, LockMode::kIS, LockStatKind::kAcquireCount) == 1);
    checkOneReadAccess(json::parse(all.toJson()));

    auto ss = json::parse(mgr.serverStatusJson());
    checkOneReadAccess(ss["locks"]);
    CHECK(ss["globalLock"]["currentQueue"]["total"] == 0);
    CHECK(ss["globalLock"]["currentQueue"]["readers"] == 0);
    CHECK(ss["globalLock"]["currentQueue"]["writers"] == 0);
    CHECK(ss["tickets"]["read"]["out"] == 0);
    CHECK(ss["tickets"]["read"]["available"] == TicketHolder::kDefaultTickets);
    CHECK(ss["deadlocks"]["detected"] == 0);
}

TEST_CASE("stats: JSON letters r/w/R/W and recursive acquisitions") {
    LockManager mgr;
    Locker l(mgr);
    CHECK(l.lockGlobal(LockMode::kIX).ok());
    CHECK(l.lockGlobal(LockMode::kIX).ok());  // recursive: counted too
    CHECK(l.lock(ResourceId::database("db"), LockMode::kX, Deadline::now(), "db").ok());
    CHECK(l.lock(ResourceId::collection("db.a"), LockMode::kIS, Deadline::now()).ok());
    CHECK(l.lock(ResourceId::collection("db.b"), LockMode::kS, Deadline::now()).ok());
    CHECK(l.lock(ResourceId::collection("db.a"), LockMode::kX, Deadline::now()).ok());  // IS->X

    json expected = {
        {"Global", {{"acquireCount", {{"w", 2}}}}},
        {"Database", {{"acquireCount", {{"W", 1}}}}},
        {"Collection", {{"acquireCount", {{"r", 1}, {"R", 1}, {"W", 1}}}}},
    };
    CHECK(json::parse(l.stats().toJson()) == expected);
    CHECK(json::parse(mgr.stats().snapshot().toJson()) == expected);
    CHECK(json::parse(mgr.serverStatusJson())["locks"] == expected);
    // Refused calls are not acquisitions: S -> IX has no SIX mode to go to,
    // and an invalid resource is rejected up front.
    CHECK(l.lock(ResourceId::collection("db.b"), LockMode::kIX, Deadline::now()).code() ==
          StatusCode::kInvalidArgument);
    CHECK(l.lock(ResourceId(), LockMode::kIS, Deadline::now()).code() ==
          StatusCode::kInvalidArgument);
    CHECK(json::parse(l.stats().toJson()) == expected);
    CHECK(json::parse(mgr.stats().snapshot().toJson()) == expected);

    // A second locker's counters add up engine-wide, not in l's stats.
    Locker other(mgr);
    CHECK(other.lockGlobal(LockMode::kIS).ok());
    CHECK(json::parse(l.stats().toJson()) == expected);
    auto all = json::parse(mgr.stats().snapshot().toJson());
    CHECK(all["Global"]["acquireCount"]["w"] == 2);
    CHECK(all["Global"]["acquireCount"]["r"] == 1);
    CHECK(other.unlockGlobal().ok());

    CHECK(l.unlock(ResourceId::collection("db.a")).ok());
    CHECK(l.unlock(ResourceId::collection("db.a")).ok());
    CHECK(l.unlock(ResourceId::collection("db.b")).ok());
    CHECK(l.unlock(ResourceId::database("db")).ok());
    CHECK(l.unlockGlobal().ok());
    CHECK(l.unlockGlobal().ok());
    // Releases are not acquisitions.
    CHECK(json::parse(l.stats().toJson()) == expected);
    CHECK(json::parse(LockStats().toJson()) == json::object());
}

TEST_CASE("stats: an operation's counters start from zero at resetOperationStats") {
    LockManager mgr;
    Locker l(mgr);
    // One operation: two IS chains and one IX chain (the fast path, counted
    // in one packed word), then an X on a database (the general path).
    for (LockMode m : {LockMode::kIS, LockMode::kIS, LockMode::kIX}) {
        AutoGetCollection agc(l, "db.c", m);
        REQUIRE(agc.status().ok());
    }
    {
        DBLock db(l, "other", LockMode::kX);
        REQUIRE(db.status().ok());
    }
    json expected = {
        {"Global", {{"acquireCount", {{"r", 2}, {"w", 2}}}}},
        {"Database", {{"acquireCount", {{"r", 2}, {"w", 1}, {"W", 1}}}}},
        {"Collection", {{"acquireCount", {{"r", 2}, {"w", 1}}}}},
    };
    CHECK(json::parse(l.operationStats().toJson()) == expected);
    CHECK(json::parse(l.stats().toJson()) == expected);  // the whole life, so far the same

    // The next operation starts from zero; the whole life keeps counting.
    l.resetOperationStats();
    CHECK(json::parse(l.operationStats().toJson()) == json::object());
    {
        DBLock db(l, "other", LockMode::kX);
        REQUIRE(db.status().ok());
    }
    CHECK(json::parse(l.operationStats().toJson()) ==
          json{{"Global", {{"acquireCount", {{"w", 1}}}}},
               {"Database", {{"acquireCount", {{"W", 1}}}}}});
    CHECK(json::parse(l.stats().toJson())["Database"]["acquireCount"]["W"] == 2);

    // An operation's tag comes round after 65536 operations: the counter
    // written above must not pass for the operation that gets its tag again.
    for (int i = 0; i < 65536; ++i)
        l.resetOperationStats();
    CHECK(json::parse(l.operationStats().toJson()) == json::object());

    // The same for a counter written under tag 0 (the operation right after
    // the counters were cleared): the first 65536 resets above ended on tag
    // 1, so 65535 more bring the tag to 0 (clearing), then write, then
    // 65536 more bring tag 0 round again.
    for (int i = 0; i < 65535; ++i)
        l.resetOperationStats();
    {
        DBLock db(l, "other", LockMode::kX);  // the general path: a tagged counter
        REQUIRE(db.status().ok());
    }
    CHECK(json::parse(l.operationStats().toJson())["Database"]["acquireCount"]["W"] == 1);
    for (int i = 0; i < 65536; ++i)
        l.resetOperationStats();
    CHECK(json::parse(l.operationStats().toJson()) == json::object());
}

TEST_CASE("stats: a write that waits counts acquireWaitCount and time") {
    LockManager mgr;
    const ResourceId c = ResourceId::collection("db.c");
    Locker holder(mgr);
    std::optional<AutoGetCollection> held;
    held.emplace(holder, "db.c", LockMode::kX);
    REQUIRE(held->status().ok());

    Locker waiter(mgr);
    Status result = Status::Internal("not run");
    LockStats waiterStats;
    std::thread t([&] {
        {
            AutoGetCollection agc(waiter, "db.c", LockMode::kX);
            result = agc.status();
        }
        waiterStats = waiter.stats();
    });

    bool waiting = eventually([&] { return someoneWaitsOn(mgr, c) && mgr.queuedWriters() == 1; });
    CHECK(waiting);
    auto ss = json::parse(mgr.serverStatusJson());
    CHECK(ss["globalLock"]["currentQueue"]["writers"] == 1);
    CHECK(ss["globalLock"]["currentQueue"]["readers"] == 0);
    CHECK(ss["globalLock"]["currentQueue"]["total"] == 1);
    CHECK(ss["tickets"]["write"]["out"] == 2);

    held.reset();  // released from this thread, the waiter is another one
    t.join();
    CHECK(result.ok());

    // Per locker.
    CHECK(get(waiterStats, ResourceType::kCollection, LockMode::kX, LockStatKind::kAcquireCount) ==
          1);
    CHECK(get(waiterStats, ResourceType::kCollection, LockMode::kX,
              LockStatKind::kAcquireWaitCount) == 1);
    CHECK(get(waiterStats, ResourceType::kGlobal, LockMode::kIX, LockStatKind::kAcquireWaitCount) ==
          0);
    CHECK(get(waiterStats, ResourceType::kDatabase, LockMode::kIX,
              LockStatKind::kAcquireWaitCount) == 0);
    auto wj = json::parse(waiterStats.toJson());
    CAPTURE(wj.dump());
    CHECK(wj["Collection"]["acquireCount"] == json{{"W", 1}});
    CHECK(wj["Collection"]["acquireWaitCount"] == json{{"W", 1}});
    REQUIRE(wj["Collection"].contains("timeAcquiringMicros"));
    CHECK(wj["Collection"]["timeAcquiringMicros"].contains("W"));
    CHECK(wj["Collection"]["timeAcquiringMicros"].size() == 1);
    CHECK(wj["Global"]["acquireCount"] == json{{"w", 1}});
    CHECK_FALSE(wj["Global"].contains("acquireWaitCount"));
    CHECK_FALSE(wj["Database"].contains("acquireWaitCount"));
    // The holder never waited.
    auto hj = json::parse(holder.stats().toJson());
    CHECK_FALSE(hj["Collection"].contains("acquireWaitCount"));

    // Engine-wide.
    LockStats all = mgr.stats().snapshot();
    CHECK(get(all, ResourceType::kCollection, LockMode::kX, LockStatKind::kAcquireCount) == 2);
    CHECK(get(all, ResourceType::kCollection, LockMode::kX, LockStatKind::kAcquireWaitCount) == 1);
    CHECK(get(all, ResourceType::kCollection, LockMode::kX, LockStatKind::kTimeAcquiringMicros) ==
          get(waiterStats, ResourceType::kCollection, LockMode::kX,
              LockStatKind::kTimeAcquiringMicros));
    CHECK(get(all, ResourceType::kGlobal, LockMode::kIX, LockStatKind::kAcquireCount) == 2);
    ss = json::parse(mgr.serverStatusJson());
    CAPTURE(ss.dump());
    CHECK(ss["locks"]["Collection"]["acquireWaitCount"] == json{{"W", 1}});
    CHECK(ss["locks"]["Collection"]["timeAcquiringMicros"].contains("W"));
    CHECK(ss["locks"]["Collection"]["acquireCount"]["W"] == 2);
    CHECK(ss["globalLock"]["currentQueue"]["writers"] == 0);
    CHECK(ss["globalLock"]["currentQueue"]["total"] == 0);
    CHECK(ss["tickets"]["write"]["out"] == 0);
    CHECK(mgr.dump().empty());
}

TEST_CASE("stats: a waiting reader shows up in currentQueue.readers") {
    LockManager mgr;
    const ResourceId c = ResourceId::collection("db.c");
    Locker holder(mgr);
    std::optional<AutoGetCollection> held;
    held.emplace(holder, "db.c", LockMode::kX);
    REQUIRE(held->status().ok());

    Locker reader(mgr);
    Status result = Status::Internal("not run");
    std::thread t([&] {
        AutoGetCollection agc(reader, "db.c", LockMode::kIS);
        result = agc.status();
    });
    bool waiting = eventually([&] { return someoneWaitsOn(mgr, c) && mgr.queuedReaders() == 1; });
    CHECK(waiting);
    auto ss = json::parse(mgr.serverStatusJson());
    CHECK(ss["globalLock"]["currentQueue"]["readers"] == 1);
    CHECK(ss["globalLock"]["currentQueue"]["writers"] == 0);
    CHECK(ss["globalLock"]["currentQueue"]["total"] == 1);
    CHECK(ss["tickets"]["read"]["out"] == 1);
    CHECK(ss["tickets"]["write"]["out"] == 1);
    held.reset();
    t.join();
    CHECK(result.ok());
    ss = json::parse(mgr.serverStatusJson());
    CHECK(ss["globalLock"]["currentQueue"]["total"] == 0);
    CHECK(ss["locks"]["Collection"]["acquireWaitCount"] == json{{"r", 1}});
}

TEST_CASE("stats: serverStatusJson shape") {
    LockManagerOptions opts;
    opts.readTickets = 5;
    opts.writeTickets = 7;
    LockManager mgr(opts);
    auto ss = json::parse(mgr.serverStatusJson());
    CAPTURE(ss.dump());
    for (const char* k : {"total", "readers", "writers"}) {
        CHECK(ss["globalLock"]["currentQueue"].contains(k));
        CHECK(ss["globalLock"]["currentQueue"][k] == 0);
    }
    CHECK(ss["locks"] == json::object());  // nothing counted yet
    for (const char* k : {"out", "available", "totalTickets"}) {
        CHECK(ss["tickets"]["read"].contains(k));
        CHECK(ss["tickets"]["write"].contains(k));
    }
    CHECK(ss["tickets"]["read"]["totalTickets"] == 5);
    CHECK(ss["tickets"]["read"]["available"] == 5);
    CHECK(ss["tickets"]["write"]["totalTickets"] == 7);
    CHECK(ss["tickets"]["write"]["available"] == 7);
    REQUIRE(ss.contains("deadlocks"));
    CHECK(ss["deadlocks"]["detected"] == 0);
}

TEST_CASE("stats: InstanceLockStats reset") {
    LockManager mgr;
    {
        Locker l(mgr);
        CHECK(l.lockGlobal(LockMode::kIS).ok());
        CHECK(l.unlockGlobal().ok());
    }
    CHECK(json::parse(mgr.stats().snapshot().toJson())["Global"]["acquireCount"]["r"] == 1);
    mgr.stats().reset();
    CHECK(json::parse(mgr.stats().snapshot().toJson()) == json::object());
}
