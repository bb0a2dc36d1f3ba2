// VersionArena implementation; the why is in version_arena.h.
#include "mvcc/version_arena.h"

#include <array>
#include <atomic>
#include <cassert>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <string_view>
#include <utility>
#include <vector>

#include "util/huge_pages.h"

#if defined(__SANITIZE_ADDRESS__)
#define MVKV_VERSION_ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MVKV_VERSION_ARENA_ASAN 1
#endif
#endif

namespace mvkv::mvcc {
namespace {

// 8, not 16: a version needs 8-byte alignment only, and a 100-byte value's
// version (132 bytes) then takes 136 bytes, not 144.
constexpr size_t kGranule = 8;
constexpr int kClasses = static_cast<int>(kMaxArenaBytes / kGranule);
// Blocks moved between a thread and the global pool at a time; a thread keeps
// at most 2 * kBatch free blocks of a class.
constexpr uint32_t kBatch = 128;

int classOf(size_t bytes) {
    return static_cast<int>((bytes + kGranule - 1) / kGranule) - 1;
}
size_t classBytes(int c) {
    return static_cast<size_t>(c + 1) * kGranule;
}

struct FreeBlock {
    FreeBlock* next;
};

struct FreeList {
    FreeBlock* head = nullptr;
    uint32_t count = 0;
};

// What threads share: batches of free blocks per class, bump regions left by
// exited threads, and the chunk counters. Never destroyed (versions may be
// freed from static destructors in any order).
class Pool {
  public:
    bool takeBatch(int c, FreeList& into) {
        std::lock_guard lock(mutex_);
        auto& batches = batches_[static_cast<size_t>(c)];
        if (batches.empty())
            return false;
        into = batches.back();
        batches.pop_back();
        pooled_ -= into.count;
        return true;
    }

    void putBatch(int c, FreeList batch) {
        if (batch.count == 0)
            return;
        std::lock_guard lock(mutex_);
        batches_[static_cast<size_t>(c)].push_back(batch);
        pooled_ += batch.count;
    }

    // A bump region [next, end) for a thread: one an exited thread left, or
    // a new chunk.
    std::pair<char*, char*> region() {
        {
            std::lock_guard lock(mutex_);
            if (!spare_.empty()) {
                auto r = spare_.back();
                spare_.pop_back();
                return r;
            }
        }
        bool advised = false;
        char* chunk = mapHugePageChunk(advised);
        if (chunk == nullptr)
            chunk = static_cast<char*>(::operator new(kHugePageBytes, std::align_val_t{kGranule}));
        chunks_.fetch_add(1, std::memory_order_relaxed);
        if (advised)
            hugeAdvised_.fetch_add(1, std::memory_order_relaxed);
        return {chunk, chunk + kHugePageBytes};
    }

    void putRegion(char* next, char* end) {
        if (end - next < static_cast<ptrdiff_t>(kMaxArenaBytes))
            return;  // too small to be worth keeping
        std::lock_guard lock(mutex_);
        spare_.emplace_back(next, end);
    }

    VersionArenaStats stats() {
        std::lock_guard lock(mutex_);
        return {true, chunks_.load(std::memory_order_relaxed),
                hugeAdvised_.load(std::memory_order_relaxed), pooled_};
    }

  private:
    std::mutex mutex_;
    std::array<std::vector<FreeList>, kClasses> batches_;
    std::vector<std::pair<char*, char*>> spare_;
    size_t pooled_ = 0;
    std::atomic<size_t> chunks_{0};
    std::atomic<size_t> hugeAdvised_{0};
};

Pool& pool() {
    static Pool* instance = new Pool;
    return *instance;
}

const bool kEnabled = [] {
#ifdef MVKV_VERSION_ARENA_ASAN
    return false;
#else
    const char* env = std::getenv("MVKV_VERSION_ARENA");
    return !(env != nullptr && std::string_view(env) == "0");
#endif
}();

// Set once this thread's cache is destroyed (thread exit): later frees on
// this thread go straight to the pool. A trivially destructible
// thread_local, so it stays readable through the whole of thread exit.
thread_local bool tCacheGone = false;

class ThreadCache {
  public:
    ~ThreadCache() {
        tCacheGone = true;
        for (int c = 0; c < kClasses; ++c)
            pool().putBatch(c, lists_[static_cast<size_t>(c)]);
        pool().putRegion(next_, end_);
    }

    void* allocate(int c) {
        FreeList& list = lists_[static_cast<size_t>(c)];
        if (list.head == nullptr && !pool().takeBatch(c, list))
            return bump(classBytes(c));
        FreeBlock* b = list.head;
        list.head = b->next;
        --list.count;
        return b;
    }

    void free(void* p, int c) {
        FreeList& list = lists_[static_cast<size_t>(c)];
        auto* b = static_cast<FreeBlock*>(p);
        b->next = list.head;
        list.head = b;
        if (++list.count < 2 * kBatch)
            return;
        // Keep kBatch, hand the newest kBatch to the pool.
        FreeList batch{list.head, kBatch};
        FreeBlock* last = list.head;
        for (uint32_t i = 1; i < kBatch; ++i)
            last = last->next;
        list.head = last->next;
        list.count -= kBatch;
        last->next = nullptr;
        pool().putBatch(c, batch);
    }

  private:
    void* bump(size_t bytes) {
        if (end_ - next_ < static_cast<ptrdiff_t>(bytes)) {
            // The old region's tail (under kMaxArenaBytes) is left unused.
            auto [next, end] = pool().region();
            next_ = next;
            end_ = end;
        }
        void* p = next_;
        next_ += bytes;
        return p;
    }

    std::array<FreeList, kClasses> lists_{};
    char* next_ = nullptr;
    char* end_ = nullptr;
};

thread_local ThreadCache tCache;

}  // namespace

void* allocateVersion(size_t bytes) {
    assert(bytes > 0);
    if (!kEnabled || bytes > kMaxArenaBytes)
        return ::operator new(bytes);
    if (tCacheGone) [[unlikely]] {
        FreeList one;
        int c = classOf(bytes);
        if (pool().takeBatch(c, one)) {
            // Keep the first block, give the rest back.
            FreeBlock* b = one.head;
            pool().putBatch(c, {b->next, one.count - 1});
            return b;
        }
        // Rare (allocating during thread exit): a whole class-sized block,
        // since its free puts it into the pool for reuse at that size.
        return ::operator new(classBytes(c));
    }
    return tCache.allocate(classOf(bytes));
}

void freeVersion(void* p, size_t bytes) {
    if (!kEnabled || bytes > kMaxArenaBytes) {
        ::operator delete(p);
        return;
    }
    if (tCacheGone) [[unlikely]] {
        auto* b = static_cast<FreeBlock*>(p);
        b->next = nullptr;
        pool().putBatch(classOf(bytes), {b, 1});
        return;
    }
    tCache.free(p, classOf(bytes));
}

VersionArenaStats versionArenaStats() {
    if (!kEnabled)
        return {false, 0, 0, 0};
    return pool().stats();
}

}  // namespace mvkv::mvcc
