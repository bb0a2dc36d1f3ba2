// Session::implicitWrite: one implicit (single-operation) write transaction,
// retried on write conflicts with MongoDB's backoff until the session's
// retry timeout. Shared by ordinary writes (Session::writeLocked) and capped
// writes (engine/capped_write.cpp), which apply more than one key in it.
// Internal to the engine's session sources.
#pragma once

#include "engine/engine.h"
#include "engine/session.h"
#include "mvcc/write_conflict_retry.h"

namespace mvkv::engine {

// An implicit operation's transaction: short, no read timestamp, off the
// active list while the caller's epoch pin covers its snapshot.
inline constexpr mvcc::BeginOptions kImplicitBegin{mvcc::kNoTimestamp, false, true};

template <typename Apply>
Status Session::implicitWrite(Apply&& apply) {
    auto& txns = engine_.txns_;
    mvcc::RetryCounts counts;
    Status s = mvcc::writeConflictRetry(
        retryTimeout_, counts,
        [&]() -> Status {
            if (Status i = checkInterrupted(); !i.ok())
                return i;
            // Unregistered until its first write links it: the pin covers
            // its snapshot meanwhile (BeginOptions::unregistered).
            auto pin = engine_.epochs_.pin();
            if (Status b = txns.begin(txn_, kImplicitBegin); !b.ok())
                return b;
            Status w = apply();
            pin.release();
            if (!w.ok()) {
                abortTxn();
                return w;
            }
            return commitTxn(std::nullopt);
        },
        [&] {
            txns.noteWriteConflict();
            curOp_.add(curOp_.writeConflicts);
        });
    if (counts.attempts > 1)
        txns.noteRetries(counts.attempts - 1);
    lastOpWriteConflicts_ = counts.writeConflicts;
    return s;
}

}  // namespace mvkv::engine
