// Tickets: TicketHolder (both policies) and the tickets a Locker takes in
// front of the Global lock.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "lockmgr/lock_manager.h"
#include "lockmgr/locker.h"
#include "lockmgr/raii_locks.h"
#include "lockmgr/ticket_holder.h"
#include "lockmgr_test_util.h"

using namespace mvkv;
using namespace mvkv::lockmgr;
using namespace std::chrono_literals;
using mvkv::lockmgr::testing::eventually;

namespace {

TicketPolicy pickPolicy() {
    TicketPolicy policy = TicketPolicy::kSemaphore;
    SUBCASE("semaphore") {
        policy = TicketPolicy::kSemaphore;
    }
    SUBCASE("fifo") {
        policy = TicketPolicy::kFifo;
    }
    return policy;
}

const std::atomic<bool> kNotInterrupted{false};

// For waits that must end by a grant: long enough never to expire in a
// passing run, so a lost wake-up fails (LockTimeout) instead of hanging.
Deadline backstop() {
    return Deadline::in(std::chrono::milliseconds(10000));
}

}  // namespace

TEST_CASE("tickets: a second acquire waits until release") {
    TicketPolicy policy = pickPolicy();
    CAPTURE(ticketPolicyName(policy));
    auto h = TicketHolder::make(policy, 1);
    CHECK(h->policy() == policy);
    CHECK(h->acquire(Deadline::now(), kNotInterrupted).ok());
    TicketStats s = h->stats();
    CHECK(s.out == 1);
    CHECK(s.available == 0);
    CHECK(s.total == 1);
    CHECK(s.queued == 0);

    std::atomic<bool> done{false};
    Status result = Status::Internal("not run");
    std::thread t([&] {
        result = h->acquire(backstop(), kNotInterrupted);
        done.store(true);
    });
    bool queued = eventually([&] { return h->stats().queued == 1; });
    CHECK(queued);
    CHECK_FALSE(done.load());
    h->release();
    t.join();
    CHECK(done.load());
    CHECK(result.ok());
    s = h->stats();
    CHECK(s.out == 1);
    CHECK(s.queued == 0);
    h->release();
    s = h->stats();
    CHECK(s.out == 0);
    CHECK(s.available == 1);
}

TEST_CASE("tickets: no ticket before the deadline -> LockTimeout") {
    TicketPolicy policy = pickPolicy();
    CAPTURE(ticketPolicyName(policy));
    auto h = TicketHolder::make(policy, 0);
    Status s = h->acquire(Deadline::in(20ms), kNotInterrupted);
    CHECK(s.code() == StatusCode::kLockTimeout);
    TicketStats st = h->stats();
    CHECK(st.timeouts == 1);
    CHECK(st.queued == 0);
    CHECK(st.out == 0);
    // Deadline::now() with nothing free fails the same way.
    CHECK(h->acquire(Deadline::now(), kNotInterrupted).code() == StatusCode::kLockTimeout);
    CHECK(h->stats().timeouts == 2);
    // An invalid deadline is refused.
    CHECK(h->acquire(Deadline::in(-1ms), kNotInterrupted).code() == StatusCode::kInvalidArgument);
}

TEST_CASE("tickets: tryAcquire") {
    TicketPolicy policy = pickPolicy();
    CAPTURE(ticketPolicyName(policy));
    auto h = TicketHolder::make(policy, 2);
    CHECK(h->tryAcquire());
    CHECK(h->tryAcquire());
    CHECK_FALSE(h->tryAcquire());
    CHECK(h->stats().out == 2);
    CHECK(h->stats().available == 0);
    h->release();
    CHECK(h->tryAcquire());
    h->release();
    h->release();
    CHECK(h->stats().out == 0);
}

TEST_CASE("tickets: resize") {
    TicketPolicy policy = pickPolicy();
    CAPTURE(ticketPolicyName(policy));

    SUBCASE("growing lets a waiter in") {
        auto h = TicketHolder::make(policy, 0);
        Status result = Status::Internal("not run");
        std::thread t([&] { result = h->acquire(backstop(), kNotInterrupted); });
        bool queued = eventually([&] { return h->stats().queued == 1; });
        CHECK(queued);
        CHECK(h->resize(1).ok());
        t.join();
        CHECK(result.ok());
        TicketStats s = h->stats();
        CHECK(s.total == 1);
        CHECK(s.out == 1);
        CHECK(s.available == 0);
        CHECK(s.queued == 0);
        h->release();
    }

    SUBCASE("shrinking takes effect as tickets come back") {
        auto h = TicketHolder::make(policy, 3);
        for (int i = 0; i < 3; ++i)
            CHECK(h->acquire(Deadline::now(), kNotInterrupted).ok());
        CHECK(h->resize(1).ok());
        TicketStats s = h->stats();
        CHECK(s.total == 1);
        CHECK(s.out == 3);
        CHECK(s.available == -2);
        CHECK_FALSE(h->tryAcquire());
        h->release();
        CHECK(h->stats().available == -1);
        CHECK_FALSE(h->tryAcquire());
        h->release();
        CHECK(h->stats().available == 0);
        CHECK(h->stats().out == 1);
        CHECK_FALSE(h->tryAcquire());
        h->release();
        s = h->stats();
        CHECK(s.available == 1);
        CHECK(s.out == 0);
        CHECK(h->tryAcquire());
        CHECK_FALSE(h->tryAcquire());
        h->release();
    }

    SUBCASE("negative totals are refused") {
        auto h = TicketHolder::make(policy, 2);
        CHECK(h->resize(-1).code() == StatusCode::kInvalidArgument);
        CHECK(h->stats().total == 2);
        CHECK(h->stats().available == 2);
        CHECK(h->resize(0).ok());
        CHECK(h->stats().total == 0);
        CHECK_FALSE(h->tryAcquire());
    }
}

TEST_CASE("tickets: FIFO policy grants in arrival order") {
    auto h = TicketHolder::make(TicketPolicy::kFifo, 1);
    CHECK(h->acquire(Deadline::now(), kNotInterrupted).ok());
    std::mutex m;
    std::vector<int> order;
    std::vector<std::thread> threads;
    std::vector<Status> results(3, Status::Internal("not run"));
    for (int i = 0; i < 3; ++i) {
        threads.emplace_back([&, i] {
            results[size_t(i)] = h->acquire(backstop(), kNotInterrupted);
            {
                std::lock_guard<std::mutex> g(m);
                order.push_back(i);
            }
            if (results[size_t(i)].ok())
                h->release();
        });
        // Start the next waiter only once this one is queued.
        bool queued = eventually([&] { return h->stats().queued == i + 1; });
        CHECK(queued);
    }
    // A newcomer cannot jump the queue.
    CHECK_FALSE(h->tryAcquire());
    h->release();
    for (auto& t : threads)
        t.join();
    for (const Status& s : results)
        CHECK(s.ok());
    CHECK(order == std::vector<int>{0, 1, 2});
    TicketStats s = h->stats();
    CHECK(s.out == 0);
    CHECK(s.queued == 0);
}

TEST_CASE("tickets: interruptWaiters wakes an interrupted waiter") {
    TicketPolicy policy = pickPolicy();
    CAPTURE(ticketPolicyName(policy));
    auto h = TicketHolder::make(policy, 0);
    std::atomic<bool> flag{false};
    Status result = Status::Internal("not run");
    std::thread t([&] { result = h->acquire(Deadline::never(), flag); });
    bool queued = eventually([&] { return h->stats().queued == 1; });
    CHECK(queued);
    flag.store(true);
    h->interruptWaiters();
    t.join();
    CHECK(result.code() == StatusCode::kInterrupted);
    TicketStats s = h->stats();
    CHECK(s.queued == 0);
    CHECK(s.out == 0);
    CHECK(s.timeouts == 0);
}

// ---------------------------------------------------------------------------
// Through Locker

TEST_CASE("tickets: a Locker waits for a read ticket and times out holding nothing") {
    LockManagerOptions opts;
    opts.readTickets = 1;
    opts.writeTickets = 1;
    opts.ticketPolicy = pickPolicy();
    CAPTURE(ticketPolicyName(opts.ticketPolicy));
    LockManager mgr(opts);
    Locker a(mgr), b(mgr);
    REQUIRE(a.lockGlobal(LockMode::kIS).ok());
    CHECK(mgr.tickets().read().stats().out == 1);

    Status s = b.lockGlobal(LockMode::kIS, Deadline::in(20ms));
    CHECK(s.code() == StatusCode::kLockTimeout);
    CHECK(s.message().find("ticket") != std::string::npos);
    CHECK_FALSE(b.isLocked());
    CHECK(b.globalMode() == LockMode::kNone);
    CHECK(b.describe().held.empty());
    CHECK(mgr.dumpLocker(b.id()).empty());
    CHECK(mgr.tickets().read().stats().out == 1);
    CHECK(mgr.tickets().read().stats().timeouts == 1);
    CHECK(mgr.queuedReaders() == 0);
    CHECK(mgr.queuedWriters() == 0);

    // The write holder is separate: IX still goes through.
    CHECK(b.lockGlobal(LockMode::kIX, Deadline::now()).ok());
    CHECK(mgr.tickets().write().stats().out == 1);
    CHECK(b.unlockGlobal().ok());
    CHECK(mgr.tickets().write().stats().out == 0);

    CHECK(a.unlockGlobal().ok());
    CHECK(mgr.tickets().read().stats().out == 0);
    CHECK(b.lockGlobal(LockMode::kIS, Deadline::now()).ok());
    CHECK(b.unlockGlobal().ok());
}

TEST_CASE("tickets: Global X takes no ticket") {
    LockManagerOptions opts;
    opts.readTickets = 0;
    opts.writeTickets = 0;
    LockManager mgr(opts);
    Locker a(mgr);
    CHECK(a.lockGlobal(LockMode::kX, Deadline::now()).ok());
    CHECK(a.globalMode() == LockMode::kX);
    // Recursive shared requests under X need no ticket either.
    CHECK(a.lockGlobal(LockMode::kIS, Deadline::now()).ok());
    CHECK(mgr.tickets().read().stats().out == 0);
    CHECK(mgr.tickets().write().stats().out == 0);
    CHECK(a.unlockGlobal().ok());
    CHECK(a.unlockGlobal().ok());
    CHECK_FALSE(a.isLocked());
    // ...while IS and IX do.
    CHECK(a.lockGlobal(LockMode::kIS, Deadline::now()).code() == StatusCode::kLockTimeout);
    CHECK(a.lockGlobal(LockMode::kIX, Deadline::now()).code() == StatusCode::kLockTimeout);
    CHECK_FALSE(a.isLocked());
}

TEST_CASE("tickets: Locker::interrupt wakes a locker blocked on a ticket") {
    LockManagerOptions opts;
    opts.readTickets = 0;
    opts.ticketPolicy = pickPolicy();
    CAPTURE(ticketPolicyName(opts.ticketPolicy));
    LockManager mgr(opts);
    Locker b(mgr);
    Status result = Status::Internal("not run");
    std::thread t([&] { result = b.lockGlobal(LockMode::kIS, Deadline::never()); });
    bool queued = eventually([&] { return mgr.tickets().read().stats().queued == 1; });
    CHECK(queued);
    CHECK(mgr.queuedReaders() == 1);  // a ticket waiter is in globalLock.currentQueue
    b.interrupt();
    t.join();
    CHECK(result.code() == StatusCode::kInterrupted);
    CHECK_FALSE(b.isLocked());
    CHECK(mgr.tickets().read().stats().queued == 0);
    CHECK(mgr.tickets().read().stats().out == 0);
    CHECK(mgr.queuedReaders() == 0);
    // Interrupted stays set until cleared; then a free ticket works again.
    CHECK(mgr.tickets().read().resize(1).ok());
    b.clearInterrupt();
    CHECK(b.lockGlobal(LockMode::kIS, Deadline::now()).ok());
    CHECK(b.unlockGlobal().ok());
}

TEST_CASE("tickets: returned when the Global lock is fully released") {
    LockManager mgr;
    Locker a(mgr);
    TicketHolder& read = mgr.tickets().read();
    TicketHolder& write = mgr.tickets().write();
    const int64_t total = read.stats().total;

    SUBCASE("recursive IS keeps one read ticket") {
        CHECK(a.lockGlobal(LockMode::kIS).ok());
        CHECK(a.lockGlobal(LockMode::kIS).ok());
        CHECK(read.stats().out == 1);
        CHECK(read.stats().available == total - 1);
        CHECK(a.unlockGlobal().ok());
        CHECK(read.stats().out == 1);
        CHECK(a.unlockGlobal().ok());
        CHECK(read.stats().out == 0);
        CHECK(read.stats().available == total);
    }
    SUBCASE("IS converted to IX keeps the read ticket, no write ticket") {
        CHECK(a.lockGlobal(LockMode::kIS).ok());
        CHECK(a.lockGlobal(LockMode::kIX).ok());
        CHECK(a.globalMode() == LockMode::kIX);
        CHECK(read.stats().out == 1);
        CHECK(write.stats().out == 0);
        CHECK(a.unlockGlobal().ok());
        CHECK(read.stats().out == 1);
        CHECK(a.unlockGlobal().ok());
        CHECK(read.stats().out == 0);
        CHECK(write.stats().out == 0);
    }
    SUBCASE("a Global lock wait that times out gives the ticket back") {
        Locker x(mgr);
        CHECK(x.lockGlobal(LockMode::kX).ok());
        Status s = a.lockGlobal(LockMode::kIS, Deadline::in(20ms));
        CHECK(s.code() == StatusCode::kLockTimeout);
        CHECK_FALSE(a.isLocked());
        CHECK(read.stats().out == 0);
        CHECK(x.unlockGlobal().ok());
    }
    SUBCASE("a destroyed locker gives its ticket back") {
        {
            Locker tmp(mgr);
            CHECK(tmp.lockGlobal(LockMode::kIX).ok());
            CHECK(tmp.lockGlobal(LockMode::kIX).ok());
            CHECK(write.stats().out == 1);
        }
        CHECK(write.stats().out == 0);
    }
    CHECK(mgr.dump().empty());
}

// ---------------------------------------------------------------------------
// The semaphore policy's per-shard stocks

TEST_CASE("tickets: stocks of one shard are reclaimed by another when the pool runs dry") {
    auto h = TicketHolder::make(TicketPolicy::kSemaphore, 4);
    // Shard 1 borrows from the pool and keeps what it gets back in its stock.
    CHECK(h->tryAcquire(1));
    CHECK(h->tryAcquire(1));
    h->release(1);
    h->release(1);
    TicketStats s = h->stats();
    CHECK(s.out == 0);
    CHECK(s.available == 4);
    // Shard 2 finds its stock and the pool empty: it takes the stranded ones.
    for (int i = 0; i < 4; ++i)
        CHECK(h->tryAcquire(2));
    CHECK_FALSE(h->tryAcquire(2));
    CHECK_FALSE(h->tryAcquire(1));
    CHECK_FALSE(h->tryAcquire(9));
    s = h->stats();
    CHECK(s.out == 4);
    CHECK(s.available == 0);
    // Released into one shard, acquired from any other: acquire() (not only
    // tryAcquire) looks in every stock before it waits.
    h->release(2);
    CHECK(h->acquire(Deadline::now(), kNotInterrupted, 7).ok());
    h->release(3);
    h->release(3);
    h->release(3);
    h->release(7);
    s = h->stats();
    CHECK(s.out == 0);
    CHECK(s.available == 4);
    CHECK(s.queued == 0);
}

TEST_CASE("tickets: a waiter is woken by a release into another shard's stock") {
    auto h = TicketHolder::make(TicketPolicy::kSemaphore, 2);
    CHECK(h->tryAcquire(4));
    CHECK(h->tryAcquire(4));
    Status result = Status::Internal("not run");
    std::thread t([&] { result = h->acquire(backstop(), kNotInterrupted, 11); });
    bool queued = eventually([&] { return h->stats().queued == 1; });
    CHECK(queued);
    h->release(4);  // sees the waiter: into the pool, and wakes it
    t.join();
    CHECK(result.ok());
    TicketStats s = h->stats();
    CHECK(s.out == 2);
    CHECK(s.queued == 0);
    h->release(11);
    h->release(4);
    s = h->stats();
    CHECK(s.out == 0);
    CHECK(s.available == 2);
}

TEST_CASE("tickets: resize moves the stocks back into the pool") {
    auto h = TicketHolder::make(TicketPolicy::kSemaphore, 8);
    // Leave tickets in several stocks.
    for (size_t shard = 0; shard < 4; ++shard) {
        CHECK(h->tryAcquire(shard));
        h->release(shard);
    }
    CHECK(h->stats().available == 8);
    CHECK(h->resize(1).ok());
    TicketStats s = h->stats();
    CHECK(s.total == 1);
    CHECK(s.available == 1);
    CHECK(s.out == 0);
    // Whatever the shard, only one ticket is left.
    CHECK(h->tryAcquire(2));
    for (size_t shard = 0; shard < 20; ++shard)
        CHECK_FALSE(h->tryAcquire(shard));
    CHECK(h->resize(3).ok());
    CHECK(h->tryAcquire(5));
    CHECK(h->tryAcquire(6));
    CHECK_FALSE(h->tryAcquire(7));
    h->release(0);
    h->release(0);
    h->release(0);
    s = h->stats();
    CHECK(s.out == 0);
    CHECK(s.available == 3);
}

TEST_CASE("tickets: the total is enforced across shards under many threads") {
    constexpr int kTickets = 3;
    constexpr int kThreads = 8;
    constexpr int kRounds = 2000;
    TicketPolicy policy = pickPolicy();
    CAPTURE(ticketPolicyName(policy));
    auto h = TicketHolder::make(policy, kTickets);
    std::atomic<int> inUse{0};
    std::atomic<int> maxInUse{0};
    std::atomic<int> failures{0};
    std::atomic<bool> stop{false};
    std::atomic<int> badStats{0};
    std::thread watcher([&] {
        while (!stop.load()) {
            TicketStats s = h->stats();
            if (s.out < 0 || s.out > kTickets || s.available < 0 || s.available > kTickets ||
                s.out + s.available != kTickets || s.total != kTickets) {
                badStats.fetch_add(1);
            }
            std::this_thread::yield();
        }
    });
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kRounds; ++i) {
                // Half the rounds wait, half only try; shards differ by thread.
                size_t shard = size_t(t) * 3;
                bool got = i % 2 == 0 ? h->acquire(backstop(), kNotInterrupted, shard).ok()
                                      : h->tryAcquire(shard);
                if (!got) {
                    if (i % 2 == 0)
                        failures.fetch_add(1);
                    continue;
                }
                int now = inUse.fetch_add(1) + 1;
                int seen = maxInUse.load();
                while (now > seen && !maxInUse.compare_exchange_weak(seen, now)) {
                }
                inUse.fetch_sub(1);
                h->release(shard);
            }
        });
    }
    for (auto& th : threads)
        th.join();
    stop.store(true);
    watcher.join();
    CHECK(failures.load() == 0);
    CHECK(maxInUse.load() <= kTickets);
    CHECK(badStats.load() == 0);
    TicketStats s = h->stats();
    CHECK(s.out == 0);
    CHECK(s.available == kTickets);
    CHECK(s.queued == 0);
}

TEST_CASE("tickets: resizing while many threads take and return tickets") {
    auto h = TicketHolder::make(TicketPolicy::kSemaphore, 4);
    std::atomic<bool> stop{false};
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 6; ++t) {
        threads.emplace_back([&, t] {
            while (!stop.load()) {
                if (!h->acquire(backstop(), kNotInterrupted, size_t(t)).ok()) {
                    failures.fetch_add(1);
                    continue;
                }
                h->release(size_t(t) + 1);  // returned through another shard
            }
        });
    }
    for (int i = 0; i < 200; ++i)
        CHECK(h->resize(1 + i % 7).ok());
    CHECK(h->resize(5).ok());
    stop.store(true);
    for (auto& th : threads)
        th.join();
    CHECK(failures.load() == 0);
    TicketStats s = h->stats();
    CHECK(s.total == 5);
    CHECK(s.out == 0);
    CHECK(s.available == 5);
    CHECK(s.queued == 0);
}

TEST_CASE("tickets: AutoGetCollection from many lockers never exceeds the read tickets") {
    LockManagerOptions opts;
    opts.readTickets = 2;
    opts.ticketPolicy = pickPolicy();
    CAPTURE(ticketPolicyName(opts.ticketPolicy));
    LockManager mgr(opts);
    auto ns = LockNamespace::parse("db.coll");
    REQUIRE(ns.ok());
    std::atomic<int> inUse{0};
    std::atomic<int> maxInUse{0};
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 6; ++t) {
        threads.emplace_back([&, t] {
            Locker locker(mgr);  // consecutive ids: different partitions
            for (int i = 0; i < 1000; ++i) {
                std::optional<AutoGetCollection> coll;
                if (t % 2 == 0)
                    coll.emplace(locker, ns.value(), LockMode::kIS, backstop());
                else
                    coll.emplace(locker, "db.coll", LockMode::kIS, backstop());
                if (!coll->isLocked()) {
                    failures.fetch_add(1);
                    continue;
                }
                int now = inUse.fetch_add(1) + 1;
                int seen = maxInUse.load();
                while (now > seen && !maxInUse.compare_exchange_weak(seen, now)) {
                }
                inUse.fetch_sub(1);
            }
        });
    }
    for (auto& th : threads)
        th.join();
    CHECK(failures.load() == 0);
    CHECK(maxInUse.load() <= 2);
    TicketStats s = mgr.tickets().read().stats();
    CHECK(s.out == 0);
    CHECK(s.available == 2);
    CHECK(s.queued == 0);
    CHECK(mgr.checkInvariants().empty());
    // Every acquisition was counted, fast path or not.
    CHECK(mgr.stats().snapshot().get(ResourceType::kCollection, LockMode::kIS,
                                      LockStatKind::kAcquireCount) == 6000);
}
