#include "lockmgr/lock_head.h"

#include <fmt/format.h>

namespace mvkv::lockmgr {

// Reads the slots under their latches, hence not const.
std::string LockHead::checkInvariants() {
    std::array<uint32_t, kLockModeCount> g{}, c{}, conv{};
    uint32_t compatFirst = 0;
    for (const LockRequest* r = granted.front(); r; r = r->next) {
        if (r->status != LockRequest::Status::kGranted &&
            r->status != LockRequest::Status::kConverting) {
            return fmt::format("{}: request of locker {} in granted list has status {}",
                               resourceId.toString(), r->lockerId, int(r->status));
        }
        ++g[size_t(r->mode)];
        if (r->status == LockRequest::Status::kConverting)
            ++conv[size_t(r->convertMode)];
        if (r->compatibleFirst)
            ++compatFirst;
        for (const LockRequest* o = r->next; o; o = o->next) {
            if (conflicts(r->mode, modeMask(o->mode))) {
                return fmt::format(
                    "{}: granted {} (locker {}) conflicts with granted {} (locker {})",
                    resourceId.toString(), modeName(r->mode), r->lockerId, modeName(o->mode),
                    o->lockerId);
            }
        }
    }
    for (const LockRequest* r = conflict.front(); r; r = r->next) {
        if (r->status != LockRequest::Status::kWaiting) {
            return fmt::format("{}: request of locker {} in wait queue has status {}",
                               resourceId.toString(), r->lockerId, int(r->status));
        }
        ++c[size_t(r->mode)];
    }
    uint32_t conversions = 0;
    for (int m = 0; m < kLockModeCount; ++m) {
        auto mode = LockMode(m);
        bool gBit = (grantedModes & modeMask(mode)) != 0;
        bool cBit = (conflictModes & modeMask(mode)) != 0;
        bool vBit = (convertingModes & modeMask(mode)) != 0;
        if (g[size_t(m)] != grantedCounts[size_t(m)] || gBit != (g[size_t(m)] > 0)) {
            return fmt::format("{}: granted count for {} is {}, list has {}", resourceId.toString(),
                               modeName(mode), grantedCounts[size_t(m)], g[size_t(m)]);
        }
        if (c[size_t(m)] != conflictCounts[size_t(m)] || cBit != (c[size_t(m)] > 0)) {
            return fmt::format("{}: conflict count for {} is {}, queue has {}",
                               resourceId.toString(), modeName(mode), conflictCounts[size_t(m)],
                               c[size_t(m)]);
        }
        if (conv[size_t(m)] != convertingCounts[size_t(m)] || vBit != (conv[size_t(m)] > 0)) {
            return fmt::format("{}: converting count for {} is {}, list has {}",
                               resourceId.toString(), modeName(mode), convertingCounts[size_t(m)],
                               conv[size_t(m)]);
        }
        conversions += conv[size_t(m)];
    }
    if (conversions != conversionsCount) {
        return fmt::format("{}: conversionsCount {} but {} converting", resourceId.toString(),
                           conversionsCount, conversions);
    }
    if (compatFirst != compatibleFirstCount) {
        return fmt::format("{}: compatibleFirstCount {} but {} granted", resourceId.toString(),
                           compatibleFirstCount, compatFirst);
    }
    if (openSlots != 0 && ((grantedModes & (modeMask(LockMode::kS) | modeMask(LockMode::kX))) ||
                           !conflict.empty() || conversionsCount != 0)) {
        return fmt::format("{}: partitioned while S/X granted, requests queued or converting",
                           resourceId.toString());
    }
    for (size_t p = 0; p < kNumLockPartitions; ++p) {
        std::lock_guard<SpinLatch> latched(*slots[p].latch);
        bool bit = (openSlots >> p) & 1u;
        if (bit != slots[p].open) {
            return fmt::format("{}: slot {} open={} but openSlots bit={}", resourceId.toString(), p,
                               slots[p].open, bit);
        }
        if (!slots[p].open && !slots[p].granted.empty()) {
            return fmt::format("{}: closed slot {} holds requests", resourceId.toString(), p);
        }
        for (const LockRequest* r = slots[p].granted.front(); r; r = r->next) {
            if (!isIntentMode(r->mode) || r->partitionSlot != &slots[p]) {
                return fmt::format("{}: slot {} holds a {} request of locker {}",
                                   resourceId.toString(), p, modeName(r->mode), r->lockerId);
            }
        }
    }
    return {};
}

}  // namespace mvkv::lockmgr
