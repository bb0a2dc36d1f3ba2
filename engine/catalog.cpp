#include "engine/catalog.h"

#include <fmt/format.h>

#include <mutex>
#include <set>

namespace mvkv::engine {

StatusWith<std::shared_ptr<Collection>> Catalog::create(const Namespace& ns,
                                                        const CollectionOptions& options) {
    if (Status s = validateCollectionOptions(options); !s.ok())
        return s;
    auto lockNs = lockmgr::LockNamespace::parse(ns.ns());
    if (!lockNs.ok())
        return lockNs.status();
    std::unique_lock lock(mutex_);
    if (byNs_.count(ns.ns()))
        return Status::NamespaceExists(fmt::format("collection {} already exists", ns.ns()));
    auto coll = std::make_shared<Collection>(nextId_++, ns, std::move(lockNs).value(), epochs_,
                                             options);
    byNs_.emplace(ns.ns(), coll);
    generation_.fetch_add(1, std::memory_order_release);
    return coll;
}

Status Catalog::drop(const Namespace& ns) {
    std::unique_lock lock(mutex_);
    auto it = byNs_.find(ns.ns());
    if (it == byNs_.end())
        return Status::NamespaceNotFound(fmt::format("collection {} does not exist", ns.ns()));
    it->second->markDropped();
    byNs_.erase(it);
    generation_.fetch_add(1, std::memory_order_release);
    return Status::OK();
}

StatusWith<size_t> Catalog::dropDatabase(std::string_view db) {
    std::unique_lock lock(mutex_);
    size_t dropped = 0;
    std::string prefix = fmt::format("{}.", db);
    for (auto it = byNs_.lower_bound(prefix); it != byNs_.end() && it->first.starts_with(prefix);) {
        it->second->markDropped();
        it = byNs_.erase(it);
        ++dropped;
    }
    if (dropped == 0)
        return Status::NamespaceNotFound(fmt::format("database {} does not exist", db));
    generation_.fetch_add(1, std::memory_order_release);
    return dropped;
}

std::shared_ptr<Collection> Catalog::lookup(std::string_view ns) const {
    std::shared_lock lock(mutex_);
    auto it = byNs_.find(ns);
    return it == byNs_.end() ? nullptr : it->second;
}

std::vector<std::string> Catalog::databases() const {
    std::shared_lock lock(mutex_);
    std::set<std::string> dbs;
    for (const auto& [ns, coll] : byNs_)
        dbs.emplace(coll->ns().db());
    return {dbs.begin(), dbs.end()};
}

std::vector<std::string> Catalog::collections(std::string_view db) const {
    std::shared_lock lock(mutex_);
    std::vector<std::string> out;
    for (const auto& [ns, coll] : byNs_) {
        if (coll->ns().db() == db)
            out.emplace_back(coll->ns().coll());
    }
    return out;
}

std::vector<std::shared_ptr<Collection>> Catalog::all(uint32_t* lastIssuedId) const {
    std::shared_lock lock(mutex_);
    if (lastIssuedId)
        *lastIssuedId = nextId_ - 1;
    std::vector<std::shared_ptr<Collection>> out;
    for (const auto& [ns, coll] : byNs_)
        out.push_back(coll);
    return out;
}

}  // namespace mvkv::engine
