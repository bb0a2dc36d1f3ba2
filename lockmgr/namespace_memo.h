// NamespaceMemo: the last "db.coll" a Locker turned into lock ids.
//
// AutoGetCollection from a namespace string must split it and hash both
// names (XXH3) before it can lock anything; an operation usually names the
// collection the previous one named. The memo keeps the last namespace's
// bytes with its database and collection ResourceIds. A lookup compares the
// whole string, byte for byte (never a hash of it), so a hit returns exactly
// the ids that splitting and hashing would: the hash quality and every lock
// semantic are those of ResourceId. Names longer than kMaxBytes are not kept.
//
// Thread safety: none; it belongs to one Locker (owner thread only).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "lockmgr/resource_id.h"

namespace mvkv::lockmgr {

class NamespaceMemo {
  public:
    static constexpr size_t kMaxBytes = 48;

    struct Ids {
        ResourceId db;    // ResourceId::database(ns before the first dot)
        ResourceId coll;  // ResourceId::collection(ns)
        uint32_t dot = 0; // position of the first dot
    };

    /// The ids remembered for exactly the bytes of `ns`, or nullptr.
    [[gnu::always_inline]] const Ids* find(std::string_view ns) const {
        if (ns.size() != size_ || !sameBytes(ns.data(), bytes_, ns.size())) [[unlikely]]
            return nullptr;
        return &ids_;
    }
    /// Remembers `ids` for `ns` (a valid namespace), replacing the last one.
    void remember(std::string_view ns, const Ids& ids) {
        if (ns.size() > kMaxBytes) {
            size_ = kNothing;
            return;
        }
        std::memcpy(bytes_, ns.data(), ns.size());
        size_ = uint32_t(ns.size());
        ids_ = ids;
    }

    /// a[0, n) == b[0, n), for n <= kMaxBytes, in word-sized compares.
    [[gnu::always_inline]] static bool sameBytes(const char* a, const char* b, size_t n) {
        if (n >= 8) {
            for (size_t i = 0; i + 8 < n; i += 8) {
                if (load<uint64_t>(a + i) != load<uint64_t>(b + i))
                    return false;
            }
            return load<uint64_t>(a + n - 8) == load<uint64_t>(b + n - 8);
        }
        if (n >= 4) {
            return (load<uint32_t>(a) == load<uint32_t>(b)) &
                   (load<uint32_t>(a + n - 4) == load<uint32_t>(b + n - 4));
        }
        for (size_t i = 0; i < n; ++i) {
            if (a[i] != b[i])
                return false;
        }
        return true;
    }

  private:
    template <class T>
    static T load(const char* p) {
        T v;
        std::memcpy(&v, p, sizeof v);
        return v;
    }

    static constexpr uint32_t kNothing = UINT32_MAX;  // matches no length
    uint32_t size_ = kNothing;
    Ids ids_;
    char bytes_[kMaxBytes] = {};
};

}  // namespace mvkv::lockmgr
