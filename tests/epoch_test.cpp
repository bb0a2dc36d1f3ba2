// EpochManager: nothing is freed under a guard that predates its retirement,
// everything is freed eventually (after the guards end, on reclaim, at
// destruction), and thread exit / manager destruction in either order neither
// leak nor touch freed memory.
#include "util/epoch.h"

#include "util/process_barrier.h"

#include <doctest/doctest.h>

#include <atomic>
#include <barrier>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

using mvkv::EpochManager;
using PinFence = EpochManager::PinFence;

// Runs the enclosing test case once per pin fence (a doctest subcase each).
#define GENERATE_FENCE()                                                              \
    [] {                                                                              \
        PinFence f = PinFence::kFull;                                                 \
        SUBCASE("full fence") { f = PinFence::kFull; }                                \
        SUBCASE("asymmetric fence") { f = PinFence::kAsymmetric; }                    \
        return f;                                                                     \
    }()

namespace {

std::atomic<int64_t> gLive{0};

// An object that counts itself and poisons its payload when freed, so a
// reader that could see a freed one would notice (and ASan would too).
struct Tracked {
    static constexpr uint64_t kAlive = 0xA11CEA11CEA11CEull;
    std::atomic<uint64_t> magic{kAlive};
    Tracked() { gLive.fetch_add(1, std::memory_order_relaxed); }
    ~Tracked() {
        magic.store(0xDEAD, std::memory_order_relaxed);
        gLive.fetch_sub(1, std::memory_order_relaxed);
    }
};

struct LiveReset {
    LiveReset() { gLive.store(0); }
    ~LiveReset() { CHECK(gLive.load() == 0); }
};

}  // namespace

TEST_CASE("epoch: a retired object outlives every guard that predates the retire") {
    LiveReset reset;
    EpochManager epochs;
    auto* obj = new Tracked;
    {
        auto guard = epochs.pin();
        epochs.retireObject(obj);
        CHECK(epochs.pendingCount() == 1);
        for (int i = 0; i < 5; ++i) {
            CHECK(epochs.reclaim() == 0);
        }
        CHECK(gLive.load() == 1);
        CHECK(obj->magic.load() == Tracked::kAlive);
    }
    CHECK(epochs.reclaim() == 1);
    CHECK(epochs.pendingCount() == 0);
    CHECK(gLive.load() == 0);
}

TEST_CASE("epoch: a guard on another thread holds back reclamation; nested guards are one") {
    LiveReset reset;
    const auto fence = GENERATE_FENCE();
    EpochManager epochs(fence);
    std::atomic<int> stage{0};
    std::thread reader([&] {
        auto outer = epochs.pin();
        {
            auto inner = epochs.pin();  // nesting: ending it must not unpin
        }
        stage.store(1);
        while (stage.load() != 2) {
            std::this_thread::yield();
        }
    });
    while (stage.load() != 1) {
        std::this_thread::yield();
    }
    epochs.retireObject(new Tracked);
    // Tries that may run the process barrier too (every kBarrierEvery-th).
    for (uint32_t i = 0; i < 4 * EpochManager::kBarrierEvery; ++i) {
        CHECK(epochs.reclaimIfFree() == 0);
    }
    CHECK(epochs.reclaim() == 0);
    CHECK(epochs.pendingCount() == 1);
    stage.store(2);
    reader.join();
    CHECK(epochs.reclaim() == 1);
    CHECK(gLive.load() == 0);
}

TEST_CASE("epoch: guards move, release early and retire without guard") {
    LiveReset reset;
    EpochManager epochs;
    auto g1 = epochs.pin();
    EpochManager::Guard g2 = std::move(g1);
    epochs.retireObject(new Tracked);
    CHECK(epochs.reclaim() == 0);
    g1.release();  // moved-from: no effect
    CHECK(epochs.reclaim() == 0);
    g2.release();
    CHECK(epochs.reclaim() == 1);

    // retire() with a plain deleter, nobody pinned.
    static std::atomic<int> freed{0};
    freed = 0;
    int dummy = 0;
    epochs.retire(&dummy, [](void*) { freed.fetch_add(1); });
    CHECK(epochs.reclaim() == 1);
    CHECK(freed.load() == 1);
}

TEST_CASE("epoch: retire reclaims by itself under steady churn") {
    LiveReset reset;
    EpochManager epochs;
    for (int i = 0; i < 100000; ++i) {
        auto guard = epochs.pin();
        epochs.retireObject(new Tracked);
    }
    // Bounded by a few reclaim periods, not by the number of retirements.
    CHECK(epochs.pendingCount() <= 4 * EpochManager::kReclaimEvery);
    CHECK(gLive.load() == static_cast<int64_t>(epochs.pendingCount()));
}

TEST_CASE("epoch: destruction frees what is pending") {
    LiveReset reset;
    {
        EpochManager epochs;
        auto guard = epochs.pin();
        for (int i = 0; i < 10; ++i) {
            epochs.retireObject(new Tracked);
        }
        guard.release();
        CHECK(gLive.load() == 10);
    }
    CHECK(gLive.load() == 0);
}

TEST_CASE("epoch: many threads pin, read, retire and reclaim; no object is seen freed") {
    LiveReset reset;
    const auto fence = GENERATE_FENCE();
    EpochManager epochs(fence);
    constexpr int kThreads = 4;
    constexpr int kSlots = 16;
    constexpr int kIters = 20000;
    std::vector<std::atomic<Tracked*>> slots(kSlots);
    for (auto& s : slots) {
        s.store(new Tracked);
    }
    std::atomic<int> bad{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            std::mt19937 rng(static_cast<unsigned>(t) * 7919u + 1);
            for (int i = 0; i < kIters; ++i) {
                auto guard = epochs.pin();
                auto& slot = slots[rng() % kSlots];
                if (rng() % 4 == 0) {
                    Tracked* old = slot.exchange(new Tracked, std::memory_order_acq_rel);
                    epochs.retireObject(old);
                } else {
                    Tracked* cur = slot.load(std::memory_order_acquire);
                    if (cur->magic.load(std::memory_order_relaxed) != Tracked::kAlive) {
                        bad.fetch_add(1);
                    }
                }
                if (i % 1000 == 0) {
                    epochs.reclaim();
                }
            }
        });
    }
    for (auto& th : threads) {
        th.join();
    }
    CHECK(bad.load() == 0);
    epochs.reclaim();
    CHECK(epochs.pendingCount() == 0);
    CHECK(gLive.load() == kSlots);
    for (auto& s : slots) {
        delete s.load();
    }
}

TEST_CASE("epoch: threads that exit hand back their records and retired objects") {
    LiveReset reset;
    EpochManager epochs;
    for (int round = 0; round < 20; ++round) {
        std::vector<std::thread> threads;
        for (int t = 0; t < 3; ++t) {
            threads.emplace_back([&] {
                auto guard = epochs.pin();
                for (int i = 0; i < 5; ++i) {
                    epochs.retireObject(new Tracked);  // fewer than kReclaimEvery: stays in the bag
                }
            });
        }
        for (auto& th : threads) {
            th.join();
        }
    }
    CHECK(epochs.pendingCount() == 20 * 3 * 5);
    CHECK(epochs.reclaim() == 20 * 3 * 5);
    CHECK(gLive.load() == 0);
}

TEST_CASE("epoch: a thread may outlive its manager, and use several managers") {
    LiveReset reset;
    std::atomic<int> stage{0};
    auto first = std::make_unique<EpochManager>();
    std::thread worker([&] {
        EpochManager second;
        {
            auto g1 = first->pin();
            auto g2 = second.pin();
            first->retireObject(new Tracked);
            second.retireObject(new Tracked);
        }
        stage.store(1);
        while (stage.load() != 2) {
            std::this_thread::yield();
        }
        // `first` is gone now; this thread's exit must not touch it. A new
        // manager (possibly at the same address) must get a fresh record.
        EpochManager third;
        auto g3 = third.pin();
        third.retireObject(new Tracked);
    });
    while (stage.load() != 1) {
        std::this_thread::yield();
    }
    first.reset();  // frees the object the worker retired, before the worker exits
    stage.store(2);
    worker.join();
    CHECK(gLive.load() == 0);
}

TEST_CASE("epoch: managers come and go while threads pin them") {
    LiveReset reset;
    constexpr int kThreads = 3;
    for (int round = 0; round < 30; ++round) {
        auto epochs = std::make_unique<EpochManager>();
        std::barrier sync(kThreads + 1);
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
            threads.emplace_back([&] {
                for (int i = 0; i < 100; ++i) {
                    auto guard = epochs->pin();
                    epochs->retireObject(new Tracked);
                }
                sync.arrive_and_wait();  // done with the manager
                sync.arrive_and_wait();  // manager destroyed: now exit
            });
        }
        sync.arrive_and_wait();
        epochs.reset();
        CHECK(gLive.load() == 0);
        sync.arrive_and_wait();
        for (auto& th : threads) {
            th.join();
        }
    }
}

TEST_CASE("epoch: pins are asymmetric by default where the process barrier is available") {
    EpochManager full(PinFence::kFull);
    CHECK(full.pinFence() == PinFence::kFull);
    EpochManager asymmetric(PinFence::kAsymmetric);
    CHECK(asymmetric.pinFence() == EpochManager::defaultPinFence());
    EpochManager byDefault;
    CHECK(byDefault.pinFence() == EpochManager::defaultPinFence());
#if defined(__SANITIZE_THREAD__)
    CHECK(EpochManager::defaultPinFence() == PinFence::kFull);
#else
    CHECK((EpochManager::defaultPinFence() == PinFence::kAsymmetric) ==
          mvkv::process_barrier::available());
#endif
    MESSAGE("default pin fence here: ",
            std::string(EpochManager::defaultPinFence() == PinFence::kAsymmetric ? "asymmetric"
                                                                                 : "full"));
}

TEST_CASE("epoch: reclaimIfFree runs the process barrier only every kBarrierEvery tries; idle threads are parked") {
    LiveReset reset;
    const auto fence = GENERATE_FENCE();
    EpochManager epochs(fence);
    // An owned record that reads unpinned (this thread's, after a pin) is
    // what only the barrier can confirm under asymmetric pins.
    { auto guard = epochs.pin(); }
    epochs.retireObject(new Tracked);
    const bool asymmetric = epochs.pinFence() == PinFence::kAsymmetric;
    uint32_t tries = 0;
    size_t freed = 0;
    while (freed == 0 && tries < 2 * EpochManager::kBarrierEvery) {
        ++tries;
        freed = epochs.reclaimIfFree();
        if (freed == 0) {
            CHECK(epochs.barriersRun() == 0);  // skipped, not run
        }
    }
    CHECK(freed == 1);
    CHECK(tries == (asymmetric ? EpochManager::kBarrierEvery : 1));
    // One barrier (it parks the record, so the second advance needs none);
    // none with full-fence pins.
    CHECK(epochs.barriersRun() == (asymmetric ? 1u : 0u));
    // The barrier parked this thread's idle record: the next try needs none.
    epochs.retireObject(new Tracked);
    CHECK(epochs.reclaimIfFree() == 1);
    CHECK(epochs.barriersRun() == (asymmetric ? 1u : 0u));
    // A pin unparks it (with a full fence): tries need the barrier again.
    { auto guard = epochs.pin(); }
    epochs.retireObject(new Tracked);
    if (asymmetric) {
        CHECK(epochs.reclaimIfFree() == 0);
    }
    // reclaim() waits and pays for the barrier whenever it needs one.
    CHECK(epochs.reclaim() == 1);
    CHECK(epochs.barriersRun() == (asymmetric ? 2u : 0u));
}
