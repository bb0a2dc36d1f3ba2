// The engine registry of mvkv-bench (store.h).
#include "store.h"

namespace mvkv::bench {

std::string_view syncModeName(SyncMode mode) {
    return mode == SyncMode::kFsync ? "fsync" : "none";
}

StoreFactory availableStore(std::string name, std::string version, std::vector<SyncMode> syncModes,
                            std::function<StatusWith<std::unique_ptr<Store>>(const StoreOptions&)> open) {
    StoreFactory f;
    f.name = std::move(name);
    f.version = std::move(version);
    f.available = true;
    f.syncModes = std::move(syncModes);
    f.open = std::move(open);
    return f;
}

const std::vector<StoreFactory>& storeFactories() {
    // Built once, in the order every table uses.
    static const std::vector<StoreFactory> factories = {
        mvkvStoreFactory(),
        lmdbStoreFactory(),
        wiredTigerStoreFactory(),
        rocksDbStoreFactory(),
    };
    return factories;
}

const StoreFactory* findStoreFactory(std::string_view name) {
    for (const StoreFactory& f : storeFactories()) {
        if (f.name == name)
            return &f;
    }
    return nullptr;
}

}  // namespace mvkv::bench
