// VersionArena: where versions live: mvcc::Update objects (Update::make and
// Update::destroy) and the history store's entries (HistoryEntry::make and
// destroy). Not part of the public API.
//
// Why: a point read ends at the key's newest version, a random address among
// millions. From the general heap (4 KiB pages) that is a TLB miss on top of
// the cache miss, and a costly one under virtualisation; perf at 1M keys put
// that load at ~30% of a read. Versions are therefore carved out of 2 MiB
// chunks advised for transparent huge pages (util/huge_pages.h), as the
// B+tree's nodes are. We do not link a general allocator (mimalloc,
// jemalloc) for this: Debian's shared builds replace the host process's
// malloc, which a library must not do.
//
// Shape: size classes of 8 bytes up to kMaxArenaBytes (larger versions come
// from operator new: their copy costs more than the TLB miss). Each thread
// keeps a free list per class and a bump region of its own, so the write
// path takes no lock; a thread that frees much more than it allocates (a
// sweeper) hands batches to a global pool that allocating threads draw from,
// and a thread that exits hands back all it holds. Memory is reused, never
// returned to the system.
//
// Thread safety: both functions may be called from any thread, including
// during thread exit. A block may be freed by a thread other than the one
// that allocated it. Under AddressSanitizer the arena is off (operator new
// and delete, so uses after free are still caught); MVKV_VERSION_ARENA=0 in
// the environment turns it off too, for A/B measurements.
#pragma once

#include <cstddef>

namespace mvkv::mvcc {

inline constexpr size_t kMaxArenaBytes = 1024;

/// Memory for one version of `bytes` (> 0), aligned to 8. Never fails
/// (allocation failure is fatal).
void* allocateVersion(size_t bytes);

/// Gives back `p` from allocateVersion(bytes), with the same `bytes`.
void freeVersion(void* p, size_t bytes);

struct VersionArenaStats {
    bool enabled;
    size_t chunks;       // 2 MiB chunks mapped so far
    size_t hugeAdvised;  // of those, how many the kernel accepted MADV_HUGEPAGE for
    size_t pooledBlocks; // free blocks in the global pool now
};
VersionArenaStats versionArenaStats();

}  // namespace mvkv::mvcc
