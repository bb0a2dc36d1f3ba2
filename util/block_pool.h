// BlockPool: fixed-size blocks carved out of 2 MiB chunks (util/huge_pages.h),
// handed back to a free list and reused; and BlockPoolAllocator, which
// serves a standard container's small allocations from one.
//
// Why: the oplog's index (a std::deque, oplog/oplog.h) grows by one 40-byte
// entry per commit, in nodes of 480 bytes (libstdc++ fills 512 bytes with
// whole elements). From the heap, on a thread's own malloc arena, that
// growth takes one fresh page at a time: a page fault and an mprotect call
// each, which perf put at 8% of a 1-thread commit stream (hotkey) on a
// virtual machine. From 2 MiB chunks it is one fault per chunk where the
// kernel backs it with a huge page (else one per 4 KiB page, still without
// the mprotect calls), and the nodes capping frees are reused. (libc++'s
// deque takes 4 KiB nodes: there the pool would serve only the map.)
//
// Memory: a chunk is kept until the pool is destroyed (the pool holds as
// much as its container held at its largest); the destructor unmaps them
// all, so every block must be back, or its container gone, by then.
// Thread safety: none; the container's owner locks for both.
// Errors: allocate() throws std::bad_alloc as operator new does, when
// neither a chunk nor the heap has memory (a standard container expects it).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace mvkv {

class BlockPool {
  public:
    /// Blocks of `blockBytes` (rounded up to 16, the largest alignment
    /// served); 16 bytes to 64 KiB (a chunk holds 32 blocks or more).
    explicit BlockPool(size_t blockBytes);
    BlockPool(const BlockPool&) = delete;
    BlockPool& operator=(const BlockPool&) = delete;
    ~BlockPool();

    size_t blockBytes() const { return blockBytes_; }
    void* allocate();
    void deallocate(void* block) noexcept;
    /// Bytes of chunks held (for a test: growth stops once blocks are reused).
    size_t chunkBytes() const;

  private:
    struct FreeBlock {
        FreeBlock* next;
    };
    struct Chunk {
        char* base;
        bool mapped;  // else from the heap (mmap failed)
    };
    const size_t blockBytes_;
    FreeBlock* free_ = nullptr;
    char* next_ = nullptr;  // the newest chunk's first unused byte
    char* end_ = nullptr;
    std::vector<Chunk> chunks_;
};

/// Serves allocations of up to the pool's block size (a std::deque's nodes)
/// from the pool, larger ones (its map, once it grows) from std::allocator.
template <typename T>
class BlockPoolAllocator {
  public:
    using value_type = T;
    static_assert(alignof(T) <= 16);

    explicit BlockPoolAllocator(BlockPool& pool) noexcept : pool_(&pool) {}
    template <typename U>
    BlockPoolAllocator(const BlockPoolAllocator<U>& other) noexcept : pool_(other.pool_) {}

    T* allocate(size_t n) {
        if (n <= pool_->blockBytes() / sizeof(T))
            return static_cast<T*>(pool_->allocate());
        return std::allocator<T>().allocate(n);
    }
    void deallocate(T* p, size_t n) noexcept {
        if (n <= pool_->blockBytes() / sizeof(T))
            pool_->deallocate(p);
        else
            std::allocator<T>().deallocate(p, n);
    }
    template <typename U>
    bool operator==(const BlockPoolAllocator<U>& other) const noexcept {
        return pool_ == other.pool_;
    }

  private:
    template <typename U>
    friend class BlockPoolAllocator;
    BlockPool* pool_;
};

}  // namespace mvkv
