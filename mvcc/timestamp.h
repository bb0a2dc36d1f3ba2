// Timestamps and transaction ids: the two clocks of MVCC.
//
// A Timestamp is the caller's logical time (MongoDB's cluster time); a TxnId is
// the engine's internal order of transactions. Zero means "none" for both.
#pragma once

#include "mvkv/timestamp.h"

namespace mvkv::mvcc {

// The public types (include/mvkv/timestamp.h), by their older names.
using mvkv::Timestamp;
using mvkv::TxnId;
using mvkv::kNoTimestamp;
using mvkv::kMaxTimestamp;
using mvkv::kNoTxnId;

}  // namespace mvkv::mvcc
