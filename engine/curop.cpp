#include "engine/curop.h"

#include <thread>

#include "util/printable.h"

namespace mvkv::engine {

std::string_view curOpTypeName(CurOpType t) {
    switch (t) {
        case CurOpType::kNone:
            return "none";
        case CurOpType::kQuery:
            return "query";
        case CurOpType::kGetMore:
            return "getmore";
        case CurOpType::kInsert:
            return "insert";
        case CurOpType::kUpdate:
            return "update";
        case CurOpType::kRemove:
            return "remove";
        case CurOpType::kCommand:
            return "command";
    }
    return "none";
}

OpCounters CurOp::counters() const {
    OpCounters c;
    c.keysExamined = keysExamined.load(std::memory_order_relaxed);
    c.docsExamined = docsExamined.load(std::memory_order_relaxed);
    c.nreturned = nreturned.load(std::memory_order_relaxed);
    c.numYields = numYields.load(std::memory_order_relaxed);
    c.writeConflicts = writeConflicts.load(std::memory_order_relaxed);
    c.prepareConflicts = prepareConflicts.load(std::memory_order_relaxed);
    c.keysInserted = keysInserted.load(std::memory_order_relaxed);
    c.keysDeleted = keysDeleted.load(std::memory_order_relaxed);
    return c;
}

void CurOp::endSlow() {
    // A reader is copying the description: wait until it is done (it holds
    // the state for a few hundred nanoseconds), then end.
    for (;;) {
        uint32_t expected = kActive;
        if (state_.compare_exchange_weak(expected, kIdle, std::memory_order_acq_rel))
            return;
        std::this_thread::yield();
    }
}

bool CurOp::lockForRead() {
    for (;;) {
        uint32_t expected = kActive;
        if (state_.compare_exchange_weak(expected, kReading, std::memory_order_acq_rel))
            return true;
        if (expected == kIdle)
            return false;
        std::this_thread::yield();  // another reader: they are brief
    }
}

uint64_t CurOp::ensureOpid(std::atomic<uint64_t>& opidCounter) {
    uint64_t id = opid_.load(std::memory_order_acquire);
    if (id != 0)
        return id;
    uint64_t fresh = opidCounter.fetch_add(1, std::memory_order_relaxed) + 1;
    if (opid_.compare_exchange_strong(id, fresh, std::memory_order_acq_rel))
        return fresh;
    return id;  // somebody else handed one out first
}

OpSnapshot CurOp::copy() const {
    OpSnapshot s;
    s.op = d_.op;
    s.command.assign(d_.command);
    s.ns.assign(d_.ns);
    s.key = printable(d_.key);
    s.hasRange = d_.hasRange;
    if (d_.hasRange)
        s.keyEnd = printable(d_.keyEnd);
    s.hasValue = d_.hasValue;
    if (d_.hasValue) {
        s.valueBytes = d_.value.size();
        s.valuePrefix = printable(d_.value.substr(0, kValuePrefixBytes));
    }
    s.startMicros = startNanos_ / 1000;
    s.counters = counters();
    return s;
}

OpSnapshot CurOp::ownSnapshot(std::atomic<uint64_t>& opidCounter) {
    OpSnapshot s = copy();
    s.opid = ensureOpid(opidCounter);
    return s;
}

}  // namespace mvkv::engine
