// HistoryStore: the superseded versions that readers may still need, out of
// the update chains (WiredTiger's WiredTigerHS.wt, in memory). One per
// engine, a second instance of the generic B+tree keyed (collection id, key,
// start ts, counter) with HistoryEntry values. The history sweep
// (engine/history_sweeper.h) fills it and empties it; readers that find no
// visible version in a chain marked olderInHistory look here.
//
// Key layout (memcmp order = (collection, key, start ts) order): collection
// id as 4 big-endian bytes; the key with every 0x00 byte written 0x00 0xFF
// and ended by 0x00 0x01 (so no key's encoding is a prefix of another's);
// start ts and an insert counter as 8 big-endian bytes each (the counter
// keeps two entries with one start ts apart).
//
// Thread safety: every method may be called from any thread concurrently.
// Entries returned to a caller stay valid while the caller holds a pin of the
// EpochManager given at construction, taken before the call.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "btree/btree.h"
#include "historystore/history_entry.h"
#include "mvcc/transaction.h"
#include "mvcc/txn_manager.h"
#include "mvcc/update.h"
#include "util/epoch.h"

namespace mvkv::historystore {

class HistoryStore {
  public:
    /// Entries are retired through `epochs`, which must outlive the store.
    explicit HistoryStore(EpochManager& epochs);
    /// Frees every entry; no other thread may use the store then.
    ~HistoryStore();
    HistoryStore(const HistoryStore&) = delete;
    HistoryStore& operator=(const HistoryStore&) = delete;

    /// Records committed `version` of (collection, key), replaced by the
    /// committed version `stop`.
    void insert(uint32_t collection, std::string_view key, const mvcc::Update& version,
                const mvcc::Update& stop);

    /// A reader's reusable state (a cursor and key buffers), so a lookup
    /// allocates nothing once warm. One thread at a time; must not outlive
    /// the store.
    class Reader {
      public:
        explicit Reader(const HistoryStore& store) : cursor_(store.tree_) {}

      private:
        friend class HistoryStore;
        BTree::Cursor cursor_;
        std::string prefix_;
        std::string target_;
    };

    /// The entry of (collection, key) that `txn` reads: it can see the
    /// entry's writer and not the version that replaced it. Null when there
    /// is none. The caller pins the EpochManager. `reader` belongs to this
    /// store.
    const HistoryEntry* findVisible(Reader& reader, uint32_t collection, std::string_view key,
                                    const mvcc::Transaction& txn) const;

    /// Calls fn for every entry of (collection, key), newest start first.
    /// The caller pins the EpochManager. For inspection (the shell's
    /// history command): O(entries of the key).
    void forEachVersion(uint32_t collection, std::string_view key,
                        const std::function<void(const HistoryEntry&)>& fn) const;

    /// Removes the entries no reader can need: those whose replacing version
    /// is visible to all under `horizon`, and those of collections for which
    /// `dropped(collection id)` is true. Returns how many it removed.
    size_t discardObsolete(const mvcc::Horizon& horizon,
                           const std::function<bool(uint32_t)>& dropped);

    struct Stats {
        uint64_t entries = 0;
        uint64_t bytes = 0;  // entries' footprints plus their B+tree keys
        uint64_t inserts = 0;
        uint64_t removals = 0;
    };
    Stats stats() const;

  private:
    EpochManager& epochs_;
    BTree tree_;
    std::atomic<uint64_t> counter_{0};
    std::atomic<int64_t> entries_{0};
    std::atomic<int64_t> bytes_{0};
    std::atomic<uint64_t> inserts_{0};
    std::atomic<uint64_t> removals_{0};
};

}  // namespace mvkv::historystore
