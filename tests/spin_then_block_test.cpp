// SpinThenBlockMutex: mutual exclusion under many threads, and no lost
// wake-up when every waiter has gone to sleep on it.
#include "util/spin_then_block.h"

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

namespace {

using mvkv::SpinThenBlockMutex;

TEST_SUITE("concurrency") {

TEST_CASE("a spin-then-block mutex lets one thread in at a time") {
    SpinThenBlockMutex mutex;
    constexpr int kThreads = 4;
    constexpr int kRounds = 20000;
    uint64_t counter = 0;  // plain: a second thread inside would lose counts (and TSan sees it)
    int inside = 0;
    std::atomic<bool> overlap{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < kRounds; ++i) {
                std::lock_guard lock(mutex);
                if (++inside != 1)
                    overlap = true;
                ++counter;
                if (i % 97 == 0)
                    std::this_thread::yield();  // a holder off its CPU: others sleep
                --inside;
            }
        });
    for (auto& t : threads)
        t.join();
    CHECK_FALSE(overlap.load());
    CHECK(counter == uint64_t{kThreads} * kRounds);
    CHECK(mutex.sleepers() == 0);
}

TEST_CASE("every thread asleep on a spin-then-block mutex is woken in turn") {
    SpinThenBlockMutex mutex;
    constexpr uint32_t kWaiters = 3;
    std::atomic<uint32_t> done{0};
    mutex.lock();
    std::vector<std::thread> threads;
    for (uint32_t t = 0; t < kWaiters; ++t)
        threads.emplace_back([&] {
            std::lock_guard lock(mutex);
            done.fetch_add(1);
        });
    // Held until all of them are past the spin: each unlock must wake one,
    // or a waiter sleeps forever (the test would hang).
    while (mutex.sleepers() < kWaiters)
        std::this_thread::yield();
    CHECK(done.load() == 0);
    mutex.unlock();
    for (auto& t : threads)
        t.join();
    CHECK(done.load() == kWaiters);
    CHECK(mutex.sleepers() == 0);
    CHECK(mutex.try_lock());  // free again
    CHECK_FALSE(mutex.try_lock());
    mutex.unlock();
}

}  // TEST_SUITE

}  // namespace
