// Helpers shared by the lock-manager test suites (tests/lockmgr_*_test.cpp).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lockmgr/lock_manager.h"
#include "lockmgr/lock_mode.h"
#include "lockmgr/locker.h"
#include "lockmgr/resource_id.h"
#include "util/status.h"

// Failure messages print modes, lock results and status codes by name.
namespace doctest {
template <>
struct StringMaker<mvkv::lockmgr::LockMode> {
    static String convert(mvkv::lockmgr::LockMode m) {
        return String(std::string(mvkv::lockmgr::modeName(m)).c_str());
    }
};
template <>
struct StringMaker<mvkv::lockmgr::LockResult> {
    static String convert(mvkv::lockmgr::LockResult r) {
        return String(std::string(mvkv::lockmgr::lockResultName(r)).c_str());
    }
};
template <>
struct StringMaker<mvkv::StatusCode> {
    static String convert(mvkv::StatusCode c) {
        return String(std::string(mvkv::statusCodeName(c)).c_str());
    }
};
}  // namespace doctest

namespace mvkv::lockmgr::testing {

// The collection most cases lock; begin() passes its name "db.c" along.
inline const ResourceId kColl = ResourceId::collection("db.c");

// Does `haystack` contain `needle`? (For checking error messages.)
inline bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

// Polls `pred` every 1 ms for up to ~10 s; the bound is a backstop against
// hangs when the code is broken, not a timing requirement.
template <class Pred>
bool eventually(Pred pred) {
    for (int i = 0; i < 10000; ++i) {
        if (pred())
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return pred();
}

// The lock table's entry for `id`, if it has one.
inline std::optional<LockHeadInfo> infoFor(const LockManager& mgr, ResourceId id) {
    for (LockHeadInfo& info : mgr.dump()) {
        if (info.resource == id)
            return std::move(info);
    }
    return std::nullopt;
}

// Lockers waiting in the queue of `id`, front to back.
inline std::vector<LockerId> queueOf(const LockManager& mgr, ResourceId id) {
    std::vector<LockerId> out;
    if (auto info = infoFor(mgr, id)) {
        for (const auto& e : info->waiting)
            out.push_back(e.locker);
    }
    return out;
}

// Lockers granted on `id` (any order), sorted.
inline std::vector<LockerId> holdersOf(const LockManager& mgr, ResourceId id) {
    std::vector<LockerId> out;
    if (auto info = infoFor(mgr, id)) {
        for (const auto& e : info->granted)
            out.push_back(e.locker);
    }
    std::sort(out.begin(), out.end());
    return out;
}

// `v` sorted, to compare with holdersOf().
inline std::vector<LockerId> sorted(std::vector<LockerId> v) {
    std::sort(v.begin(), v.end());
    return v;
}

// The lock table's own consistency check passes.
inline void checkInvariants(const LockManager& mgr) {
    CHECK(mgr.checkInvariants() == std::string());
}

// Only `locker` is on `id`, granted `mode`, nothing pending or queued.
inline void checkOnlyHolder(const LockManager& mgr, ResourceId id, LockerId locker, LockMode mode) {
    checkInvariants(mgr);
    auto info = infoFor(mgr, id);
    REQUIRE(info.has_value());
    REQUIRE(info->granted.size() == 1);
    CHECK(info->granted[0].locker == locker);
    CHECK(info->granted[0].mode == mode);
    CHECK(info->granted[0].convertMode == LockMode::kNone);
    CHECK(info->waiting.empty());
}

// The lock table is consistent and holds nothing at all.
inline void checkEmpty(const LockManager& mgr) {
    checkInvariants(mgr);
    CHECK(mgr.dump().empty());
}

// lockBegin that must succeed, returning its result.
inline LockResult begin(Locker& l, ResourceId id, LockMode mode) {
    auto r = l.lockBegin(id, mode, id == kColl ? "db.c" : "");
    REQUIRE(r.ok());
    return r.value();
}

}  // namespace mvkv::lockmgr::testing
