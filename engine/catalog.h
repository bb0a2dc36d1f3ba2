// Catalog: the databases and collections of an engine.
//
// A database exists while it has collections (as in MongoDB). Callers take
// the lock-manager locks (create/drop: X on the collection; drop database: X
// on the database) before calling the mutating methods; the catalog's own
// mutex only keeps its map consistent.
//
// Thread safety: all methods may be called concurrently.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "engine/collection.h"

namespace mvkv::engine {

class Catalog {
  public:
    explicit Catalog(EpochManager& epochs) : epochs_(epochs) {}

    /// NamespaceExists when present; InvalidArgument for bad options
    /// (validateCollectionOptions). Takes no lock-manager lock and logs
    /// nothing: Session::createCollection and Engine::createCollection do.
    StatusWith<std::shared_ptr<Collection>> create(const Namespace& ns,
                                                   const CollectionOptions& options = {});
    /// NamespaceNotFound when absent. The collection is marked dropped and
    /// freed when its last user lets go.
    Status drop(const Namespace& ns);
    /// Drops every collection of `db`; NamespaceNotFound when it has none.
    StatusWith<size_t> dropDatabase(std::string_view db);

    /// Null when absent.
    std::shared_ptr<Collection> lookup(std::string_view ns) const;
    std::vector<std::string> databases() const;
    /// Collection names (without the db prefix) of `db`, sorted.
    std::vector<std::string> collections(std::string_view db) const;
    /// Every collection; with `lastIssuedId`, also the largest id handed out
    /// so far (read together: an id at most it and not in the list belongs
    /// to a dropped collection).
    std::vector<std::shared_ptr<Collection>> all(uint32_t* lastIssuedId = nullptr) const;

    /// Bumped by every create and drop: sessions clear their collection
    /// caches when it moves, so a dropped collection is freed once every
    /// session has run an operation since (or closed).
    uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

  private:
    EpochManager& epochs_;
    mutable std::shared_mutex mutex_;
    std::map<std::string, std::shared_ptr<Collection>, std::less<>> byNs_;
    uint32_t nextId_ = 1;
    std::atomic<uint64_t> generation_{0};
};

}  // namespace mvkv::engine
