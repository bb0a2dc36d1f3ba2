// The engine registry of mvkv-bench (store.h).
#include "bench/store.h"

namespace mvkv::bench {

std::string_view syncModeName(SyncMode mode) {
    return mode == SyncMode::kFsync ? "fsync" : "none";
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
