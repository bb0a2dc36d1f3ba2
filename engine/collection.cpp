#include "engine/collection.h"

#include <vector>

namespace mvkv::engine {

Collection::Collection(uint32_t id, Namespace ns, lockmgr::LockNamespace lockNs,
                       EpochManager& epochs)
    : id_(id), ns_(std::move(ns)), lockNs_(std::move(lockNs)), tree_(epochs) {}

Collection::~Collection() {
    std::vector<mvcc::UpdateChain*> chains;
    BTree::Cursor c(tree_);
    for (c.seekFirst(); c.valid(); c.next())
        chains.push_back(static_cast<mvcc::UpdateChain*>(c.value()));
    for (mvcc::UpdateChain* chain : chains)
        delete chain;
}

mvcc::UpdateChain* Collection::findChain(std::string_view key) const {
    auto v = tree_.find(key);
    return v ? static_cast<mvcc::UpdateChain*>(*v) : nullptr;
}

mvcc::UpdateChain* Collection::getOrCreateChain(std::string_view key) {
    if (mvcc::UpdateChain* existing = findChain(key))
        return existing;
    auto* fresh = new mvcc::UpdateChain();
    auto [value, inserted] = tree_.insertIfAbsent(key, fresh);
    if (!inserted)
        delete fresh;  // another writer created it first
    return static_cast<mvcc::UpdateChain*>(value);
}

}  // namespace mvkv::engine
