// Timestamps and transaction ids: the two clocks of MVCC.
//
// A Timestamp is the caller's logical time (MongoDB's cluster time); a TxnId is
// the engine's internal order of transactions. Zero means "none" for both.
#pragma once

#include <cstdint>
#include <limits>

namespace mvkv::mvcc {

using Timestamp = uint64_t;
using TxnId = uint64_t;

inline constexpr Timestamp kNoTimestamp = 0;
inline constexpr Timestamp kMaxTimestamp = std::numeric_limits<Timestamp>::max();
inline constexpr TxnId kNoTxnId = 0;

}  // namespace mvkv::mvcc
