#include "lockmgr/resource_id.h"

#include <fmt/format.h>
// Inlined (header-only mode) so hashing a short name is a few instructions,
// not a call through the shared library.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace mvkv::lockmgr {

std::string_view resourceTypeName(ResourceType t) {
    switch (t) {
        case ResourceType::kInvalid:
            return "Invalid";
        case ResourceType::kGlobal:
            return "Global";
        case ResourceType::kDatabase:
            return "Database";
        case ResourceType::kCollection:
            return "Collection";
        case ResourceType::kMetadata:
            return "Metadata";
        case ResourceType::kMutex:
            return "Mutex";
    }
    return "Invalid";
}

ResourceId::ResourceId(ResourceType type, std::string_view name) {
    if (type == ResourceType::kInvalid || name.empty())
        return;
    type_ = type;
    hash_ = XXH3_64bits(name.data(), name.size());
}

std::string ResourceId::toString() const {
    return fmt::format("{}:{:#018x}", resourceTypeName(type_), hash_);
}

}  // namespace mvkv::lockmgr
