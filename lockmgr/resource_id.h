// ResourceId: what a lock protects.
//
// A resource is a type (Global > Database > Collection, plus Metadata and
// Mutex for internal use) and the 64-bit xxHash (XXH3) of its name. Two names
// that hash alike would share a lock: harmless (extra blocking, never a missed
// conflict). An empty name makes an invalid id, which every lock call refuses
// with InvalidArgument.
//
// Thread safety: a plain value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace mvkv::lockmgr {

enum class ResourceType : uint8_t {
    kInvalid = 0,
    kGlobal,
    kDatabase,
    kCollection,
    kMetadata,
    kMutex,
};
inline constexpr int kResourceTypeCount = 6;

/// "Global", "Database", "Collection", "Metadata", "Mutex" (MongoDB's names).
std::string_view resourceTypeName(ResourceType t);

class ResourceId {
  public:
    /// The invalid id.
    constexpr ResourceId() = default;
    /// Hashes `name`; an empty name (or kInvalid type) gives an invalid id.
    ResourceId(ResourceType type, std::string_view name);

    /// The Global resource: ResourceId(kGlobal, "global"), as a constant (its
    /// hash is precomputed; a test checks it against the hash function).
    static constexpr ResourceId global() { return ResourceId(ResourceType::kGlobal, kGlobalHash); }
    static ResourceId database(std::string_view db) { return {ResourceType::kDatabase, db}; }
    /// `ns` is "db.collection".
    static ResourceId collection(std::string_view ns) { return {ResourceType::kCollection, ns}; }

    bool isValid() const { return type_ != ResourceType::kInvalid; }
    ResourceType type() const { return type_; }
    uint64_t hash() const { return hash_; }

    /// "Collection:0x1a2b..." (the name is not kept; LockManager remembers names).
    std::string toString() const;

    // The hash first: it almost always decides, so the branch predicts well.
    friend bool operator==(const ResourceId& a, const ResourceId& b) {
        return a.hash_ == b.hash_ && a.type_ == b.type_;
    }

  private:
    static constexpr uint64_t kGlobalHash = 0xfa1e4d775d32dbbeull;  // XXH3_64bits("global")
    constexpr ResourceId(ResourceType type, uint64_t hash) : type_(type), hash_(hash) {}

    ResourceType type_ = ResourceType::kInvalid;
    uint64_t hash_ = 0;
};

/// Mixes type and hash: used to pick the lock bucket and in hash maps.
struct ResourceIdHasher {
    size_t operator()(const ResourceId& r) const {
        return static_cast<size_t>(r.hash() ^ (uint64_t(r.type()) * 0x9E3779B97F4A7C15ull));
    }
};

}  // namespace mvkv::lockmgr
