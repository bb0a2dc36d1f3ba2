// Deadlock detection: the requester whose wait would close a cycle in the
// waits-for graph is refused at once with Deadlock, keeps its other locks,
// and the cycle is recorded in LockManager::recentDeadlocks().
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "lockmgr/lock_manager.h"
#include "lockmgr/locker.h"

using namespace mvkv;
using namespace mvkv::lockmgr;
using namespace std::chrono_literals;

namespace {

#if defined(__SANITIZE_THREAD__)
constexpr bool kUnderTsan = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kUnderTsan = true;
#else
constexpr bool kUnderTsan = false;
#endif
#else
constexpr bool kUnderTsan = false;
#endif

ResourceId coll(const std::string& ns) {
    return ResourceId::collection(ns);
}

// Global IX, Database "db" IX, then X on `r`, all without waiting.
void holdX(Locker& l, ResourceId r, const std::string& name) {
    REQUIRE(l.lockGlobal(LockMode::kIX, Deadline::now()).ok());
    REQUIRE(l.lock(ResourceId::database("db"), LockMode::kIX, Deadline::now(), "db").ok());
    REQUIRE(l.lock(r, LockMode::kX, Deadline::now(), name).ok());
}

bool hasEdge(const DeadlockRecord& rec, LockerId locker, ResourceId r, LockMode mode) {
    return std::any_of(rec.cycle.begin(), rec.cycle.end(), [&](const DeadlockEdge& e) {
        return e.locker == locker && e.resource == r && e.mode == mode;
    });
}

uint64_t deadlockCount(const LockStats& s, ResourceType t, LockMode m) {
    return s.get(t, m, LockStatKind::kDeadlockCount);
}

}  // namespace

TEST_CASE("deadlock: two lockers, the one closing the cycle is refused") {
    LockManager mgr;
    const ResourceId r1 = coll("db.r1"), r2 = coll("db.r2");
    Locker a(mgr), b(mgr);
    holdX(a, r1, "db.r1");
    holdX(b, r2, "db.r2");

    auto ra = a.lockBegin(r2, LockMode::kX, "db.r2");
    REQUIRE(ra.ok());
    CHECK(ra.value() == LockResult::kWaiting);
    CHECK_FALSE(a.pendingGranted());
    CHECK(mgr.deadlocksDetected() == 0);
    CHECK(mgr.recentDeadlocks().empty());

    auto rb = b.lockBegin(r1, LockMode::kX, "db.r1");
    REQUIRE_FALSE(rb.ok());
    CHECK(rb.status().code() == StatusCode::kDeadlock);
    // The victim keeps what it had, gets nothing new and waits for nothing.
    CHECK(b.getLockMode(r2) == LockMode::kX);
    CHECK(b.getLockMode(r1) == LockMode::kNone);
    CHECK_FALSE(b.describe().waitingFor.has_value());
    CHECK(b.pendingGranted());
    // A still waits.
    CHECK_FALSE(a.pendingGranted());
    CHECK(a.getLockMode(r2) == LockMode::kNone);
    REQUIRE(a.describe().waitingFor.has_value());
    CHECK(a.describe().waitingFor->resource == r2);

    CHECK(mgr.deadlocksDetected() == 1);
    auto recs = mgr.recentDeadlocks();
    REQUIRE(recs.size() == 1);
    const DeadlockRecord& rec = recs[0];
    CHECK(rec.victim == b.id());
    REQUIRE(rec.cycle.size() == 2);
    CHECK(rec.cycle[0].locker == b.id());  // starts with the victim's wait
    CHECK(rec.cycle[0].resource == r1);
    CHECK(rec.cycle[0].resourceName == "db.r1");
    CHECK(hasEdge(rec, b.id(), r1, LockMode::kX));
    CHECK(hasEdge(rec, a.id(), r2, LockMode::kX));
    CHECK(rec.toString().find("db.r2") != std::string::npos);

    // Stats: the victim's deadlockCount, per locker and engine-wide.
    CHECK(deadlockCount(b.stats(), ResourceType::kCollection, LockMode::kX) == 1);
    CHECK(deadlockCount(a.stats(), ResourceType::kCollection, LockMode::kX) == 0);
    CHECK(deadlockCount(mgr.stats().snapshot(), ResourceType::kCollection, LockMode::kX) == 1);
    auto bj = nlohmann::json::parse(b.stats().toJson());
    CHECK(bj["Collection"]["deadlockCount"]["W"] == 1);
    auto ij = nlohmann::json::parse(mgr.stats().snapshot().toJson());
    CHECK(ij["Collection"]["deadlockCount"]["W"] == 1);
    auto ss = nlohmann::json::parse(mgr.serverStatusJson());
    CHECK(ss["deadlocks"]["detected"] == 1);
    REQUIRE(ss["deadlocks"]["recent"].size() == 1);
    CHECK(ss["deadlocks"]["recent"][0]["victim"] == b.id());
    CHECK(mgr.checkInvariants().empty());

    // The victim backs off: A gets r2.
    CHECK(b.unlock(r2).ok());
    CHECK(a.pendingGranted());
    CHECK(a.lockComplete(Deadline::now()).ok());
    CHECK(a.getLockMode(r2) == LockMode::kX);
    CHECK(mgr.deadlocksDetected() == 1);
    CHECK(mgr.checkInvariants().empty());
}

TEST_CASE("deadlock: three lockers A->B->C->A") {
    LockManager mgr;
    const ResourceId r1 = coll("db.r1"), r2 = coll("db.r2"), r3 = coll("db.r3");
    Locker a(mgr), b(mgr), c(mgr);
    holdX(a, r1, "db.r1");
    holdX(b, r2, "db.r2");
    holdX(c, r3, "db.r3");

    auto ra = a.lockBegin(r2, LockMode::kX);  // A waits for B
    REQUIRE(ra.ok());
    CHECK(ra.value() == LockResult::kWaiting);
    auto rb = b.lockBegin(r3, LockMode::kX);  // B waits for C
    REQUIRE(rb.ok());
    CHECK(rb.value() == LockResult::kWaiting);
    CHECK(mgr.deadlocksDetected() == 0);

    auto rc = c.lockBegin(r1, LockMode::kX);  // C would wait for A: cycle
    REQUIRE_FALSE(rc.ok());
    CHECK(rc.status().code() == StatusCode::kDeadlock);
    CHECK(c.getLockMode(r3) == LockMode::kX);
    CHECK(c.getLockMode(r1) == LockMode::kNone);
    CHECK_FALSE(a.pendingGranted());
    CHECK_FALSE(b.pendingGranted());

    CHECK(mgr.deadlocksDetected() == 1);
    auto recs = mgr.recentDeadlocks();
    REQUIRE(recs.size() == 1);
    CHECK(recs[0].victim == c.id());
    REQUIRE(recs[0].cycle.size() == 3);
    CHECK(recs[0].cycle[0].locker == c.id());
    CHECK(hasEdge(recs[0], c.id(), r1, LockMode::kX));
    CHECK(hasEdge(recs[0], a.id(), r2, LockMode::kX));
    CHECK(hasEdge(recs[0], b.id(), r3, LockMode::kX));
    CHECK(deadlockCount(c.stats(), ResourceType::kCollection, LockMode::kX) == 1);
    CHECK(deadlockCount(mgr.stats().snapshot(), ResourceType::kCollection, LockMode::kX) == 1);

    // Unwind: C releases r3 -> B; B releases r2, r3 -> A.
    CHECK(c.unlock(r3).ok());
    CHECK(b.pendingGranted());
    CHECK(b.lockComplete(Deadline::now()).ok());
    CHECK_FALSE(a.pendingGranted());
    CHECK(b.unlock(r3).ok());
    CHECK(b.unlock(r2).ok());
    CHECK(a.pendingGranted());
    CHECK(a.lockComplete(Deadline::now()).ok());
    CHECK(a.getLockMode(r2) == LockMode::kX);
    CHECK(mgr.checkInvariants().empty());
}

TEST_CASE("deadlock: two IS holders both converting to X") {
    LockManager mgr;
    const ResourceId r = coll("db.r");
    Locker a(mgr), b(mgr);
    for (Locker* l : {&a, &b}) {
        REQUIRE(l->lockGlobal(LockMode::kIX, Deadline::now()).ok());
        REQUIRE(l->lock(ResourceId::database("db"), LockMode::kIX, Deadline::now()).ok());
        REQUIRE(l->lock(r, LockMode::kIS, Deadline::now(), "db.r").ok());
    }

    auto ra = a.lockBegin(r, LockMode::kX);
    REQUIRE(ra.ok());
    CHECK(ra.value() == LockResult::kWaiting);
    CHECK(a.getLockMode(r) == LockMode::kIS);  // pending conversion reports the old mode
    CHECK(mgr.deadlocksDetected() == 0);

    auto rb = b.lockBegin(r, LockMode::kX);
    REQUIRE_FALSE(rb.ok());
    CHECK(rb.status().code() == StatusCode::kDeadlock);
    CHECK(b.getLockMode(r) == LockMode::kIS);  // still holds IS
    CHECK_FALSE(a.pendingGranted());
    CHECK(mgr.checkInvariants().empty());

    CHECK(mgr.deadlocksDetected() == 1);
    auto recs = mgr.recentDeadlocks();
    REQUIRE(recs.size() == 1);
    CHECK(recs[0].victim == b.id());
    REQUIRE(recs[0].cycle.size() == 2);
    CHECK(recs[0].cycle[0].locker == b.id());
    CHECK(hasEdge(recs[0], b.id(), r, LockMode::kX));
    CHECK(hasEdge(recs[0], a.id(), r, LockMode::kX));
    CHECK(deadlockCount(b.stats(), ResourceType::kCollection, LockMode::kX) == 1);

    // B drops its IS: A's conversion goes through.
    CHECK(b.unlock(r).ok());
    CHECK(b.getLockMode(r) == LockMode::kNone);
    CHECK(a.pendingGranted());
    CHECK(a.lockComplete(Deadline::now()).ok());
    CHECK(a.getLockMode(r) == LockMode::kX);
    // Two lock() calls (IS, then the conversion) need two unlocks.
    CHECK(a.unlock(r).ok());
    CHECK(a.unlock(r).ok());
    CHECK(a.getLockMode(r) == LockMode::kNone);
    CHECK(mgr.checkInvariants().empty());
}

TEST_CASE("deadlock: a locker merely waiting on a cycle member is no victim") {
    LockManager mgr;
    const ResourceId r1 = coll("db.r1"), r2 = coll("db.r2");
    Locker a(mgr), b(mgr), d(mgr);
    holdX(a, r1, "db.r1");
    holdX(b, r2, "db.r2");
    REQUIRE(d.lockGlobal(LockMode::kIX, Deadline::now()).ok());
    REQUIRE(d.lock(ResourceId::database("db"), LockMode::kIX, Deadline::now()).ok());

    auto ra = a.lockBegin(r2, LockMode::kX);  // A waits for B
    REQUIRE(ra.ok());
    CHECK(ra.value() == LockResult::kWaiting);
    auto rd = d.lockBegin(r1, LockMode::kX);  // D waits for A: a chain, no cycle
    REQUIRE(rd.ok());
    CHECK(rd.value() == LockResult::kWaiting);
    CHECK(mgr.deadlocksDetected() == 0);
    CHECK(mgr.recentDeadlocks().empty());
    CHECK(deadlockCount(d.stats(), ResourceType::kCollection, LockMode::kX) == 0);

    // B closes the cycle B->A->B (D is queued on r1 too): B is the victim, D not.
    auto rb = b.lockBegin(r1, LockMode::kX);
    REQUIRE_FALSE(rb.ok());
    CHECK(rb.status().code() == StatusCode::kDeadlock);
    CHECK(mgr.deadlocksDetected() == 1);
    auto recs = mgr.recentDeadlocks();
    REQUIRE(recs.size() == 1);
    CHECK(recs[0].victim == b.id());
    CHECK(hasEdge(recs[0], b.id(), r1, LockMode::kX));
    CHECK(hasEdge(recs[0], a.id(), r2, LockMode::kX));
    CHECK(std::none_of(recs[0].cycle.begin(), recs[0].cycle.end(),
                       [&](const DeadlockEdge& e) { return e.locker == d.id(); }));
    CHECK_FALSE(d.pendingGranted());
    CHECK_FALSE(a.pendingGranted());

    // Unwind: B -> A granted; A releases r1 -> D granted.
    CHECK(b.unlock(r2).ok());
    CHECK(a.lockComplete(Deadline::now()).ok());
    CHECK_FALSE(d.pendingGranted());
    CHECK(a.unlock(r1).ok());
    CHECK(d.pendingGranted());
    CHECK(d.lockComplete(Deadline::now()).ok());
    CHECK(d.getLockMode(r1) == LockMode::kX);
    CHECK(mgr.deadlocksDetected() == 1);
    CHECK(mgr.checkInvariants().empty());
}

TEST_CASE("deadlock: the ring keeps the most recent records") {
    LockManagerOptions opts;
    opts.deadlockRingSize = 2;
    LockManager mgr(opts);
    const ResourceId r1 = coll("db.r1"), r2 = coll("db.r2");
    std::vector<LockerId> victims;
    for (int i = 0; i < 3; ++i) {
        Locker a(mgr), b(mgr);
        holdX(a, r1, "db.r1");
        holdX(b, r2, "db.r2");
        auto ra = a.lockBegin(r2, LockMode::kX);
        REQUIRE(ra.ok());
        auto rb = b.lockBegin(r1, LockMode::kX);
        REQUIRE_FALSE(rb.ok());
        CHECK(rb.status().code() == StatusCode::kDeadlock);
        victims.push_back(b.id());
        // Destroying A (still waiting) and B must leave the table clean.
    }
    CHECK(mgr.dump().empty());
    CHECK(mgr.deadlocksDetected() == 3);
    auto recs = mgr.recentDeadlocks();
    REQUIRE(recs.size() == 2);
    CHECK(recs[0].victim == victims[1]);
    CHECK(recs[1].victim == victims[2]);
}

TEST_CASE("deadlock: two threads, exactly one victim, the other proceeds") {
    // Repeated so the two requests often race each other into the detector.
    // The same two threads serve every round (thread start-up is slow under
    // sanitizers); each round has a fresh LockManager and lockers.
    const int kRounds = kUnderTsan ? 500 : 2000;
    struct Round {
        LockManager mgr;
        const ResourceId res[2] = {coll("db.r0"), coll("db.r1")};
        Locker lockers[2] = {Locker(mgr), Locker(mgr)};
        std::atomic<int> holding{0};
        Status results[2];
    };
    std::unique_ptr<Round> round;  // written by main between barriers only
    std::barrier sync(3);
    std::atomic<bool> quit{false};

    auto body = [&](int me) {
        for (;;) {
            sync.arrive_and_wait();  // round set up
            if (quit.load())
                return;
            Round& rd = *round;
            Locker& l = rd.lockers[me];
            Status s = l.lockGlobal(LockMode::kIX);
            if (s.ok())
                s = l.lock(ResourceId::database("db"), LockMode::kIX);
            if (s.ok())
                s = l.lock(rd.res[me], LockMode::kX);
            rd.holding.fetch_add(1);
            if (s.ok()) {
                // Spin (then yield) so both requests start close together.
                // (Spinning is bounded to 500 us, then it yields.)
                auto spinUntil = std::chrono::steady_clock::now() + 500us;
                for (unsigned spins = 1; rd.holding.load() < 2; ++spins) {
                    if (spins % 256 == 0 && std::chrono::steady_clock::now() > spinUntil) {
                        std::this_thread::yield();
                    }
                }
                s = l.lock(rd.res[1 - me], LockMode::kX, Deadline::never());
                if (s.ok())
                    l.unlock(rd.res[1 - me]).ignore();
                // The victim (or the winner, once done) releases its own resource.
                l.unlock(rd.res[me]).ignore();
                l.unlock(ResourceId::database("db")).ignore();
                l.unlockGlobal().ignore();
            }
            rd.results[me] = s;
            sync.arrive_and_wait();  // round done
        }
    };

    // Watchdog: turns a hang (nobody refused) into a failure instead of a
    // stuck test by interrupting the lockers of a round that makes no
    // progress for 10 s. Not a timing assertion, only a backstop.
    std::mutex wm;
    std::condition_variable wcv;
    bool stop = false;
    int progress = 0;
    Round* current = nullptr;
    std::thread watchdog([&] {
        std::unique_lock<std::mutex> lk(wm);
        while (!stop) {
            int seen = progress;
            if (!wcv.wait_for(lk, 10s, [&] { return stop || progress != seen; }) &&
                current != nullptr) {
                current->lockers[0].interrupt();
                current->lockers[1].interrupt();
            }
        }
    });

    std::thread t0(body, 0), t1(body, 1);
    int doubleVictims = 0, noVictim = 0, otherErrors = 0, countMismatch = 0;
    std::string firstBad;
    for (int r = 0; r < kRounds; ++r) {
        round = std::make_unique<Round>();
        {
            std::lock_guard<std::mutex> g(wm);
            current = round.get();
        }
        sync.arrive_and_wait();  // start
        sync.arrive_and_wait();  // wait for both
        {
            std::lock_guard<std::mutex> g(wm);
            current = nullptr;
            ++progress;
        }
        wcv.notify_all();

        Round& rd = *round;
        int victims = 0, oks = 0;
        for (const Status& s : rd.results) {
            if (s.code() == StatusCode::kDeadlock)
                ++victims;
            else if (s.ok())
                ++oks;
            else
                ++otherErrors;
        }
        bool bad = oks + victims != 2;
        if (victims == 2)
            ++doubleVictims, bad = true;
        if (victims == 0)
            ++noVictim, bad = true;
        // A deadlock is counted (and recorded) only for a request refused.
        if (rd.mgr.deadlocksDetected() != uint64_t(victims) ||
            rd.mgr.recentDeadlocks().size() != size_t(victims)) {
            ++countMismatch, bad = true;
        }
        if (bad && firstBad.empty()) {
            firstBad = "round " + std::to_string(r) + ": detected " +
                       std::to_string(rd.mgr.deadlocksDetected()) + "; " +
                       rd.results[0].toString() + " / " + rd.results[1].toString();
        }
        CHECK(rd.mgr.dump().empty());
        CHECK(rd.mgr.checkInvariants().empty());
    }
    quit.store(true);
    sync.arrive_and_wait();
    t0.join();
    t1.join();
    {
        std::lock_guard<std::mutex> g(wm);
        stop = true;
    }
    wcv.notify_all();
    watchdog.join();

    INFO("rounds ", kRounds, ": double victims ", doubleVictims, ", no victim ", noVictim,
         ", counted-but-not-refused ", countMismatch, "; first bad ", firstBad);
    CHECK(doubleVictims == 0);
    CHECK(noVictim == 0);
    CHECK(countMismatch == 0);
    CHECK(otherErrors == 0);
}
