// The version arena (mvcc/version_arena.h): blocks never overlap, survive
// being freed on another thread and at thread exit, and freed memory is
// reused (steady churn stops mapping chunks). Under AddressSanitizer the
// arena is off by design; the block checks still run against operator new.
#include "mvcc/version_arena.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

using mvkv::mvcc::allocateVersion;
using mvkv::mvcc::freeVersion;
using mvkv::mvcc::kMaxArenaBytes;
using mvkv::mvcc::versionArenaStats;

namespace {

struct Block {
    unsigned char* p;
    size_t bytes;
    unsigned char tag;
};

// Fills every byte with a tag, so a block that overlaps another (or was
// handed out twice) shows up as a wrong byte when it is checked.
Block make(size_t bytes, unsigned char tag) {
    auto* p = static_cast<unsigned char*>(allocateVersion(bytes));
    std::memset(p, tag, bytes);
    return {p, bytes, tag};
}

bool intact(const Block& b) {
    for (size_t i = 0; i < b.bytes; ++i) {
        if (b.p[i] != b.tag)
            return false;
    }
    return true;
}

size_t randomSize(std::mt19937& rng) {
    // Mostly small versions, some near and past the arena's limit.
    switch (rng() % 8) {
        case 0:
            return kMaxArenaBytes - 8 + rng() % 24;  // straddles the limit
        case 1:
            return 1 + rng() % kMaxArenaBytes;
        default:
            return 40 + rng() % 160;
    }
}

}  // namespace

TEST_CASE("version arena: blocks are 8-aligned and never overlap") {
    std::mt19937 rng(7);
    std::vector<Block> live;
    for (int i = 0; i < 20000; ++i) {
        live.push_back(make(randomSize(rng), static_cast<unsigned char>(i)));
        CHECK(reinterpret_cast<uintptr_t>(live.back().p) % 8 == 0);
        if (rng() % 3 == 0) {
            size_t j = rng() % live.size();
            REQUIRE(intact(live[j]));
            freeVersion(live[j].p, live[j].bytes);
            live[j] = live.back();
            live.pop_back();
        }
    }
    for (const Block& b : live) {
        CHECK(intact(b));
        freeVersion(b.p, b.bytes);
    }
}

TEST_CASE("version arena: threads allocate, free each other's blocks and exit") {
    // Producers allocate tagged blocks and hand half of them to a shared
    // bin; consumers free from the bin (frees on another thread); every
    // thread exits with blocks still in its cache, so the next round's
    // threads run on what the exited ones handed back.
    constexpr int kRounds = 3;
    constexpr int kThreads = 4;
    constexpr int kOps = 20000;
    std::atomic<int> corrupt{0};
    for (int round = 0; round < kRounds; ++round) {
        std::mutex binMutex;
        std::vector<Block> bin;
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
            threads.emplace_back([&, t] {
                std::mt19937 rng(static_cast<unsigned>(round * 100 + t));
                std::vector<Block> mine;
                for (int i = 0; i < kOps; ++i) {
                    auto tag = static_cast<unsigned char>(t * 50 + i % 50 + 1);
                    Block b = make(randomSize(rng), tag);
                    if (t % 2 == 0 && i % 2 == 0) {
                        std::lock_guard lock(binMutex);
                        bin.push_back(b);
                    } else {
                        mine.push_back(b);
                    }
                    if (t % 2 == 1) {  // consumers free what producers binned
                        std::vector<Block> take;
                        {
                            std::lock_guard lock(binMutex);
                            take.swap(bin);
                        }
                        for (const Block& x : take) {
                            if (!intact(x))
                                corrupt.fetch_add(1);
                            freeVersion(x.p, x.bytes);
                        }
                    }
                    if (mine.size() > 64) {
                        for (const Block& x : mine) {
                            if (!intact(x))
                                corrupt.fetch_add(1);
                            freeVersion(x.p, x.bytes);
                        }
                        mine.clear();
                    }
                }
                for (const Block& x : mine) {
                    if (!intact(x))
                        corrupt.fetch_add(1);
                    freeVersion(x.p, x.bytes);
                }
            });
        }
        for (auto& th : threads)
            th.join();
        for (const Block& x : bin) {
            if (!intact(x))
                corrupt.fetch_add(1);
            freeVersion(x.p, x.bytes);
        }
    }
    CHECK(corrupt.load() == 0);
}

TEST_CASE("version arena: steady churn reuses freed memory instead of mapping more") {
    auto before = versionArenaStats();
    if (!before.enabled) {
        MESSAGE("version arena off (AddressSanitizer or MVKV_VERSION_ARENA=0): nothing to reuse");
        return;
    }
    // 20,000 live 128-byte versions (~2.5 MB) replaced 50 times over, on
    // several threads in turn: without reuse that is ~125 MB of chunks.
    std::vector<Block> live;
    for (int i = 0; i < 20000; ++i)
        live.push_back(make(128, 1));
    size_t mapped = versionArenaStats().chunks;
    for (int pass = 0; pass < 50; ++pass) {
        std::thread worker([&] {
            for (Block& b : live) {
                freeVersion(b.p, b.bytes);
                b = make(128, static_cast<unsigned char>(pass));
            }
        });
        worker.join();
    }
    for (const Block& b : live) {
        CHECK(intact(b));
        freeVersion(b.p, b.bytes);
    }
    // A few chunks of slack for regions left behind by exited threads.
    CHECK(versionArenaStats().chunks <= mapped + 4);
    CHECK(versionArenaStats().pooledBlocks > 0);
}
