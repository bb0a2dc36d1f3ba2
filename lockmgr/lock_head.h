// LockHead and PartitionedLockHead: the per-resource state inside the
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
//   6. partitions lists the partitions that may hold PartitionedLockHeads for
//      this resource; while it is non-empty, grantedModes has no S or X and the
//      conflict queue is empty.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "lockmgr/lock_request.h"

namespace mvkv::lockmgr {

struct LockPartition;

struct LockHead {
    explicit LockHead(ResourceId id) : resourceId(id) {}

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

    std::vector<LockPartition*> partitions;

    void incGranted(LockMode m) {
        if (grantedCounts[size_t(m)]++ == 0) grantedModes |= modeMask(m);
    }
    void decGranted(LockMode m) {
        if (--grantedCounts[size_t(m)] == 0) grantedModes &= ~modeMask(m);
    }
    void incConflict(LockMode m) {
        if (conflictCounts[size_t(m)]++ == 0) conflictModes |= modeMask(m);
    }
    void decConflict(LockMode m) {
        if (--conflictCounts[size_t(m)] == 0) conflictModes &= ~modeMask(m);
    }
    void incConverting(LockMode m) {
        ++conversionsCount;
        if (convertingCounts[size_t(m)]++ == 0) convertingModes |= modeMask(m);
    }
    void decConverting(LockMode m) {
        --conversionsCount;
        if (--convertingCounts[size_t(m)] == 0) convertingModes &= ~modeMask(m);
    }

    /// Granted modes of everyone but `r` (r must be in `granted`).
    uint32_t grantedModesExcept(const LockRequest* r) const {
        return grantedCounts[size_t(r->mode)] == 1 ? grantedModes & ~modeMask(r->mode)
                                                   : grantedModes;
    }

    bool empty() const { return granted.empty() && conflict.empty() && partitions.empty(); }

    /// Returns an empty string when invariants 1-5 hold, else what is wrong.
    std::string checkInvariants() const;
};

/// Intent-mode requests of one partition for one resource. They are all
/// granted (intent modes never conflict with each other) and are not visible
/// in the LockHead until an S or X request migrates them there.
struct PartitionedLockHead {
    LockRequestList granted;
};

}  // namespace mvkv::lockmgr
