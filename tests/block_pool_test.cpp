// BlockPool and its allocator: blocks distinct and aligned, freed blocks
// reused, and a std::deque on it (the oplog's index) behaving as on the heap.
#include "util/block_pool.h"

#include <cstdint>
#include <deque>
#include <set>
#include <vector>

#include <doctest/doctest.h>

#include "test_seed.h"
#include "util/huge_pages.h"

namespace {

using mvkv::BlockPool;
using mvkv::BlockPoolAllocator;

TEST_CASE("a block pool hands out distinct aligned blocks and reuses freed ones") {
    BlockPool pool(500);
    CHECK(pool.blockBytes() == 512);  // rounded up to 16
    CHECK(pool.chunkBytes() == 0);    // nothing mapped until asked
    std::set<char*> blocks;
    const size_t perChunk = mvkv::kHugePageBytes / 512;
    for (size_t i = 0; i < perChunk + 1; ++i) {
        auto* b = static_cast<char*>(pool.allocate());
        CHECK(reinterpret_cast<uintptr_t>(b) % 16 == 0);
        b[0] = 1;
        b[511] = 2;  // the whole block is usable
        blocks.insert(b);
    }
    CHECK(blocks.size() == perChunk + 1);
    CHECK(pool.chunkBytes() == 2 * mvkv::kHugePageBytes);  // the last one opened a second chunk
    char* freed = *blocks.begin();
    pool.deallocate(freed);
    CHECK(pool.allocate() == freed);  // from the free list, not a new chunk
    CHECK(pool.chunkBytes() == 2 * mvkv::kHugePageBytes);
}

TEST_CASE("a deque on a block pool keeps its contents and its memory bounded") {
    BlockPool pool(512);
    using Deque = std::deque<uint64_t, BlockPoolAllocator<uint64_t>>;
    Deque d{BlockPoolAllocator<uint64_t>(pool)};
    std::deque<uint64_t> model;
    const uint64_t seed = mvkv::testing::testSeed();
    uint64_t x = seed | 1;
    auto next = [&x] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return x;
    };
    // Grows past one chunk (its map then outgrows a block and goes to the
    // heap), with inserts near the end as the oplog's index makes them.
    for (uint64_t i = 0; i < 300000; ++i) {
        const uint64_t v = next();
        const size_t back = std::min<size_t>(d.size(), v % 3);
        d.insert(d.end() - static_cast<std::ptrdiff_t>(back), v);
        model.insert(model.end() - static_cast<std::ptrdiff_t>(back), v);
    }
    REQUIRE(d.size() == model.size());
    CHECK(std::equal(d.begin(), d.end(), model.begin()));
    // Then a steady state, capped at the front as the oplog is: nodes freed
    // at the front are reused at the back, so no chunk is added.
    const size_t held = pool.chunkBytes();
    CHECK(held > 0);  // the nodes came from the pool
    for (uint64_t i = 0; i < 300000; ++i) {
        d.push_back(i);
        model.push_back(i);
        d.pop_front();
        model.pop_front();
    }
    CHECK(pool.chunkBytes() == held);
    d.erase(d.begin() + 10, d.begin() + 1000);
    model.erase(model.begin() + 10, model.begin() + 1000);
    REQUIRE(d.size() == model.size());
    CHECK(std::equal(d.begin(), d.end(), model.begin()));
}

TEST_CASE("a deque of oplog-index-sized entries takes its nodes from the pool") {
    struct Entry {
        uint64_t words[5];  // 40 bytes, as oplog::RecordRef
    };
    BlockPool pool(512);
    std::deque<Entry, BlockPoolAllocator<Entry>> d{BlockPoolAllocator<Entry>(pool)};
    for (uint64_t i = 0; i < 1000; ++i)
        d.push_back(Entry{{i, i, i, i, i}});
    CHECK(pool.chunkBytes() == mvkv::kHugePageBytes);
    uint64_t sum = 0;
    for (const Entry& e : d)
        sum += e.words[4];
    CHECK(sum == 999 * 1000 / 2);
}

}  // namespace
