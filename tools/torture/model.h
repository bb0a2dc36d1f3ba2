// The torture test's model (docs/reliability.md, "The torture test"): what
// every key of one worker held at every commit timestamp, as the worker
// committed it. Each worker is the only writer of its own collection, so its
// model is exact: a read of its keys at any timestamp the history still
// holds must return what the model says.
//
// Thread safety: one thread at a time (the worker's, or the parent's
// between two child processes).
#pragma once

#include <cstdint>
#include <cstdio>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mvkv/timestamp.h"

namespace mvkv::torture {

inline constexpr int kKeysPerWorker = 40;

inline std::string keyName(int k) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "k%02d", k);
    return buf;
}

/// One worker's keys: for each, its versions by commit timestamp
/// (nullopt: removed), oldest first.
class WorkerModel {
  public:
    using Value = std::optional<std::string>;

    /// The newest value of key k.
    Value now(int k) const {
        const auto& v = versions_[k];
        return v.empty() ? floor_[k] : std::prev(v.end())->second;
    }
    /// The value of key k a read at `ts` sees (the newest version at or
    /// below ts).
    Value at(int k, Timestamp ts) const {
        const auto& v = versions_[k];
        auto it = v.upper_bound(ts);
        if (it == v.begin())
            return floor_[k];
        return std::prev(it)->second;
    }
    void commit(int k, Timestamp ts, Value value) { versions_[k][ts] = std::move(value); }
    /// Forgets versions below `ts` that a read at or above it cannot see.
    void prune(Timestamp ts) {
        for (int k = 0; k < kKeysPerWorker; ++k) {
            auto& v = versions_[k];
            auto keep = v.upper_bound(ts);
            if (keep == v.begin())
                continue;
            --keep;  // the version a read at ts sees stays
            for (auto it = v.begin(); it != keep;)
                it = v.erase(it);
        }
    }
    /// Restarts the model from a recovered state: each key's value with no
    /// timestamped history (reads at older timestamps are not checked).
    void reset(const std::vector<Value>& values) {
        for (int k = 0; k < kKeysPerWorker; ++k) {
            versions_[k].clear();
            floor_[k] = values[k];
        }
    }

  private:
    std::map<Timestamp, Value> versions_[kKeysPerWorker];
    Value floor_[kKeysPerWorker];  // the value below every version held
};

}  // namespace mvkv::torture
