#include "lockmgr/lock_mode.h"

namespace mvkv::lockmgr {

// The table in the header, checked at compile time against conflictMask().
static_assert(!conflicts(LockMode::kIS, modeMask(LockMode::kIS)));
static_assert(!conflicts(LockMode::kIS, modeMask(LockMode::kIX)));
static_assert(!conflicts(LockMode::kIS, modeMask(LockMode::kS)));
static_assert(conflicts(LockMode::kIS, modeMask(LockMode::kX)));
static_assert(!conflicts(LockMode::kIX, modeMask(LockMode::kIX)));
static_assert(conflicts(LockMode::kIX, modeMask(LockMode::kS)));
static_assert(conflicts(LockMode::kS, modeMask(LockMode::kIX)));
static_assert(!conflicts(LockMode::kS, modeMask(LockMode::kS)));
static_assert(conflicts(LockMode::kX, modeMask(LockMode::kIS)));
static_assert(isModeCovered(LockMode::kIS, LockMode::kS));
static_assert(!isModeCovered(LockMode::kS, LockMode::kIX));
static_assert(!isModeCovered(LockMode::kIX, LockMode::kS));
static_assert(isModeCovered(LockMode::kS, LockMode::kX));

std::string_view modeName(LockMode m) {
    switch (m) {
        case LockMode::kNone:
            return "NONE";
        case LockMode::kIS:
            return "IS";
        case LockMode::kIX:
            return "IX";
        case LockMode::kS:
            return "S";
        case LockMode::kX:
            return "X";
    }
    return "INVALID";
}

std::string_view modeStatsLetter(LockMode m) {
    switch (m) {
        case LockMode::kIS:
            return "r";
        case LockMode::kIX:
            return "w";
        case LockMode::kS:
            return "R";
        case LockMode::kX:
            return "W";
        case LockMode::kNone:
            break;
    }
    return "?";
}

std::string_view lockResultName(LockResult r) {
    switch (r) {
        case LockResult::kOk:
            return "OK";
        case LockResult::kWaiting:
            return "Waiting";
        case LockResult::kTimeout:
            return "Timeout";
        case LockResult::kDeadlock:
            return "Deadlock";
        case LockResult::kInterrupted:
            return "Interrupted";
    }
    return "Unknown";
}

}  // namespace mvkv::lockmgr
