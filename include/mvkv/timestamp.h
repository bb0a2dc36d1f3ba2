// mvkv/timestamp.h: the caller's logical time.
// Part of the public API (include/mvkv/); no stable ABI is promised yet.
//
// A Timestamp is what MongoDB calls cluster time and WiredTiger a commit
// timestamp: a number the caller chooses (or the engine's clock hands out)
// that orders commits and names the snapshot a read sees. 0 means none.
#pragma once

#include <cstdint>
#include <limits>

namespace mvkv {

using Timestamp = uint64_t;
/// A transaction's id (its order of beginning); 0 means none.
using TxnId = uint64_t;

inline constexpr Timestamp kNoTimestamp = 0;
inline constexpr Timestamp kMaxTimestamp = std::numeric_limits<Timestamp>::max();
inline constexpr TxnId kNoTxnId = 0;

/// The engine's timestamps (WiredTiger's query_timestamp).
struct Timestamps {
    Timestamp clock = kNoTimestamp;         // newest timestamp seen or handed out
    Timestamp oldest = kNoTimestamp;        // reads below it are refused
    Timestamp stable = kNoTimestamp;        // what a checkpoint makes durable
    Timestamp allDurable = kNoTimestamp;    // every commit at or below it has finished
    // The newest commit an untimestamped snapshot begun now sees: all_durable
    // leaving prepared transactions out. kMaxTimestamp: no bound (an engine
    // without an oplog, whose commits may take older timestamps at any time).
    Timestamp readPoint = kMaxTimestamp;
    Timestamp oldestReader = kNoTimestamp;  // smallest read timestamp of a running reader (0: none)
    Timestamp pinned = kNoTimestamp;        // min(oldest, oldestReader, checkpoints'): history kept
};

}  // namespace mvkv
