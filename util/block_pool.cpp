#include "util/block_pool.h"

#include <sys/mman.h>

#include <algorithm>
#include <cassert>
#include <new>

#include "util/asan_poison.h"
#include "util/huge_pages.h"

namespace mvkv {

namespace {

constexpr size_t kMinBlockBytes = 16;
constexpr size_t kMaxBlockBytes = size_t{64} << 10;

}  // namespace

BlockPool::BlockPool(size_t blockBytes)
    : blockBytes_((std::clamp(blockBytes, kMinBlockBytes, kMaxBlockBytes) + 15) / 16 * 16) {
    assert(blockBytes >= kMinBlockBytes && blockBytes <= kMaxBlockBytes);
}

BlockPool::~BlockPool() {
    for (const Chunk& c : chunks_) {
        if (c.mapped)
            ::munmap(c.base, kHugePageBytes);
        else {
            MVKV_UNPOISON(c.base, kHugePageBytes);
            ::operator delete(c.base, std::align_val_t{16});
        }
    }
}

void* BlockPool::allocate() {
    if (free_) {
        FreeBlock* block = free_;
        MVKV_UNPOISON(block, blockBytes_);
        free_ = block->next;
        return block;
    }
    if (next_ == nullptr || static_cast<size_t>(end_ - next_) < blockBytes_) {
        chunks_.reserve(chunks_.size() + 1);  // may throw: before the chunk is taken
        Chunk chunk{nullptr, true};
#ifndef MVKV_ASAN
        bool advised;  // not needed: without huge pages the chunk still serves
        chunk.base = mapHugePageChunk(advised);
#endif
        // The heap when mmap fails, and under AddressSanitizer, which then
        // checks the blocks (poisoned while free).
        if (chunk.base == nullptr)
            chunk = {static_cast<char*>(::operator new(kHugePageBytes, std::align_val_t{16})),
                     false};
        chunks_.push_back(chunk);
        next_ = chunk.base;
        end_ = chunk.base + kHugePageBytes;
        MVKV_POISON(next_, kHugePageBytes);
    }
    void* block = next_;
    next_ += blockBytes_;
    MVKV_UNPOISON(block, blockBytes_);
    return block;
}

void BlockPool::deallocate(void* block) noexcept {
    auto* freed = static_cast<FreeBlock*>(block);
    freed->next = free_;
    free_ = freed;
    MVKV_POISON(block, blockBytes_);
}

size_t BlockPool::chunkBytes() const {
    return chunks_.size() * kHugePageBytes;
}

}  // namespace mvkv
