// Engine's view of running operations: currentOp, killOp and the slow-op
// settings (docs/operations.md).
#include <fmt/format.h>

#include <limits>

#include "engine/engine.h"
#include "engine/op_report.h"
#include "engine/session.h"

namespace mvkv::engine {

std::string Engine::currentOp(bool all) {
    // Gather under the registry mutex (no session can go meanwhile); the
    // lock manager's view of each locker is thread-safe.
    std::vector<SessionView> views;
    ops_.forEach([&](Session& s) {
        SessionView v;
        v.lockerId = s.locker_->id();
        // The running operation's lock figures and held locks are read while
        // it cannot end, so they are never the next operation's.
        v.op = s.curOp_.snapshot(ops_.opidCounter(), [&] {
            v.lockStats = s.locker_->operationStats();
            v.locks = lockManager_.dumpLocker(v.lockerId);
            v.waitingForDocumentLock = s.docLockWait_.load(std::memory_order_relaxed) != nullptr;
        });
        v.txnOpen = s.txnDesc_.open.load(std::memory_order_acquire);
        if (!v.op && !(all && v.txnOpen))
            return;
        v.connectionId = s.id_;
        v.client = s.name_;
        v.nowMicros = clock_.now();
        if (!v.op)  // an idle open transaction: the locks it holds
            v.locks = lockManager_.dumpLocker(v.lockerId);
        if (v.txnOpen) {
            v.txnId = s.txnDesc_.txnId.load(std::memory_order_relaxed);
            v.readTs = s.txnDesc_.readTs.load(std::memory_order_relaxed);
            v.txnStartMicros = s.txnDesc_.startMicros.load(std::memory_order_relaxed);
            v.prepareTs = s.txnDesc_.prepareTs.load(std::memory_order_relaxed);
        }
        views.push_back(std::move(v));
    });
    std::string out = "{\"inprog\":[";
    for (size_t i = 0; i < views.size(); ++i) {
        if (i != 0)
            out += ',';
        out += inprogEntry(views[i]);
    }
    out += "],\"ok\":1}";
    return out;
}

Status Engine::killOp(uint64_t opid) {
    if (opid == 0)
        return Status::InvalidArgument("opid 0 names no operation; opids start at 1");
    bool found = false;
    ops_.forEach([&](Session& s) {
        if (found)
            return;
        // Delivered while the operation cannot end, so it reaches this
        // operation and no later one.
        auto interrupt = [&] { s.interrupt(); };
        // A `bg` command's opid is handed out before its operation begins:
        // a kill that comes first marks the reservation, and the operation
        // that takes it starts killed. If the operation took it meanwhile,
        // it is running now: look again.
        found = s.curOp_.killIf(opid, interrupt) || s.killReserved(opid) ||
                s.curOp_.killIf(opid, interrupt);
    });
    if (!found)
        return Status::NotFound(fmt::format(
            "no running operation has opid {}: it finished already, or never was (currentop "
            "lists the running ones)",
            opid));
    return Status::OK();
}

Status Engine::setSlowOp(int64_t slowMs, double sampleRate) {
    if (Status s = slowLog_->set(slowMs, sampleRate); !s.ok())
        return s;
    updateOpMonitoring();
    return Status::OK();
}

void Engine::updateOpMonitoring() {
    // Under a mutex: two changes at once (a threshold and a profiling
    // level) must not leave the older derivation behind.
    std::lock_guard<std::mutex> g(monitoringMutex_);
    const int64_t slowMicros = slowLog_->slowMs() * 1000;  // fits: SlowOpLog::set checks
    const bool profiling = profiler_->anyOn();
    slowMicros_.store(slowMicros, std::memory_order_relaxed);
    // More nanoseconds than this are more whole microseconds than the
    // threshold: the same judgement as reportOp's.
    const int64_t report = slowMicros > (std::numeric_limits<int64_t>::max() - 999) / 1000
                               ? std::numeric_limits<int64_t>::max()
                               : slowMicros * 1000 + 999;
    reportNanos_.store(profiling ? std::numeric_limits<int64_t>::min() : report,
                       std::memory_order_relaxed);
    // A coarse clock ticks every few milliseconds: enough to tell 100 ms,
    // not enough for a profiler's millis or a small threshold.
    clock_.setPrecise(profiling || slowMicros < 50'000);
}

}  // namespace mvkv::engine
