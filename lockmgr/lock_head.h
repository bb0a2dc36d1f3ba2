// LockHead and LockPartitionSlot: the per-resource state inside the
// LockManager. Internal to lockmgr/; callers go through Locker.
//
// Invariants of a LockHead (checked by checkInvariants() in tests):
//   1. grantedCounts[m] == number of requests in `granted` whose mode is m,
//      and bit m of grantedModes is set iff grantedCounts[m] > 0.
//   2. The same for conflictCounts/conflictModes over `conflict`.
//   3. convertingCounts[m] == requests in `granted` with status kConverting and
//      convertMode m; conversionsCount is their total.
//   4. No two requests in `granted` conflict with each other (their granted
//      modes, not pending conversion targets).
//   5. compatibleFirstCount == granted requests with compatibleFirst set.
//   6. Bit p of openSlots is set iff slots[p].open; while any is set,
//      grantedModes has no S or X, the conflict queue is empty and no
//      conversion is pending. A closed slot holds no request.
//
// LockHeads are created on first use and live as long as the LockManager
// (about 1 KB each: one per distinct resource name ever locked), so the fast
// path can find one without taking the bucket mutex.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "lockmgr/lock_partition.h"
#include "lockmgr/lock_request.h"
#include "util/spin_latch.h"

namespace mvkv::lockmgr {

/// One partition's intent-mode requests on one resource. They are all granted
/// (intent modes never conflict with each other) and are not in the LockHead's
/// lists until an S or X request migrates them there. Cache-line sized, so
/// lockers in different partitions share no line.
struct alignas(64) LockPartitionSlot {
    SpinLatch* latch = nullptr;  // the partition's latch (LockPartitionLatch), set once
    bool open = false;           // GUARDED_BY(*latch): the fast path may add here
    LockRequestList granted;     // GUARDED_BY(*latch)
};

struct LockHead {
    LockHead(ResourceId id, LockPartitionLatches& latches) : resourceId(id) {
        for (size_t p = 0; p < kNumLockPartitions; ++p)
            slots[p].latch = &latches[p].latch;
    }

    const ResourceId resourceId;
    std::string name;  // for descriptions; empty when never given

    LockRequestList granted;
    std::array<uint32_t, kLockModeCount> grantedCounts{};
    uint32_t grantedModes = 0;

    LockRequestList conflict;  // FIFO wait queue, granted front to back
    std::array<uint32_t, kLockModeCount> conflictCounts{};
    uint32_t conflictModes = 0;

    std::array<uint32_t, kLockModeCount> convertingCounts{};
    uint32_t convertingModes = 0;
    uint32_t conversionsCount = 0;

    uint32_t compatibleFirstCount = 0;

    uint32_t openSlots = 0;  // bitmask of open slots; guarded by the bucket mutex
    std::array<LockPartitionSlot, kNumLockPartitions> slots;

    LockHead* nextInBucket = nullptr;  // immutable once the head is published

    void incGranted(LockMode m) {
        if (grantedCounts[size_t(m)]++ == 0)
            grantedModes |= modeMask(m);
    }
    void decGranted(LockMode m) {
        if (--grantedCounts[size_t(m)] == 0)
            grantedModes &= ~modeMask(m);
    }
    void incConflict(LockMode m) {
        if (conflictCounts[size_t(m)]++ == 0)
            conflictModes |= modeMask(m);
    }
    void decConflict(LockMode m) {
        if (--conflictCounts[size_t(m)] == 0)
            conflictModes &= ~modeMask(m);
    }
    void incConverting(LockMode m) {
        ++conversionsCount;
        if (convertingCounts[size_t(m)]++ == 0)
            convertingModes |= modeMask(m);
    }
    void decConverting(LockMode m) {
        --conversionsCount;
        if (--convertingCounts[size_t(m)] == 0)
            convertingModes &= ~modeMask(m);
    }

    /// Granted modes of everyone but `r` (r must be in `granted`).
    uint32_t grantedModesExcept(const LockRequest* r) const {
        return grantedCounts[size_t(r->mode)] == 1 ? grantedModes & ~modeMask(r->mode)
                                                   : grantedModes;
    }

    /// Returns an empty string when invariants 1-6 hold, else what is wrong.
    /// Requires the bucket mutex.
    std::string checkInvariants();
};

}  // namespace mvkv::lockmgr
