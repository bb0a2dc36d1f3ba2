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
#pragma once

#include "engine/curop.h"
#include "engine/session.h"

namespace mvkv::engine {

class OpScope {
  public:
    [[gnu::always_inline]] OpScope(Session& session, const CurOp::Description& d)
        : session_(session), outer_(!session.curOp_.active()) {
        if (outer_)
            session.beginOp(d);
    }
    [[gnu::always_inline]] ~OpScope() {
        if (outer_)
            session_.endOp(code_);
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

  private:
    Session& session_;
    const bool outer_;
    StatusCode code_ = StatusCode::kOk;
};

}  // namespace mvkv::engine
