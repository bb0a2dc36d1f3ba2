// CappedState: the order and the totals of a capped collection's live
// entries, as of its newest commit, and the mutex that serialises its writers.
//
// Order: an entry's place is (commit timestamp of its newest write, key),
// oldest first. The timestamp is data that the oplog and checkpoints keep
// (a checkpoint stores it for capped collections and reloads each entry at
// it), so the order survives a restart and reaches a replica; rebuild() reads
// it back from the versions. A put/update of an existing key is a new write:
// the entry moves to the newest place. Keys written by one transaction share
// a timestamp and are ordered by key (capped writes by a Session are single
// operations: one key each, plus its evictions).
//
// Writers are serialised per collection (as MongoDB historically did): a
// writer holds writeMutex() from before it reads the state until its commit
// is visible and noted here, so each commit sees the one before it and its
// evictions keep the collection within its caps in every committed snapshot.
//
// Thread safety: every method but markStale()/stale() requires writeMutex().
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/collection_options.h"
#include "mvcc/timestamp.h"

namespace mvkv {
class BTree;
class EpochManager;
}  // namespace mvkv

namespace mvkv::engine {

class CappedState {
  public:
    explicit CappedState(const CollectionOptions& options) : options_(options) {}

    const CollectionOptions& options() const { return options_; }
    std::mutex& writeMutex() { return writeMutex_; }

    /// Writes that bypassed the capped path (oplog replay, a replica, a
    /// checkpoint load) make the state stale; the next capped writer
    /// rebuilds it from the data. A new collection starts stale when it is
    /// not empty-by-construction (see Collection).
    void markStale() { stale_.store(true, std::memory_order_release); }
    bool stale() const { return stale_.load(std::memory_order_acquire); }
    /// Reads every key's newest committed version from `tree` (its values
    /// are mvcc::Update chains) and orders the live ones.
    void rebuild(const BTree& tree, EpochManager& epochs);

    /// The oldest entries (never `key`) to remove so that, once `key` holds
    /// an entry of `entryBytes` key+value bytes, the collection is within
    /// its caps. The caller checked entryBytes <= cappedSizeBytes.
    std::vector<std::string> victimsFor(std::string_view key, int64_t entryBytes) const;
    /// After a commit: `key` now holds `entryBytes` written at `ts`, or
    /// (erase) no live entry.
    void noteWrite(std::string_view key, mvcc::Timestamp ts, int64_t entryBytes);
    void erase(std::string_view key);

    int64_t bytes() const { return bytes_; }
    int64_t count() const { return static_cast<int64_t>(byKey_.size()); }
    /// Keys oldest first (for tests and checks).
    std::vector<std::string> keysInOrder() const;

  private:
    struct Place {
        mvcc::Timestamp ts;
        int64_t bytes;
    };
    const CollectionOptions options_;
    std::mutex writeMutex_;
    std::atomic<bool> stale_{true};
    std::map<std::pair<mvcc::Timestamp, std::string>, int64_t> order_;  // -> entry bytes
    std::unordered_map<std::string, Place> byKey_;
    int64_t bytes_ = 0;
};

}  // namespace mvkv::engine
