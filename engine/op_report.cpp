#include "engine/op_report.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <ctime>

#include "lockmgr/lock_mode.h"
#include "lockmgr/resource_id.h"

namespace mvkv::engine {

namespace {

std::string_view collectionPart(std::string_view ns) {
    size_t dot = ns.find('.');
    return dot == std::string_view::npos ? ns : ns.substr(dot + 1);
}

void addCounters(OrderedJson& out, const OpCounters& c, const char* yieldsName) {
    out["keysExamined"] = c.keysExamined;
    out["docsExamined"] = c.docsExamined;
    out["nreturned"] = c.nreturned;
    out[yieldsName] = c.numYields;
    out["writeConflicts"] = c.writeConflicts;
    out["prepareConflicts"] = c.prepareConflicts;
    if (c.keysInserted)
        out["ninserted"] = c.keysInserted;
    if (c.keysDeleted)
        out["ndeleted"] = c.keysDeleted;
}

OrderedJson transactionDocument(uint64_t txnId, uint64_t readTs, int64_t openMicros) {
    OrderedJson t;
    t["txnNumber"] = txnId;
    t["txnId"] = txnId;
    t["readTimestamp"] = readTs;
    if (openMicros >= 0)
        t["timeOpenMicros"] = openMicros;
    t["explicit"] = true;
    return t;
}

}  // namespace

OrderedJson commandDocument(const OpSnapshot& op) {
    OrderedJson c;
    if (op.command == "dropDatabase") {
        c["dropDatabase"] = 1;
        c["$db"] = op.ns;
        return c;
    }
    c[op.command.empty() ? std::string("unknown") : op.command] =
        std::string(collectionPart(op.ns));
    if (op.hasRange) {
        if (!op.key.empty() || op.keyEnd.empty())
            c["from"] = op.key;
        if (!op.keyEnd.empty())
            c["to"] = op.keyEnd;
    } else if (!op.key.empty()) {
        c["key"] = op.key;
    }
    if (op.hasValue) {
        c["value"] = op.valuePrefix;
        c["valueBytes"] = op.valueBytes;
    }
    return c;
}

OrderedJson locksDocument(const lockmgr::LockStats& stats) {
    return OrderedJson::parse(stats.toJson());
}

std::string isoDate(std::chrono::system_clock::time_point t) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03}+00:00", tm, static_cast<int>(ms % 1000));
}

std::string slowOpLine(const FinishedOp& f) {
    const OpSnapshot& op = *f.op;
    OrderedJson attr;
    attr["type"] = op.op == CurOpType::kCommand ? "command" : std::string(curOpTypeName(op.op));
    attr["ns"] = op.ns;
    attr["appName"] = f.client;
    attr["command"] = commandDocument(op);
    attr["opid"] = op.opid;
    addCounters(attr, op.counters, "numYields");
    if (f.inTransaction)
        attr["transaction"] = transactionDocument(f.txnId, f.readTs, -1);
    attr["locks"] = locksDocument(*f.locks);
    // An in-memory engine reads no disk on an operation's path.
    attr["storage"] = OrderedJson::object();
    attr["ok"] = f.code == StatusCode::kOk ? 1 : 0;
    if (f.code != StatusCode::kOk)
        attr["errName"] = statusCodeName(f.code);
    attr["durationMillis"] = f.micros / 1000;
    OrderedJson line;
    line["t"] = {{"$date", isoDate(f.when)}};
    line["s"] = "I";
    line["c"] = "COMMAND";
    line["id"] = 51803;
    line["ctx"] = f.client;
    line["msg"] = "Slow query";
    line["attr"] = std::move(attr);
    return line.dump();
}

OrderedJson profileDocument(const FinishedOp& f) {
    const OpSnapshot& op = *f.op;
    OrderedJson d;
    d["op"] = curOpTypeName(op.op);
    d["ns"] = op.ns;
    d["command"] = commandDocument(op);
    addCounters(d, op.counters, "numYield");
    d["locks"] = locksDocument(*f.locks);
    if (f.inTransaction)
        d["transaction"] = transactionDocument(f.txnId, f.readTs, -1);
    d["ok"] = f.code == StatusCode::kOk ? 1 : 0;
    if (f.code != StatusCode::kOk)
        d["errName"] = statusCodeName(f.code);
    d["millis"] = f.micros / 1000;
    d["micros"] = f.micros;
    d["ts"] = isoDate(f.when);
    d["client"] = f.client;
    d["appName"] = f.client;
    d["opid"] = op.opid;
    return d;
}

OrderedJson inprogEntry(const SessionView& v) {
    OrderedJson e;
    // What the locker holds (strongest mode per resource type, as MongoDB's
    // "locks") and what it waits for.
    std::vector<std::pair<std::string, lockmgr::LockMode>> strongest;
    OrderedJson waiting;
    for (const lockmgr::LockHeadInfo& h : v.locks) {
        std::string type(lockmgr::resourceTypeName(h.resource.type()));
        for (const auto& g : h.granted) {
            if (g.locker != v.lockerId)
                continue;
            auto it = std::find_if(strongest.begin(), strongest.end(),
                                   [&](const auto& p) { return p.first == type; });
            if (it == strongest.end())
                strongest.emplace_back(type, g.mode);
            else if (lockmgr::isModeCovered(it->second, g.mode))
                it->second = g.mode;
            if (g.convertMode != lockmgr::LockMode::kNone)
                waiting = {{"type", type},
                           {"resource", h.name},
                           {"mode", lockmgr::modeName(g.convertMode)}};
        }
        for (const auto& w : h.waiting) {
            if (w.locker == v.lockerId)
                waiting = {{"type", type}, {"resource", h.name}, {"mode", lockmgr::modeName(w.mode)}};
        }
    }
    OrderedJson held = OrderedJson::object();
    for (const auto& [type, mode] : strongest)
        held[type] = lockmgr::modeStatsLetter(mode);
    if (v.op) {
        const OpSnapshot& op = *v.op;
        int64_t running = std::max<int64_t>(0, v.nowMicros - op.startMicros);
        e["type"] = "op";
        e["opid"] = op.opid;
        e["active"] = true;
        // The wall-clock start, from the running time: the operation itself
        // records only a monotonic start (cheaper, and immune to clock steps).
        e["currentOpTime"] = isoDate(std::chrono::system_clock::now() -
                                     std::chrono::microseconds(running));
        e["secs_running"] = running / 1'000'000;
        e["microsecs_running"] = running;
        e["op"] = curOpTypeName(op.op);
        e["ns"] = op.ns;
        e["command"] = commandDocument(op);
        addCounters(e, op.counters, "numYields");
    } else {
        e["type"] = "idleSession";
        e["active"] = false;
    }
    e["client"] = v.client;
    e["appName"] = v.client;
    e["desc"] = v.client;
    e["connectionId"] = v.connectionId;
    e["waitingForLock"] = !waiting.is_null();
    if (!waiting.is_null())
        e["lockWaitingFor"] = waiting;
    e["locks"] = held;
    if (v.op)
        e["lockStats"] = locksDocument(v.lockStats);
    if (v.txnOpen)
        e["transaction"] = transactionDocument(v.txnId, v.readTs,
                                               std::max<int64_t>(0, v.nowMicros - v.txnStartMicros));
    return e;
}

}  // namespace mvkv::engine
