#include "lockmgr/lock_stats.h"

#include <initializer_list>
#include <string>

namespace mvkv::lockmgr {
namespace {

constexpr std::array<std::string_view, kLockStatKinds> kKindNames = {
    "acquireCount", "acquireWaitCount", "timeAcquiringMicros", "deadlockCount"};

}  // namespace

void LockStats::append(const LockStats& other) {
    for (size_t i = 0; i < kSize; ++i)
        counters_[i] += other.counters_[i];
}

std::string LockStats::toJson() const {
    // Written as text: every profiled or slow operation renders one, and the
    // names are fixed identifiers that need no escaping.
    std::string out = "{";
    for (int t = 1; t < kResourceTypeCount; ++t) {
        bool typeOpen = false;
        for (int k = 0; k < kLockStatKinds; ++k) {
            bool kindOpen = false;
            for (int m = 1; m < kLockModeCount; ++m) {
                uint64_t v = counters_[index(ResourceType(t), LockMode(m), LockStatKind(k))];
                if (v == 0)
                    continue;
                if (!typeOpen) {
                    out += out.size() > 1 ? ",\"" : "\"";
                    out += resourceTypeName(ResourceType(t));
                    out += "\":{";
                    typeOpen = true;
                }
                if (!kindOpen) {
                    if (out.back() != '{')
                        out += ',';
                    out += '"';
                    out += kKindNames[size_t(k)];
                    out += "\":{";
                    kindOpen = true;
                } else {
                    out += ',';
                }
                out += '"';
                out += modeStatsLetter(LockMode(m));
                out += "\":";
                out += std::to_string(v);
            }
            if (kindOpen)
                out += '}';
        }
        if (typeOpen)
            out += '}';
    }
    out += '}';
    return out;
}

void LockStats::subtract(const LockStats& other) {
    for (size_t i = 0; i < kSize; ++i)
        counters_[i] -= other.counters_[i];
}

namespace {
/// The counters of `counters` as a LockStats: each one's value through
/// `value` (0 leaves it out).
template <typename Value>
LockStats snapshotOf(const std::array<std::atomic<uint64_t>, LockStats::kSize>& counters,
                     Value&& value) {
    LockStats out;
    for (size_t i = 0; i < LockStats::kSize; ++i) {
        uint64_t v = value(counters[i].load(std::memory_order_relaxed));
        if (v) {
            // Recover (type, mode, kind) from the flat index.
            size_t k = i % kLockStatKinds;
            size_t m = (i / kLockStatKinds) % kLockModeCount;
            size_t t = i / (kLockStatKinds * kLockModeCount);
            out.add(ResourceType(t), LockMode(m), LockStatKind(k), v);
        }
    }
    return out;
}
}  // namespace

LockStats LockerLockStats::snapshot() const {
    return snapshotOf(counters_, [](uint64_t v) { return v; });
}

LockStats LockerLockStats::operationSnapshot() const {
    const uint64_t tag = opTag_.load(std::memory_order_relaxed);
    LockStats out = snapshotOf(opCounters_, [tag](uint64_t v) {
        return (v & kTagMask) == tag ? v & ~kTagMask : 0;  // another tag: an older operation's
    });
    const uint64_t chains = opChains_.load(std::memory_order_relaxed);
    for (LockMode m : {LockMode::kIS, LockMode::kIX}) {
        const uint64_t n = (chains >> chainShift(m)) & 0xffffffffu;
        if (n == 0)
            continue;
        for (ResourceType t :
             {ResourceType::kGlobal, ResourceType::kDatabase, ResourceType::kCollection})
            out.add(t, m, LockStatKind::kAcquireCount, n);
    }
    return out;
}

void LockerLockStats::clearOperationCounters() {
    // The tags came round: no counter may keep one that could match again.
    for (auto& c : opCounters_)
        c.store(0, std::memory_order_relaxed);
}

void InstanceLockStats::registerLocker(const LockerLockStats* stats) {
    std::lock_guard<std::mutex> g(mutex_);
    live_.push_back(stats);
}

void InstanceLockStats::unregisterLocker(const LockerLockStats* stats) {
    LockStats last = stats->snapshot();
    std::lock_guard<std::mutex> g(mutex_);
    std::erase(live_, stats);
    retired_.append(last);
}

LockStats InstanceLockStats::sumLocked() const {
    LockStats out = retired_;
    for (const LockerLockStats* s : live_)
        out.append(s->snapshot());
    return out;
}

LockStats InstanceLockStats::snapshot() const {
    std::lock_guard<std::mutex> g(mutex_);
    LockStats out = sumLocked();
    out.subtract(baseline_);
    return out;
}

void InstanceLockStats::reset() {
    std::lock_guard<std::mutex> g(mutex_);
    baseline_ = sumLocked();
}

}  // namespace mvkv::lockmgr
