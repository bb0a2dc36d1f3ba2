// Tickets: TicketHolder (both policies) and the tickets a Locker takes in
// front of the Global lock.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lockmgr/lock_manager.h"
#include "lockmgr/locker.h"
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
