// Lock statistics in MongoDB's shape.
//
// For every resource type and mode: acquireCount (every lock call, including
// recursive ones and conversions), acquireWaitCount (calls that had to wait),
// timeAcquiringMicros (time spent waiting) and deadlockCount (calls refused
// because waiting would have closed a cycle). Reported as
//   {"Global":{"acquireCount":{"r":3,"w":1}}, "Collection":{...}}
// with r/w for IS/IX and R/W for S/X; zero counters are left out.
//
// LockStats is a plain snapshot. LockerLockStats are one locker's live
// counters: only the owner thread writes them, with a relaxed load and store
// (no locked instruction on the hot path), and any thread may read them.
// InstanceLockStats is engine-wide: the sum of every live locker's counters
// plus those of lockers already destroyed.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <string>
#include <vector>

#include "lockmgr/lock_mode.h"
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
    void subtract(const LockStats& other);
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

/// One locker's counters: written by the owner thread only, readable by any.
/// Two sets: the locker's whole life, and the current operation's (what
/// currentOp, the slow-op log and the profiler show as an operation's
/// "locks"), cleared by resetOperation().
class LockerLockStats {
  public:
    [[gnu::always_inline]] void add(ResourceType t, LockMode m, LockStatKind k, uint64_t n = 1) {
        const size_t i = LockStats::index(t, m, k);
        auto& c = counters_[i];
        c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
        auto& o = opCounters_[i];
        uint64_t before = o.load(std::memory_order_relaxed);
        // Remember which counters the operation touched, so that clearing
        // them costs a store or three rather than the whole array.
        if (before == 0) {
            if (opTouched_ < kMaxTouched)
                touched_[opTouched_++] = static_cast<uint16_t>(i);
            else
                opOverflow_ = true;
        }
        o.store(before + n, std::memory_order_relaxed);
    }
    /// The lock chain's fast path: one acquisition each of Global, Database
    /// and Collection in `m`. The operation's share is one counter, not three.
    [[gnu::always_inline]] void addChain(LockMode m) {
        for (ResourceType t : {ResourceType::kGlobal, ResourceType::kDatabase,
                               ResourceType::kCollection}) {
            auto& c = counters_[LockStats::index(t, m, LockStatKind::kAcquireCount)];
            c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        }
        auto& o = opChains_[size_t(m)];
        o.store(o.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
    LockStats snapshot() const;
    /// The current operation's counters (any thread; each read once).
    LockStats operationSnapshot() const;
    /// Owner thread: a new operation starts from zero.
    [[gnu::always_inline]] void resetOperation() {
        if (opOverflow_) [[unlikely]] {
            resetAllOperation();
            return;
        }
        for (uint32_t j = 0; j < opTouched_; ++j)
            opCounters_[touched_[j]].store(0, std::memory_order_relaxed);
        opTouched_ = 0;
        for (auto& o : opChains_)
            o.store(0, std::memory_order_relaxed);
    }

  private:
    static constexpr uint32_t kMaxTouched = 16;
    void resetAllOperation();

    std::array<std::atomic<uint64_t>, LockStats::kSize> counters_{};
    std::array<std::atomic<uint64_t>, LockStats::kSize> opCounters_{};
    std::array<std::atomic<uint64_t>, kLockModeCount> opChains_{};  // addChain's, by mode
    std::array<uint16_t, kMaxTouched> touched_{};  // owner thread only
    uint32_t opTouched_ = 0;
    bool opOverflow_ = false;
};

/// Engine-wide counters: the live lockers (registered by their constructors)
/// plus the retired ones. Thread-safe.
class InstanceLockStats {
  public:
    void registerLocker(const LockerLockStats* stats);
    /// Folds the locker's counters into the retired total.
    void unregisterLocker(const LockerLockStats* stats);
    /// Sum over lockers (each counter read once; not an atomic cut), minus
    /// what was counted before the last reset().
    LockStats snapshot() const;
    void reset();

  private:
    LockStats sumLocked() const;  // requires mutex_

    mutable std::mutex mutex_;
    std::vector<const LockerLockStats*> live_;  // GUARDED_BY(mutex_)
    LockStats retired_;                         // GUARDED_BY(mutex_)
    LockStats baseline_;                        // GUARDED_BY(mutex_)
};

}  // namespace mvkv::lockmgr
