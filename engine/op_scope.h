// OpScope: one Session operation's life in its CurOp (engine/curop.h), on
// the stack of the session's thread.
//
//   Status Session::get(...) {
//       OpScope op(*this, {CurOpType::kQuery, "find", ns, key});
//       return op.finish(body...);
//   }
//
// The constructor clears an old interrupt, zeroes the operation's lock
// counters and publishes the description; finish() applies the rules every
// operation shares (an Interrupted inside an explicit transaction aborts
// it); the destructor times the operation, hands a slow or profiled one to
// the slow-op log and the profiler, and marks the CurOp idle. A scope
// opened while the session already runs an operation (the body of
// withTransaction) adds to the outer one and reports nothing itself.
//
// Every operation runs this, so its common path is inline and reads no
// line another thread writes: two clock reads, stores to the session's own
// CurOp, tally and lock counters, and one compare-and-swap to end (the
// handshake with a currentOp reader, engine/curop.h). What is rare (a
// pending interrupt, a reserved opid, a slow or profiled operation) is out
// of line in engine/session_ops.cpp.
#pragma once

#include "engine/curop.h"
#include "engine/engine.h"
#include "engine/session.h"

namespace mvkv::engine {

class OpScope {
  public:
    [[gnu::always_inline]] OpScope(Session& session, const CurOp::Description& d)
        : session_(session), outer_(!session.curOp_.active()) {
        if (outer_) [[likely]]
            session.beginOp(d);
    }
    [[gnu::always_inline]] ~OpScope() {
        if (outer_) [[likely]]
            session_.endOp(code_, pointRead_);
    }
    OpScope(const OpScope&) = delete;
    OpScope& operator=(const OpScope&) = delete;

    [[gnu::always_inline]] Status finish(Status s) {
        if (!s.ok()) [[unlikely]]
            s = session_.afterOp(std::move(s));
        code_ = s.code();
        return s;
    }
    CurOp& curOp() { return session_.curOp_; }
    /// The operation was a point read (get) that `found` a value or not.
    /// Its counters reach the CurOp at once inside an outer operation;
    /// otherwise only if the operation is reported: a point read examines
    /// its key at its very end, so currentOp could see them only in the
    /// short tail of the operation after the lookup (it shows 0 there), and
    /// the common operation never writes or clears them.
    [[gnu::always_inline]] void countPointRead(bool found) {
        if (outer_) [[likely]]
            pointRead_ = found ? CurOp::PointRead::kFound : CurOp::PointRead::kMissed;
        else
            session_.curOp_.addPointRead(found);
    }

  private:
    Session& session_;
    const bool outer_;
    StatusCode code_ = StatusCode::kOk;
    CurOp::PointRead pointRead_ = CurOp::PointRead::kNone;
};

[[gnu::always_inline]] inline void Session::beginOp(const CurOp::Description& d) {
    lastOpWriteConflicts_ = 0;
    if (interrupted_.load(std::memory_order_relaxed) ||
        reservedOpid_.load(std::memory_order_relaxed) != 0) [[unlikely]] {
        beginOpSlow(d);
        return;
    }
    locker_->resetOperationStats();
    tally_.add(OpTally::counterFor(d.op));
    curOp_.begin(d, engine_.clock_.nowNanos());
}

[[gnu::always_inline]] inline void Session::endOp(StatusCode code, CurOp::PointRead pointRead) {
    const int64_t nanos = engine_.clock_.nowNanos() - curOp_.startNanos();
    if (nanos > engine_.reportNanos()) [[unlikely]] {
        if (pointRead != CurOp::PointRead::kNone)
            curOp_.addPointRead(pointRead == CurOp::PointRead::kFound);
        reportOp(nanos, code);
    }
    if (explicit_)
        describeTxn();
    curOp_.end();
}

}  // namespace mvkv::engine
