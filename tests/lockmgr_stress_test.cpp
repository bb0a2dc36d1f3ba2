// Concurrency stress: 8 threads take random mixed Global/Database/Collection
// locks in hierarchy order (AutoGetCollection, DBLock, GlobalLock, recursive
// re-locks, IS->IX conversions, write units of work), every wait bounded by a
// deadline. Mutual exclusion is checked with per-resource holder counters
// (incremented after a grant, decremented before a release); a checker
// thread runs LockManager::checkInvariants() meanwhile. At the end the lock
// table is empty and every ticket is back.
//
// MVKV_STRESS_ITERS overrides the operations per thread (per ticket policy:
// the test runs once with semaphore and once with FIFO tickets); MVKV_STRESS_SEED
// replays a run (the seed is printed).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "lockmgr/lock_manager.h"
#include "lockmgr/locker.h"
#include "lockmgr/raii_locks.h"

using namespace mvkv;
using namespace mvkv::lockmgr;
using namespace std::chrono_literals;

namespace {

// Sanitized builds run fewer operations by default (TSan is 5-15x slower,
// ASan 2-5x) so a run stays around two seconds there too.
#if defined(__SANITIZE_THREAD__)
constexpr int kDefaultIters = 500;
#elif defined(__SANITIZE_ADDRESS__)
constexpr int kDefaultIters = 1000;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr int kDefaultIters = 500;
#elif __has_feature(address_sanitizer)
constexpr int kDefaultIters = 1000;
#else
constexpr int kDefaultIters = 3000;
#endif
#else
constexpr int kDefaultIters = 3000;
#endif

constexpr int kThreads = 8;
constexpr int kDbs = 3;
constexpr int kColls = 3;
constexpr int kResources = 1 + kDbs + kDbs * kColls;

int envInt(const char* name, int fallback) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0')
        return fallback;
    return std::atoi(v);
}

uint64_t envSeed() {
    const char* v = std::getenv("MVKV_STRESS_SEED");
    if (v != nullptr && *v != '\0')
        return std::strtoull(v, nullptr, 10);
    return (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
}

std::string dbName(int d) {
    return "db" + std::to_string(d);
}
std::string nsName(int d, int c) {
    return dbName(d) + ".c" + std::to_string(c);
}
int dbIndex(int d) {
    return 1 + d;
}
int collIndex(int d, int c) {
    return 1 + kDbs + d * kColls + c;
}

struct Shared {
    std::array<ResourceId, kResources> ids;
    std::array<std::array<std::atomic<int>, kLockModeCount>, kResources> holders{};

    std::atomic<uint64_t> violations{0};
    std::atomic<uint64_t> oks{0}, timeouts{0}, deadlocks{0}, unexpected{0};
    std::mutex msgMutex;
    std::string firstViolation, firstUnexpected, firstInvariant;
    std::atomic<uint64_t> invariantFailures{0};

    Shared() {
        ids[0] = ResourceId::global();
        for (int d = 0; d < kDbs; ++d) {
            ids[size_t(dbIndex(d))] = ResourceId::database(dbName(d));
            for (int c = 0; c < kColls; ++c) {
                ids[size_t(collIndex(d, c))] = ResourceId::collection(nsName(d, c));
            }
        }
    }

    void note(std::string& slot, const std::string& msg) {
        std::lock_guard<std::mutex> g(msgMutex);
        if (slot.empty())
            slot = msg;
    }

    // Counts an outcome; returns true when the lock was granted.
    bool outcome(const Status& s) {
        switch (s.code()) {
            case StatusCode::kOk:
                oks.fetch_add(1, std::memory_order_relaxed);
                return true;
            case StatusCode::kLockTimeout:
                timeouts.fetch_add(1, std::memory_order_relaxed);
                break;
            case StatusCode::kDeadlock:
                deadlocks.fetch_add(1, std::memory_order_relaxed);
                break;
            default:
                unexpected.fetch_add(1, std::memory_order_relaxed);
                note(firstUnexpected, s.toString());
                break;
        }
        return false;
    }
};

// What one operation's Locker holds, as seen by the holder counters.
class Tracker {
  public:
    Tracker(Shared& sh, const Locker& l) : sh_(sh), l_(l) {}
    ~Tracker() { dropAll(); }

    // After a grant: count modes newly held (conversions move the count).
    void sync() {
        for (int i = 0; i < kResources; ++i) {
            LockMode m = l_.getLockMode(sh_.ids[size_t(i)]);
            if (m == mine_[size_t(i)])
                continue;
            if (mine_[size_t(i)] != LockMode::kNone)
                counter(i, mine_[size_t(i)]).fetch_sub(1);
            mine_[size_t(i)] = m;
            if (m != LockMode::kNone) {
                counter(i, m).fetch_add(1);
                verify(i, m);
            }
        }
    }
    // While holding: nobody else may hold a conflicting mode.
    void verifyAll() {
        for (int i = 0; i < kResources; ++i) {
            if (mine_[size_t(i)] != LockMode::kNone)
                verify(i, mine_[size_t(i)]);
        }
    }
    // Before any release.
    void dropAll() {
        for (int i = 0; i < kResources; ++i) {
            if (mine_[size_t(i)] != LockMode::kNone)
                counter(i, mine_[size_t(i)]).fetch_sub(1);
            mine_[size_t(i)] = LockMode::kNone;
        }
    }

  private:
    std::atomic<int>& counter(int i, LockMode m) {
        return sh_.holders[size_t(i)][size_t(modeIndex(m))];
    }
    void verify(int i, LockMode m) {
        for (int c = 1; c < kLockModeCount; ++c) {
            auto other = LockMode(c);
            if (!conflicts(m, modeMask(other)))
                continue;
            int n = counter(i, other).load();
            if (other == m)
                n -= 1;  // ourselves
            if (n != 0) {
                sh_.violations.fetch_add(1);
                sh_.note(sh_.firstViolation,
                         sh_.ids[size_t(i)].toString() + ": locker " + std::to_string(l_.id()) +
                             " holds " + std::string(modeName(m)) + " while " + std::to_string(n) +
                             " other(s) hold " + std::string(modeName(other)));
            }
        }
    }

    Shared& sh_;
    const Locker& l_;
    std::array<LockMode, kResources> mine_{};
};

class Worker {
  public:
    Worker(LockManager& mgr, Shared& sh, uint64_t seed) : mgr_(mgr), sh_(sh), rng_(seed) {}

    void run(int iterations) {
        for (int i = 0; i < iterations; ++i)
            oneOperation();
    }

  private:
    int pick(int n) { return int(rng_() % uint64_t(n)); }
    Deadline deadline() { return Deadline::in(std::chrono::microseconds(50 + pick(1500))); }
    LockMode anyMode() {
        int r = pick(100);
        if (r < 35)
            return LockMode::kIS;
        if (r < 70)
            return LockMode::kIX;
        if (r < 85)
            return LockMode::kS;
        return LockMode::kX;
    }
    void hold(Tracker& tr) {
        for (int y = pick(3); y > 0; --y)
            std::this_thread::yield();
        tr.verifyAll();
    }

    void oneOperation() {
        Locker l(mgr_);
        Tracker tr(sh_, l);
        int r = pick(100);
        if (r < 55) {
            collectionAccess(l, tr);
        } else if (r < 75) {
            databaseAccess(l, tr);
        } else if (r < 92) {
            unitOfWork(l, tr);
        } else if (r < 98) {
            twoStep(l, tr);
        } else {
            GlobalLock g(l, pick(2) ? LockMode::kS : LockMode::kX, deadline());
            if (sh_.outcome(g.status())) {
                tr.sync();
                hold(tr);
            }
            tr.dropAll();
        }
        tr.dropAll();
    }

    void collectionAccess(Locker& l, Tracker& tr) {
        int d = pick(kDbs), c = pick(kColls);
        LockMode mode = anyMode();
        std::optional<AutoGetCollection> a;
        a.emplace(l, nsName(d, c), mode, deadline());
        if (!sh_.outcome(a->status()))
            return;
        tr.sync();
        hold(tr);
        int sub = pick(10);
        if (sub < 3) {
            // Recursive re-lock of the same collection in the same mode.
            std::optional<AutoGetCollection> again;
            again.emplace(l, nsName(d, c), mode, deadline());
            if (sh_.outcome(again->status())) {
                tr.sync();
                hold(tr);
            }
            tr.dropAll();
            again.reset();
            tr.sync();
        } else if (sub < 5 && mode == LockMode::kIS) {
            // Conversions IS -> IX down the hierarchy.
            std::vector<ResourceId> converted;
            for (ResourceId id :
                 {sh_.ids[0], sh_.ids[size_t(dbIndex(d))], sh_.ids[size_t(collIndex(d, c))]}) {
                if (!sh_.outcome(l.lock(id, LockMode::kIX, deadline())))
                    break;
                converted.push_back(id);
                tr.sync();
            }
            hold(tr);
            tr.dropAll();
            for (auto it = converted.rbegin(); it != converted.rend(); ++it) {
                Status s = l.unlock(*it);
                if (!s.ok())
                    sh_.outcome(s);
            }
            tr.sync();
        } else if (sub < 8) {
            // A second collection of the same database (may deadlock), or the
            // same one again: a recursive lock or a conversion (IS->S, IS->X,
            // IX->X, S->X; never S<->IX, which has no SIX mode to go to).
            int c2 = pick(kColls);
            LockMode m2 = anyMode();
            if (c2 == c && ((mode == LockMode::kS && m2 == LockMode::kIX) ||
                            (mode == LockMode::kIX && m2 == LockMode::kS))) {
                m2 = LockMode::kX;
            }
            std::optional<AutoGetCollection> second;
            second.emplace(l, nsName(d, c2), m2, deadline());
            if (sh_.outcome(second->status())) {
                tr.sync();
                hold(tr);
            }
            tr.dropAll();
            second.reset();
            tr.sync();
        }
        hold(tr);
        tr.dropAll();
    }

    void databaseAccess(Locker& l, Tracker& tr) {
        int d = pick(kDbs);
        LockMode mode = pick(2) ? LockMode::kS : LockMode::kX;
        DBLock db(l, dbName(d), mode, deadline());
        if (!sh_.outcome(db.status()))
            return;
        tr.sync();
        hold(tr);
        if (pick(2)) {
            // Under DB S only shared collection modes are possible (no SIX).
            LockMode cm =
                mode == LockMode::kS ? (pick(2) ? LockMode::kIS : LockMode::kS) : anyMode();
            std::optional<AutoGetCollection> a;
            a.emplace(l, nsName(d, pick(kColls)), cm, deadline());
            if (sh_.outcome(a->status())) {
                tr.sync();
                hold(tr);
            }
            tr.dropAll();
            a.reset();
            tr.sync();
        }
        tr.dropAll();
    }

    void unitOfWork(Locker& l, Tracker& tr) {
        l.beginWriteUnitOfWork();
        int n = 1 + pick(3);
        for (int k = 0; k < n; ++k) {
            LockMode mode = pick(4) == 0 ? LockMode::kIS : (pick(3) ? LockMode::kIX : LockMode::kX);
            std::optional<AutoGetCollection> a;
            a.emplace(l, nsName(pick(kDbs), pick(kColls)), mode, deadline());
            bool ok = sh_.outcome(a->status());
            if (ok) {
                tr.sync();
                hold(tr);
            }
            tr.dropAll();
            a.reset();  // IX/X stay held until the end of the unit of work
            tr.sync();
            if (!ok)
                break;
        }
        hold(tr);
        tr.dropAll();
        Status s = l.endWriteUnitOfWork();
        if (!s.ok())
            sh_.outcome(s);
        if (l.isLocked()) {
            sh_.unexpected.fetch_add(1);
            sh_.note(sh_.firstUnexpected,
                     "locks left after endWriteUnitOfWork: " + l.describe().toString());
        }
    }

    // lockBegin / lockComplete with a deadline, on one collection.
    void twoStep(Locker& l, Tracker& tr) {
        int d = pick(kDbs), c = pick(kColls);
        LockMode mode = pick(2) ? LockMode::kS : LockMode::kX;
        DBLock db(l, dbName(d), intentModeFor(mode), deadline());
        if (!sh_.outcome(db.status()))
            return;
        tr.sync();
        ResourceId id = sh_.ids[size_t(collIndex(d, c))];
        auto begun = l.lockBegin(id, mode, nsName(d, c));
        bool ok = false;
        if (!begun.ok()) {
            sh_.outcome(begun.status());
        } else if (begun.value() == LockResult::kOk) {
            ok = sh_.outcome(Status::OK());
        } else {
            ok = sh_.outcome(l.lockComplete(deadline()));
        }
        if (ok) {
            tr.sync();
            hold(tr);
            tr.dropAll();
            Status s = l.unlock(id);
            if (!s.ok())
                sh_.outcome(s);
            tr.sync();
        }
        tr.dropAll();
    }

    LockManager& mgr_;
    Shared& sh_;
    std::mt19937_64 rng_;
};

}  // namespace

TEST_CASE("stress: random hierarchical locking keeps exclusion and invariants") {
    LockManagerOptions opts;
    // Fewer tickets than threads, so ticket waits and ticket timeouts happen.
    opts.readTickets = 5;
    opts.writeTickets = 3;
    SUBCASE("semaphore tickets") {
        opts.ticketPolicy = TicketPolicy::kSemaphore;
    }
    SUBCASE("fifo tickets") {
        opts.ticketPolicy = TicketPolicy::kFifo;
    }

    // Per thread and per ticket policy.
    const int iterations = std::max(1, envInt("MVKV_STRESS_ITERS", kDefaultIters));
    const uint64_t seed = envSeed();
    MESSAGE("stress seed ", seed, " (MVKV_STRESS_SEED to replay), ", iterations,
            " operations per thread, tickets ", ticketPolicyName(opts.ticketPolicy));
    INFO("seed ", seed);

    LockManager mgr(opts);
    Shared sh;

    std::atomic<bool> done{false};
    std::atomic<uint64_t> checks{0};
    std::thread checker([&] {
        do {
            std::string err = mgr.checkInvariants();
            if (!err.empty()) {
                sh.invariantFailures.fetch_add(1);
                sh.note(sh.firstInvariant, err);
            }
            if (checks.fetch_add(1) % 8 == 0)
                (void)mgr.dump();
            std::this_thread::sleep_for(1ms);
        } while (!done.load());
    });

    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            Worker w(mgr, sh, seed + uint64_t(t) * 0x9E3779B97F4A7C15ull);
            w.run(iterations);
        });
    }
    for (auto& t : threads)
        t.join();
    done.store(true);
    checker.join();

    MESSAGE("granted ", sh.oks.load(), ", timeouts ", sh.timeouts.load(), ", deadlocks ",
            sh.deadlocks.load(), " (detected ", mgr.deadlocksDetected(), "), invariant checks ",
            checks.load());
    INFO("first violation: ", sh.firstViolation);
    INFO("first unexpected status: ", sh.firstUnexpected);
    INFO("first invariant failure: ", sh.firstInvariant);
    CHECK(sh.violations.load() == 0);
    CHECK(sh.unexpected.load() == 0);
    CHECK(sh.invariantFailures.load() == 0);
    CHECK(sh.oks.load() > 0);
    for (int i = 0; i < kResources; ++i) {
        for (int m = 0; m < kLockModeCount; ++m)
            CHECK(sh.holders[size_t(i)][size_t(m)].load() == 0);
    }

    CHECK(mgr.checkInvariants().empty());
    auto left = mgr.dump();
    CHECK(left.empty());
    for (const LockHeadInfo& info : left) {
        MESSAGE("left in the table: ", info.name, " granted ", info.granted.size(), " waiting ",
                info.waiting.size());
    }
    TicketStats rs = mgr.tickets().read().stats(), ws = mgr.tickets().write().stats();
    CHECK(rs.out == 0);
    CHECK(ws.out == 0);
    CHECK(rs.queued == 0);
    CHECK(ws.queued == 0);
    CHECK(mgr.queuedReaders() == 0);
    CHECK(mgr.queuedWriters() == 0);
    CHECK(mgr.lockHeadCount() > 0);  // heads stay for the manager's life, empty
}
