// MvccStats: counters of the transaction manager, a snapshot by value.
#pragma once

#include <cstdint>

#include "mvcc/timestamp.h"

namespace mvkv::mvcc {

struct MvccStats {
    uint64_t begun = 0;
    uint64_t committed = 0;
    uint64_t aborted = 0;
    uint64_t active = 0;
    uint64_t writeConflicts = 0;            // conflicts returned or retried
    uint64_t retries = 0;                   // automatic retries of implicit writes
    uint64_t holeWaits = 0;  // commits and reads that waited for an earlier commit in flight
    Timestamp oldestReadTs = kNoTimestamp;  // 0: no reader with a read ts
    uint64_t oldestReaderAgeMicros = 0;     // how long that reader has run
};

}  // namespace mvkv::mvcc
