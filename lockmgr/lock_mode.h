// Lock modes, their conflict table, and the result of a lock-manager call.
//
// The four modes of seed 002 / MongoDB: intent shared (IS, "r"), intent
// exclusive (IX, "w"), shared (S, "R") and exclusive (X, "W"). The conflict
// table (+ = compatible):
//
//   requested \ granted   IS   IX   S    X
//   IS                    +    +    +
//   IX                    +    +
//   S                     +         +
//   X
//
// Mode sets are bitmasks (1 << mode), so "does mode m conflict with anything
// granted" is one AND against the granted-modes mask: O(1).
#pragma once

#include <cstdint>
#include <string_view>

namespace mvkv::lockmgr {

enum class LockMode : uint8_t { kNone = 0, kIS = 1, kIX = 2, kS = 3, kX = 4 };
inline constexpr int kLockModeCount = 5;

/// Outcome of a single lock-manager step.
enum class LockResult : uint8_t {
    kOk,           // granted
    kWaiting,      // queued; the grant arrives through the request's notification
    kTimeout,      // the deadline passed before the grant
    kDeadlock,     // waiting would close a cycle in the waits-for graph
    kInterrupted,  // the waiting locker was interrupted
};

constexpr uint32_t modeMask(LockMode m) {
    return 1u << static_cast<unsigned>(m);
}
constexpr int modeIndex(LockMode m) {
    return static_cast<int>(m);
}

/// True for IS, IX, S, X (not kNone, not an out-of-range value).
constexpr bool isValidMode(LockMode m) {
    return static_cast<unsigned>(m) >= 1 && static_cast<unsigned>(m) < kLockModeCount;
}

/// Bitmask of the modes that conflict with `m`.
constexpr uint32_t conflictMask(LockMode m) {
    switch (m) {
        case LockMode::kNone:
            return 0;
        case LockMode::kIS:
            return modeMask(LockMode::kX);
        case LockMode::kIX:
            return modeMask(LockMode::kS) | modeMask(LockMode::kX);
        case LockMode::kS:
            return modeMask(LockMode::kIX) | modeMask(LockMode::kX);
        case LockMode::kX:
            return modeMask(LockMode::kIS) | modeMask(LockMode::kIX) | modeMask(LockMode::kS) |
                   modeMask(LockMode::kX);
    }
    return 0;
}

/// Does requesting `m` conflict with any mode in the set `modes`?
constexpr bool conflicts(LockMode m, uint32_t modes) {
    return (conflictMask(m) & modes) != 0;
}

/// Does holding `held` give everything `wanted` asks for? (X covers all; S and
/// IX cover IS; IX does not cover S nor S cover IX.)
constexpr bool isModeCovered(LockMode wanted, LockMode held) {
    return (conflictMask(wanted) & ~conflictMask(held)) == 0;
}

/// IS and S are shared modes (read tickets); IX and X exclusive ones.
constexpr bool isSharedMode(LockMode m) {
    return m == LockMode::kIS || m == LockMode::kS;
}
constexpr bool isIntentMode(LockMode m) {
    return m == LockMode::kIS || m == LockMode::kIX;
}

/// "IS", "IX", "S", "X" or "NONE".
std::string_view modeName(LockMode m);
/// MongoDB's stats letters: r (IS), w (IX), R (S), W (X).
std::string_view modeStatsLetter(LockMode m);
std::string_view lockResultName(LockResult r);

}  // namespace mvkv::lockmgr
