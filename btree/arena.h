// NodeArena: where B+tree nodes live. Not part of the public API.
//
// Why: a point lookup visits one node per level, and on a machine whose TLB
// misses are expensive (virtualised, nested paging) a miss per level costs
// more than the cache miss itself. Nodes are therefore carved out of 2 MiB
// chunks (mmap, aligned to 2 MiB, madvise(MADV_HUGEPAGE)), so that one TLB
// entry covers ~850 nodes where a 4 KiB page covers one or two. Each node size
// (leaf, inner) gets chunks of its own, so the few inner nodes, which every
// lookup visits, share a handful of huge pages. When transparent huge pages
// are off or mmap fails, chunks are still used (ordinary pages, or the heap).
//
// Lifetime: process-wide and never torn down. Freed nodes go onto a free list
// of their size and are reused by later allocations (of any tree); chunks are
// not returned to the system. The B+tree frees nodes only in ~BTree, when no
// other thread may use the tree, so no reader can still hold a pointer to a
// node that goes onto the free list (a future node merge would have to retire
// nodes through the EpochManager first and free them from the deleter).
//
// Thread safety: allocate and free may be called from any thread; one mutex
// (allocations happen on splits only, once per ~32 inserts).
//
// Under AddressSanitizer chunks come from the heap (so LeakSanitizer scans
// them for the key blobs they point to) and free space is poisoned, so a use
// of a freed node is still reported.
#pragma once

#include <cstddef>

namespace mvkv::btree_detail {

/// Memory for one node of `bytes` (a multiple of 64, at most 64 KiB), aligned
/// to 64. Never fails (allocation failure is fatal).
void* allocateNode(size_t bytes);

/// Gives back a node from allocateNode(bytes), for reuse.
void freeNode(void* node, size_t bytes);

struct NodeArenaStats {
    size_t chunks;      // 2 MiB chunks obtained so far
    size_t hugeAdvised; // of those, how many got madvise(MADV_HUGEPAGE)
};
NodeArenaStats nodeArenaStats();

}  // namespace mvkv::btree_detail
