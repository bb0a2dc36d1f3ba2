// The stored form of a TTL collection's value (docs/ttl.md, "Storing the
// time"): a 9-byte header in front of the caller's bytes.
//
//   tag (1 byte) | milliseconds since the Unix epoch (8 bytes, big-endian, signed) | value
//
// tag 'w': the wall-clock time of the write that made the entry (it expires
// at that time plus the collection's current expireAfterSeconds, so a
// collMod applies to entries already there); tag 'e': an explicit expiry
// given with the write (WriteOptions::expireAtMs).
//
// The header is part of the stored bytes: the oplog, checkpoints, replicas
// and the history store carry it unchanged, so an entry's time survives
// every path a value takes. Session adds it on a client's write and every
// reader strips it (Collection::userValue).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mvkv::engine {

inline constexpr size_t kTtlHeaderBytes = 9;

struct TtlStamp {
    enum class Kind : char { kWrittenAt = 'w', kExpiresAt = 'e' };
    Kind kind = Kind::kWrittenAt;
    int64_t ms = 0;

    /// When the entry expires, in ms since the epoch: for kWrittenAt its
    /// write time plus `expireAfterSeconds` (saturating at INT64_MAX).
    int64_t expiresAtMs(int64_t expireAfterSeconds) const {
        if (kind == Kind::kExpiresAt)
            return ms;
        const int64_t after = expireAfterSeconds * 1000;  // <= 2^31 s: no overflow
        return ms > INT64_MAX - after ? INT64_MAX : ms + after;
    }
};

/// `stamp`'s header followed by `value`, into *out (its capacity reused).
inline void encodeTtlValue(const TtlStamp& stamp, std::string_view value, std::string* out) {
    out->resize(kTtlHeaderBytes + value.size());
    char* p = out->data();
    p[0] = static_cast<char>(stamp.kind);
    const auto u = static_cast<uint64_t>(stamp.ms);
    for (int i = 0; i < 8; ++i)
        p[1 + i] = static_cast<char>(u >> (56 - 8 * i));
    value.copy(p + kTtlHeaderBytes, value.size());
}

/// The header of `stored`; false when it has none (shorter than a header,
/// or an unknown tag: not written by a TTL collection's write path).
inline bool decodeTtlStamp(std::string_view stored, TtlStamp* stamp) {
    if (stored.size() < kTtlHeaderBytes || (stored[0] != 'w' && stored[0] != 'e'))
        return false;
    uint64_t u = 0;
    for (int i = 0; i < 8; ++i)
        u = (u << 8) | static_cast<uint8_t>(stored[1 + i]);
    stamp->kind = static_cast<TtlStamp::Kind>(stored[0]);
    stamp->ms = static_cast<int64_t>(u);
    return true;
}

/// The caller's bytes of `stored`: past the header, or all of it when it
/// has none (never expected; shown rather than cut).
inline std::string_view ttlUserValue(std::string_view stored) {
    TtlStamp unused;
    return decodeTtlStamp(stored, &unused) ? stored.substr(kTtlHeaderBytes) : stored;
}

}  // namespace mvkv::engine
