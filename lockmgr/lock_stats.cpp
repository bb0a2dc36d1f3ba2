#include "lockmgr/lock_stats.h"

#include <nlohmann/json.hpp>

namespace mvkv::lockmgr {
namespace {

constexpr std::array<std::string_view, kLockStatKinds> kKindNames = {
    "acquireCount", "acquireWaitCount", "timeAcquiringMicros", "deadlockCount"};

}  // namespace

void LockStats::append(const LockStats& other) {
    for (size_t i = 0; i < kSize; ++i) counters_[i] += other.counters_[i];
}

std::string LockStats::toJson() const {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (int t = 1; t < kResourceTypeCount; ++t) {
        nlohmann::ordered_json typeDoc = nlohmann::ordered_json::object();
        for (int k = 0; k < kLockStatKinds; ++k) {
            nlohmann::ordered_json kindDoc = nlohmann::ordered_json::object();
            for (int m = 1; m < kLockModeCount; ++m) {
                uint64_t v = counters_[index(ResourceType(t), LockMode(m), LockStatKind(k))];
                if (v) kindDoc[std::string(modeStatsLetter(LockMode(m)))] = v;
            }
            if (!kindDoc.empty()) typeDoc[std::string(kKindNames[size_t(k)])] = kindDoc;
        }
        if (!typeDoc.empty()) out[std::string(resourceTypeName(ResourceType(t)))] = typeDoc;
    }
    return out.dump();
}

LockStats InstanceLockStats::snapshot() const {
    LockStats out;
    for (const auto& p : parts_) {
        for (size_t i = 0; i < LockStats::kSize; ++i) {
            uint64_t v = p.counters[i].load(std::memory_order_relaxed);
            if (v) {
                // Recover (type, mode, kind) from the flat index.
                size_t k = i % kLockStatKinds;
                size_t m = (i / kLockStatKinds) % kLockModeCount;
                size_t t = i / (kLockStatKinds * kLockModeCount);
                out.add(ResourceType(t), LockMode(m), LockStatKind(k), v);
            }
        }
    }
    return out;
}

void InstanceLockStats::reset() {
    for (auto& p : parts_) {
        for (auto& c : p.counters) c.store(0, std::memory_order_relaxed);
    }
}

}  // namespace mvkv::lockmgr
