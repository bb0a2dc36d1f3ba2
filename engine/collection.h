// Collection: one B+tree of key -> newest version (the head of the key's
// update chain, kept in the leaf slot itself), plus its accounting.
//
// A key enters the tree with its first version and its versions live as long
// as the collection (the history-store sweep of a later issue removes keys
// that end as obsolete tombstones, through the tree's removeIf hook and the
// EpochManager).
//
// Thread safety: all methods may be called concurrently. The collection is
// shared (shared_ptr) by the catalog and by operations that use it; a dropped
// collection stays valid for those still holding it and is freed after.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>

#include "btree/btree.h"
#include "engine/capped_state.h"
#include "engine/collection_options.h"
#include "engine/namespace.h"
#include "lockmgr/raii_locks.h"
#include "mvcc/update.h"
#include "util/epoch.h"

namespace mvkv::engine {

class Collection {
  public:
    /// `options` were validated (validateCollectionOptions).
    Collection(uint32_t id, Namespace ns, lockmgr::LockNamespace lockNs, EpochManager& epochs,
               const CollectionOptions& options = {});
    ~Collection();  // frees every version; no concurrent users remain by then
    Collection(const Collection&) = delete;
    Collection& operator=(const Collection&) = delete;

    uint32_t id() const { return id_; }
    const Namespace& ns() const { return ns_; }
    const lockmgr::LockNamespace& lockNs() const { return lockNs_; }
    const CollectionOptions& options() const { return options_; }
    /// A capped collection's order and write mutex (engine/capped_state.h);
    /// null for an ordinary collection.
    CappedState* capped() const { return capped_.get(); }
    /// `<db>.system.profile`: only the profiler (and oplog apply) write it.
    bool isProfile() const { return profile_; }
    /// A document lock collection (its name ends in ".lock":
    /// engine/document_lock_entry.h): commits that remove or rewrite its
    /// entries wake waiting acquisitions. Decided by name so that a
    /// replica's and a recovery's copies are lock collections too.
    bool isLockCollection() const { return lockCollection_; }
    const BTree& tree() const { return tree_; }
    /// For KeySlot, the writers' view of a key.
    BTree& tree() { return tree_; }

    /// The newest version of `key` (the head of its chain), or null when the
    /// key was never written. The caller pins the EpochManager.
    const mvcc::Update* newestVersion(std::string_view key) const {
        std::optional<BTree::Value> v = tree_.find(key);
        return v ? static_cast<const mvcc::Update*>(*v) : nullptr;
    }

    /// Set under the collection's X lock by drop; operations that find it set
    /// look the namespace up again.
    bool dropped() const { return dropped_.load(std::memory_order_acquire); }
    void markDropped() { dropped_.store(true, std::memory_order_release); }

    /// Live keys and their key+value bytes at the newest commit, maintained
    /// by committing transactions.
    void addCommitted(int64_t keys, int64_t bytes) {
        keys_.fetch_add(keys, std::memory_order_relaxed);
        bytes_.fetch_add(bytes, std::memory_order_relaxed);
    }
    int64_t keys() const { return keys_.load(std::memory_order_relaxed); }
    int64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

  private:
    const uint32_t id_;
    const Namespace ns_;
    const lockmgr::LockNamespace lockNs_;
    const CollectionOptions options_;
    const std::unique_ptr<CappedState> capped_;
    const bool profile_;
    const bool lockCollection_;
    BTree tree_;
    std::atomic<bool> dropped_{false};
    std::atomic<int64_t> keys_{0};
    std::atomic<int64_t> bytes_{0};
};

}  // namespace mvkv::engine
