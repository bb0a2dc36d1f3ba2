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
/// "locks"), cleared by resetOperation() when the next operation starts.
///
/// Every operation clears its set, so clearing must cost next to nothing:
/// the lock chain's fast path (Global, Database and Collection in IS or IX:
/// every point read and write) counts in one packed word cleared with one
/// store, and each other counter carries the tag of the operation that last
/// wrote it in its top 16 bits; a counter with another tag reads as zero.
/// Clearing is a new tag; every 65536 operations, when the tags come round,
/// the whole set is cleared, so that an old counter never passes for new.
class LockerLockStats {
  public:
    [[gnu::always_inline]] void add(ResourceType t, LockMode m, LockStatKind k, uint64_t n = 1) {
        const size_t i = LockStats::index(t, m, k);
        bump(counters_[i], n);
        auto& o = opCounters_[i];
        const uint64_t tag = opTag_.load(std::memory_order_relaxed);
        uint64_t v = o.load(std::memory_order_relaxed);
        if ((v & kTagMask) != tag)
            v = tag;  // the first of this operation
        o.store(v + n, std::memory_order_relaxed);
    }
    /// The lock chain's fast path: one acquisition each of Global, Database
    /// and Collection in the intent mode `m`.
    [[gnu::always_inline]] void addChain(LockMode m) {
        bump(counters_[LockStats::index(ResourceType::kGlobal, m, LockStatKind::kAcquireCount)]);
        bump(counters_[LockStats::index(ResourceType::kDatabase, m, LockStatKind::kAcquireCount)]);
        bump(counters_[LockStats::index(ResourceType::kCollection, m, LockStatKind::kAcquireCount)]);
        bump(opChains_, kChainOne[size_t(m)]);
    }
    LockStats snapshot() const;
    /// The current operation's counters (the owner, or a thread that knows
    /// no operation can start meanwhile: CurOp::snapshot's whileRunning).
    LockStats operationSnapshot() const;
    /// Owner thread: a new operation starts from zero.
    [[gnu::always_inline]] void resetOperation() {
        opChains_.store(0, std::memory_order_relaxed);
        const uint64_t tag = opTag_.load(std::memory_order_relaxed) + kTagOne;
        opTag_.store(tag, std::memory_order_relaxed);
        if (tag == 0) [[unlikely]]
            clearOperationCounters();
    }

  private:
    static constexpr uint64_t kTagOne = uint64_t{1} << 48;
    static constexpr uint64_t kTagMask = ~(kTagOne - 1);  // the count: the low 48 bits
    // opChains_ holds IS chains in its low 32 bits and IX chains in its high
    // 32 (an operation takes far fewer than 2^32 chains: one each yield; a
    // locker that never resets, as bench/workload_lockmgr.cpp's, would
    // carry IS into IX after 2^32 chains, so nobody reads its
    // operationStats).
    static constexpr unsigned chainShift(LockMode m) { return m == LockMode::kIX ? 32 : 0; }
    static constexpr uint64_t kChainOne[kLockModeCount] = {0, 1, uint64_t{1} << 32, 0, 0};  // by mode
    [[gnu::always_inline]] static void bump(std::atomic<uint64_t>& c, uint64_t n = 1) {
        c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    void clearOperationCounters();

    std::array<std::atomic<uint64_t>, LockStats::kSize> counters_{};
    std::array<std::atomic<uint64_t>, LockStats::kSize> opCounters_{};  // tag | count
    std::atomic<uint64_t> opChains_{0};  // addChain's, packed by mode
    std::atomic<uint64_t> opTag_{0};     // the current operation's tag (top 16 bits)
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
