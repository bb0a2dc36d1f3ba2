// The documents that describe an operation, in MongoDB's shapes
// (docs/operations.md has them field by field): the "command" document, the
// slow-op log line (logv2, id 51803), the profiler's system.profile entry
// and currentOp's inprog entry. Pure functions of what they are given.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/curop.h"
#include "lockmgr/lock_manager.h"
#include "lockmgr/lock_stats.h"
#include "util/status.h"

namespace mvkv::engine {


/// Everything the slow-op line and the profile entry say of one finished
/// operation.
struct FinishedOp {
    const OpSnapshot* op = nullptr;
    std::string_view client;  // the session's name
    uint64_t connectionId = 0;
    const lockmgr::LockStats* locks = nullptr;  // the operation's own counters
    int64_t micros = 0;
    StatusCode code = StatusCode::kOk;
    bool inTransaction = false;
    uint64_t txnId = 0;
    uint64_t readTs = 0;
    std::chrono::system_clock::time_point when;  // its end, wall clock
};

/// ISO 8601 with milliseconds and the UTC offset, as logv2 writes "$date".
std::string isoDate(std::chrono::system_clock::time_point t);
/// The same of milliseconds since the Unix epoch (a lock's expiry).
std::string isoDateMs(int64_t msSinceEpoch);
/// One slow-op line: {"t":{"$date":..},"s":"I","c":"COMMAND","id":51803,
/// "ctx":client,"msg":"Slow query","attr":{...}}.
std::string slowOpLine(const FinishedOp& f);
/// One system.profile document (JSON text).
std::string profileDocument(const FinishedOp& f);

/// What currentOp shows of a session (any thread gathered it).
struct SessionView {
    uint64_t connectionId = 0;
    std::string client;
    std::optional<OpSnapshot> op;  // the running operation, if any
    int64_t nowMicros = 0;         // on the operation clock
    lockmgr::LockStats lockStats;  // the running operation's
    std::vector<lockmgr::LockHeadInfo> locks;  // what the locker holds or waits for
    uint64_t lockerId = 0;
    bool waitingForDocumentLock = false;  // an acquisition sleeps (DocumentLocks)
    bool txnOpen = false;
    uint64_t txnId = 0;
    uint64_t readTs = 0;
    int64_t txnStartMicros = 0;
    uint64_t prepareTs = 0;  // 0: not prepared
};
/// One currentOp inprog entry (JSON text): a running operation
/// ("type":"op") or, when no operation runs, an open transaction
/// ("type":"idleSession"). The "command" document is {"<command>":
/// "<collection>", "key": ... or "from"/"to", "value": prefix, "valueBytes": n}.
std::string inprogEntry(const SessionView& v);

}  // namespace mvkv::engine
