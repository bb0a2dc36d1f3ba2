// KeySlot: the VersionSlot of one key of a collection. The key's value slot
// in the collection's B+tree holds the key's newest Update itself (no chain
// object in between), so a writer publishes a version with the tree's
// compare-and-swap of that slot, and a reader goes leaf -> newest version.
//
// Thread safety: a KeySlot is for the one thread that made it; any number of
// KeySlots of the same key may work at once (the tree's compare-and-swap
// decides). The caller keeps the EpochManager pinned while it uses one and
// the versions it returns; the key's bytes must outlive it.
#pragma once

#include <optional>
#include <string_view>

#include "btree/btree.h"
#include "mvcc/update.h"

namespace mvkv::engine {

class KeySlot final : public mvcc::VersionSlot {
  public:
    /// Looks `key` up in `tree` (a null head when the key is absent).
    KeySlot(BTree& tree, std::string_view key) : tree_(tree), key_(key) {
        std::optional<BTree::Value> found = tree_.find(key_, &hint_);
        head_ = found ? static_cast<mvcc::Update*>(*found) : nullptr;
    }

    mvcc::Update* head() const override { return head_; }

    /// A null `expected` inserts the key; the tree's leaf latch makes the
    /// swap safe against concurrent splits. The hint from the lookup saves
    /// the descent while the leaf is unchanged.
    bool tryPrepend(mvcc::Update* expected, mvcc::Update* update) override {
        linkAbove(update, expected);
        std::optional<BTree::Value> current;
        if (expected)
            current = expected;
        if (tree_.compareExchange(key_, current, update, &hint_)) {
            head_ = update;
            return true;
        }
        head_ = current ? static_cast<mvcc::Update*>(*current) : nullptr;
        return false;
    }

  private:
    BTree& tree_;
    std::string_view key_;
    BTree::Hint hint_;
    mvcc::Update* head_;
};

}  // namespace mvkv::engine
