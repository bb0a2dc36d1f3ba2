// The lock manager's fast-path partitions: lockers are spread over
// kNumLockPartitions partitions by locker id, and each partition has one
// cache line holding its spin latch and what that latch guards outside the
// LockHeads: the partition's stock of free tickets (one count per ticket
// holder, see ticket_holder.h).
//
// Lock order: a partition latch is taken after any bucket mutex and after a
// ticket holder's mutex. Code holds one partition latch at a time, except a
// ticket holder that takes all of them, in index order, to reclaim stranded
// tickets, resize or count (ticket_holder.cpp); no latch holder ever waits
// for anything else, so that cannot deadlock.
//
// Thread safety: the fields are guarded by `latch`.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "util/spin_latch.h"

namespace mvkv::lockmgr {

/// Lockers are spread over this many fast-path partitions (by locker id).
inline constexpr size_t kNumLockPartitions = 16;

/// Ticket stocks per partition line: the read and the write holder.
inline constexpr size_t kTicketStocksPerPartition = 2;

/// One partition's latch and ticket stocks, on a cache line of its own, so
/// lockers in different partitions share nothing.
struct alignas(64) LockPartitionLatch {
    SpinLatch latch;
    // Free tickets this partition took from a holder's pool and keeps for
    // its next acquire (GUARDED_BY(latch)). Index: TicketHolder stock index.
    std::array<int32_t, kTicketStocksPerPartition> ticketStock{};
};
using LockPartitionLatches = std::array<LockPartitionLatch, kNumLockPartitions>;

}  // namespace mvkv::lockmgr
