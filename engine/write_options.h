// WriteOptions: what a single write may carry besides its key and value
// (Session::put/insert/update/remove with options).
//
// Thread safety: plain values. A WriteFence's owner view must stay valid for
// the call only.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace mvkv::engine {

/// A fenced write (docs/document-locks.md): the write is made only while
/// the document lock on its key is held by `owner` with fencing `token`;
/// else LockLost and nothing is written. The check and the write are one
/// transaction.
struct WriteFence {
    std::string_view owner;
    uint64_t token = 0;
};

struct WriteOptions {
    /// TTL collections only: this entry expires at this wall-clock time
    /// (milliseconds since the Unix epoch) instead of its write time plus
    /// the collection's expireAfter. InvalidArgument on any other collection.
    std::optional<int64_t> expireAtMs;
    /// Only while a document lock holds (see WriteFence).
    std::optional<WriteFence> fence;
};

}  // namespace mvkv::engine
