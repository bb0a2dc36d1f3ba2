#include "engine/capped_state.h"

#include "btree/btree.h"
#include "mvcc/update.h"
#include "util/epoch.h"

namespace mvkv::engine {

void CappedState::rebuild(const BTree& tree, EpochManager& epochs) {
    order_.clear();
    byKey_.clear();
    bytes_ = 0;
    BTree::Cursor c(tree);
    for (c.seekFirst(); c.valid(); c.next()) {
        auto pin = epochs.pin();
        const auto* u = static_cast<const mvcc::Update*>(c.value());
        while (u && u->state() != mvcc::UpdateState::kCommitted)
            u = u->next();
        if (u && !u->isTombstone())
            noteWrite(c.key(), u->startTs(),
                      static_cast<int64_t>(c.key().size() + u->value().size()));
    }
    stale_.store(false, std::memory_order_release);
}

std::vector<std::string> CappedState::victimsFor(std::string_view key, int64_t entryBytes) const {
    int64_t bytes = bytes_ + entryBytes;
    int64_t count = this->count() + 1;
    if (auto it = byKey_.find(std::string(key)); it != byKey_.end()) {
        bytes -= it->second.bytes;
        --count;
    }
    const int64_t maxDocs = options_.cappedMaxDocs;
    std::vector<std::string> out;
    for (auto it = order_.begin();
         it != order_.end() && (bytes > options_.cappedSizeBytes || (maxDocs > 0 && count > maxDocs));
         ++it) {
        if (it->first.second == key)
            continue;
        out.push_back(it->first.second);
        bytes -= it->second;
        --count;
    }
    return out;
}

void CappedState::erase(std::string_view key) {
    auto it = byKey_.find(std::string(key));
    if (it == byKey_.end())
        return;
    order_.erase({it->second.ts, it->first});
    bytes_ -= it->second.bytes;
    byKey_.erase(it);
}

void CappedState::noteWrite(std::string_view key, mvcc::Timestamp ts, int64_t entryBytes) {
    erase(key);
    order_.emplace(std::pair(ts, std::string(key)), entryBytes);
    byKey_.emplace(std::string(key), Place{ts, entryBytes});
    bytes_ += entryBytes;
}

std::vector<std::string> CappedState::keysInOrder() const {
    std::vector<std::string> out;
    for (const auto& [place, bytes] : order_)
        out.push_back(place.second);
    return out;
}

}  // namespace mvkv::engine
