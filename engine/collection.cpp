#include "engine/collection.h"

#include <vector>

#include "engine/document_lock_entry.h"

namespace mvkv::engine {

Collection::Collection(uint32_t id, Namespace ns, lockmgr::LockNamespace lockNs,
                       EpochManager& epochs, const CollectionOptions& options)
    : id_(id),
      ns_(std::move(ns)),
      lockNs_(std::move(lockNs)),
      options_(options),
      capped_(options.capped ? std::make_unique<CappedState>(options) : nullptr),
      profile_(ns_.coll() == Namespace::kProfileColl),
      lockCollection_(wakesLockWaiters(ns_.coll())),
      tree_(epochs) {}

Collection::~Collection() {
    // No other user remains: no pin needed, nothing is retired concurrently.
    std::vector<mvcc::Update*> heads;
    BTree::Cursor c(tree_);
    for (c.seekFirst(); c.valid(); c.next())
        heads.push_back(static_cast<mvcc::Update*>(c.value()));
    for (mvcc::Update* head : heads)
        mvcc::destroyVersions(head);
}

}  // namespace mvkv::engine
