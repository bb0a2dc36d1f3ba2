// NodeArena implementation; the why is in arena.h.
#include "btree/arena.h"

#include <cassert>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <string_view>
#include <vector>

#include "util/asan_poison.h"
#include "util/huge_pages.h"

namespace mvkv::btree_detail {
namespace {

constexpr size_t kChunkBytes = kHugePageBytes;
constexpr size_t kMaxNodeBytes = size_t{64} << 10;

// A 2 MiB chunk aligned to 2 MiB (so that it can be one huge page); sets
// `advised` when the kernel accepted MADV_HUGEPAGE for it.
char* newChunk(bool& advised) {
    advised = false;
#ifndef MVKV_ASAN
    if (char* chunk = mapHugePageChunk(advised)) {
        return chunk;
    }
#endif
    // Heap fallback (and the AddressSanitizer build): still one contiguous
    // chunk; reachable from the arena, so LeakSanitizer scans it.
    return static_cast<char*>(::operator new(kChunkBytes, std::align_val_t{kChunkBytes}));
}

class Arena {
  public:
    void* allocate(size_t bytes) {
        assert(bytes % 64 == 0 && bytes > 0 && bytes <= kMaxNodeBytes);
        if (disabled_) {
            return ::operator new(bytes, std::align_val_t{64});
        }
        std::lock_guard<std::mutex> lock(mutex_);
        SizeClass& c = classFor(bytes);
        void* p;
        if (!c.free.empty()) {
            p = c.free.back();
            c.free.pop_back();
        } else {
            if (c.next == nullptr || c.end - c.next < static_cast<ptrdiff_t>(bytes)) {
                bool advised;
                c.next = newChunk(advised);
                c.end = c.next + kChunkBytes;
                MVKV_POISON(c.next, kChunkBytes);
                ++chunks_;
                hugeAdvised_ += advised ? 1 : 0;
                chunkList_.push_back(c.next);
            }
            p = c.next;
            c.next += bytes;
        }
        MVKV_UNPOISON(p, bytes);
        return p;
    }

    void free(void* p, size_t bytes) {
        if (disabled_) {
            ::operator delete(p, std::align_val_t{64});  // unsized: clang has no sized delete by default
            return;
        }
        std::lock_guard<std::mutex> lock(mutex_);
        MVKV_POISON(p, bytes);
        classFor(bytes).free.push_back(p);
    }

    NodeArenaStats stats() {
        std::lock_guard<std::mutex> lock(mutex_);
        return {chunks_, hugeAdvised_};
    }

  private:
    struct SizeClass {
        size_t bytes = 0;
        char* next = nullptr;  // bump pointer into the current chunk
        char* end = nullptr;
        std::vector<void*> free;
    };

    // There are two node sizes; a linear search over a few classes is enough.
    SizeClass& classFor(size_t bytes) {
        for (SizeClass& c : classes_) {
            if (c.bytes == bytes) {
                return c;
            }
        }
        classes_.emplace_back();
        classes_.back().bytes = bytes;
        return classes_.back();
    }

    // MVKV_BTREE_ARENA=0: every node from the heap, as before the arena (for
    // A/B measurements). Read once, before the first node exists.
    const bool disabled_ = [] {
        const char* env = std::getenv("MVKV_BTREE_ARENA");
        return env != nullptr && std::string_view(env) == "0";
    }();
    std::mutex mutex_;
    std::vector<SizeClass> classes_;  // never more than a few
    std::vector<char*> chunkList_;    // keeps heap chunks reachable for LeakSanitizer
    size_t chunks_ = 0;
    size_t hugeAdvised_ = 0;
};

// Never destroyed: nodes may be freed from static destructors of other
// translation units, in any order.
Arena& arena() {
    static Arena* instance = new Arena;
    return *instance;
}

}  // namespace

void* allocateNode(size_t bytes) {
    return arena().allocate(bytes);
}

void freeNode(void* node, size_t bytes) {
    arena().free(node, bytes);
}

NodeArenaStats nodeArenaStats() {
    return arena().stats();
}

}  // namespace mvkv::btree_detail
