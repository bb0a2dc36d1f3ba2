// process_barrier: the light and heavy halves together forbid the
// store-buffering outcome (each thread stores, then loads the other's
// location, and both loads miss both stores), which two relaxed stores and
// loads allow and x86 shows within a few thousand rounds. With heavy()
// replaced by nothing this test fails (seen: about 4500 rounds in 20000, so some 900 in the 4000 run here).
#include "util/process_barrier.h"

#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace barrier = mvkv::process_barrier;

TEST_CASE("process barrier: light + heavy forbid the store-buffering outcome") {
    if (!barrier::available()) {
        MESSAGE("membarrier(PRIVATE_EXPEDITED) is not available here: nothing to test");
        return;
    }
    constexpr int kRounds = 4000;
    std::atomic<int> x{0}, y{0};
    // Two threads meet at a spin barrier before and after each round, so
    // their stores and loads overlap in time (as they must for the outcome to
    // show at all); a short, varying delay shifts them against each other.
    std::atomic<int> arrived{0};
    auto meet = [&](int n) {
        arrived.fetch_add(1, std::memory_order_acq_rel);
        // Yields after a while: the test shares the machine with others.
        for (int spins = 0; arrived.load(std::memory_order_acquire) < 2 * n; ++spins) {
            if (spins > 1000)
                std::this_thread::yield();
        }
    };
    std::atomic<int> sink{0};
    auto delay = [&](int i) {
        for (int d = 0; d < i % 4; ++d)
            sink.store(d, std::memory_order_relaxed);
    };
    std::vector<int> lightSaw(kRounds), heavySaw(kRounds);
    std::thread lightSide([&] {
        for (int i = 0; i < kRounds; ++i) {
            x.store(0, std::memory_order_relaxed);
            meet(2 * i + 1);
            delay(i);
            x.store(1, std::memory_order_relaxed);
            barrier::light();
            lightSaw[i] = y.load(std::memory_order_relaxed);
            meet(2 * i + 2);
        }
    });
    for (int i = 0; i < kRounds; ++i) {
        y.store(0, std::memory_order_relaxed);
        meet(2 * i + 1);
        delay(i / 4);
        y.store(1, std::memory_order_relaxed);
        barrier::heavy();
        heavySaw[i] = x.load(std::memory_order_relaxed);
        meet(2 * i + 2);
    }
    lightSide.join();
    int forbidden = 0;
    for (int i = 0; i < kRounds; ++i)
        forbidden += lightSaw[i] == 0 && heavySaw[i] == 0;
    MESSAGE("rounds where both loads missed both stores: ", forbidden, " of ", kRounds);
    CHECK(forbidden == 0);
}
