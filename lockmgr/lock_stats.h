// Lock statistics in MongoDB's shape.
//
// For every resource type and mode: acquireCount (every lock call, including
// recursive ones and conversions), acquireWaitCount (calls that had to wait),
// timeAcquiringMicros (time spent waiting) and deadlockCount (calls refused
// because waiting would have closed a cycle). Reported as
//   {"Global":{"acquireCount":{"r":3,"w":1}}, "Collection":{...}}
// with r/w for IS/IX and R/W for S/X; zero counters are left out.
//
// LockStats is one locker's (owner thread only). InstanceLockStats is
// engine-wide: partitioned by locker id and cache-line aligned so concurrent
// lockers do not share counters; snapshot() sums the partitions.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "lockmgr/lock_mode.h"
#include "lockmgr/lock_request.h"
#include "lockmgr/resource_id.h"

namespace mvkv::lockmgr {

enum class LockStatKind : uint8_t {
    kAcquireCount = 0,
    kAcquireWaitCount,
    kTimeAcquiringMicros,
    kDeadlockCount,
};
inline constexpr int kLockStatKinds = 4;

/// One locker's counters (plain integers: owner thread only).
class LockStats {
public:
    void add(ResourceType t, LockMode m, LockStatKind k, uint64_t n = 1) {
        counters_[index(t, m, k)] += n;
    }
    uint64_t get(ResourceType t, LockMode m, LockStatKind k) const {
        return counters_[index(t, m, k)];
    }
    void append(const LockStats& other);
    void reset() { counters_.fill(0); }
    /// MongoDB's "locks" document as JSON text.
    std::string toJson() const;

    static size_t index(ResourceType t, LockMode m, LockStatKind k) {
        return (size_t(t) * kLockModeCount + size_t(m)) * kLockStatKinds + size_t(k);
    }
    static constexpr size_t kSize = size_t(kResourceTypeCount) * kLockModeCount * kLockStatKinds;

private:
    std::array<uint64_t, kSize> counters_{};
};

/// Engine-wide counters; add() is thread-safe and does not contend across
/// lockers in different partitions.
class InstanceLockStats {
public:
    void add(LockerId locker, ResourceType t, LockMode m, LockStatKind k, uint64_t n = 1) {
        parts_[locker % kPartitions].counters[LockStats::index(t, m, k)].fetch_add(
            n, std::memory_order_relaxed);
    }
    /// A sum over partitions (each counter read once; not an atomic cut).
    LockStats snapshot() const;
    void reset();

private:
    static constexpr size_t kPartitions = 16;
    struct alignas(64) Partition {
        std::array<std::atomic<uint64_t>, LockStats::kSize> counters{};
    };
    std::array<Partition, kPartitions> parts_;
};

}  // namespace mvkv::lockmgr
