// LockWaiters: where acquisitions of a held document lock sleep until the
// lock may have become free (docs/document-locks.md, "Waiting").
//
// Truly pessimistic, no polling: the engine has one registry of stripes,
// each a mutex, a condition variable and a generation counter. A document
// lock (lock collection `ns`, document `key`) maps to one stripe by a hash of
// both. Every commit that removes or rewrites an entry of a lock collection
// bumps its stripe's generation and wakes the stripe's sleepers
// (Session's commit path: releases, take-overs, refreshes, the TTL monitor's
// deletes, a replica's or a recovery's applies alike).
//
// The protocol that loses no wake-up: a waiter reads generation() BEFORE its
// attempt (whose snapshot then sees every commit notified before that read),
// and sleeps only while the generation still has that value. Two locks on
// one stripe share wake-ups: a spurious one costs the waiter one attempt.
//
// Thread safety: every method may be called from any thread. Stripes live
// as long as the registry (the Engine).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string_view>

namespace mvkv::engine {

class LockWaiters {
  public:
    class Stripe {
      public:
        uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
        /// Wakes every sleeper without moving the generation: each rechecks
        /// its own condition (an interrupt).
        void wakeAll();

      private:
        friend class LockWaiters;
        std::mutex mutex_;
        std::condition_variable cv_;
        std::atomic<uint64_t> generation_{0};  // written under mutex_
    };

    enum class WaitResult : uint8_t { kChanged, kTimedOut, kInterrupted };

    Stripe& stripeFor(std::string_view lockNs, std::string_view key);
    /// A lock entry of (lockNs, key) was removed or rewritten by a commit
    /// that is now visible.
    void notify(std::string_view lockNs, std::string_view key);
    /// Sleeps until the stripe's generation differs from `seen`, `until`
    /// passes, or `interrupted` is set (checked under the stripe's mutex,
    /// so a setter that then calls wakeAll() is never missed).
    WaitResult wait(Stripe& stripe, uint64_t seen, std::chrono::steady_clock::time_point until,
                    const std::atomic<bool>& interrupted);

  private:
    static constexpr size_t kStripes = 64;
    std::array<Stripe, kStripes> stripes_;
};

}  // namespace mvkv::engine
