#include "util/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace mvkv {

char* mapHugePageChunk(bool& advised) {
    advised = false;
    // Over-map by one chunk, then trim to an aligned chunk.
    void* raw = ::mmap(nullptr, 2 * kHugePageBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return nullptr;
    auto base = reinterpret_cast<uintptr_t>(raw);
    uintptr_t aligned = (base + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
    if (aligned > base)
        ::munmap(raw, aligned - base);
    uintptr_t end = base + 2 * kHugePageBytes;
    if (end > aligned + kHugePageBytes)
        ::munmap(reinterpret_cast<void*>(aligned + kHugePageBytes), end - (aligned + kHugePageBytes));
    auto* chunk = reinterpret_cast<char*>(aligned);
#ifdef MADV_HUGEPAGE
    // Fails harmlessly (EINVAL) where transparent huge pages are unavailable.
    advised = ::madvise(chunk, kHugePageBytes, MADV_HUGEPAGE) == 0;
#endif
    return chunk;
}

}  // namespace mvkv
