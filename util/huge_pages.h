// Memory in 2 MiB chunks that the kernel may back with transparent huge
// pages: one TLB entry per chunk instead of 512. The B+tree's nodes and the
// MVCC versions are carved out of such chunks (btree/arena.h,
// mvcc/version_arena.h); both are reached by random point lookups, where a
// TLB miss (costly under virtualisation: nested paging) adds to every cache
// miss.
#pragma once

#include <cstddef>

namespace mvkv {

/// One x86-64 huge page.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

/// kHugePageBytes of fresh zeroed memory aligned to kHugePageBytes, with
/// madvise(MADV_HUGEPAGE) asked for; `advised` tells whether the kernel
/// accepted it. Null when mmap fails: the caller falls back to the heap.
/// The B+tree and version arenas never unmap theirs; a BlockPool
/// (util/block_pool.h) unmaps its own with munmap. Thread-safe.
char* mapHugePageChunk(bool& advised);

}  // namespace mvkv
