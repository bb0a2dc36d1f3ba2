#include "engine/op_report.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <ctime>

#include "lockmgr/lock_mode.h"
#include "lockmgr/resource_id.h"
#include "engine/json_text.h"

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

namespace {

constexpr std::string_view kLockStatKindNames[] = {"acquireCount", "acquireWaitCount",
                                                   "timeAcquiringMicros", "deadlockCount"};

// MongoDB's "locks" document, as LockStats::toJson writes it, with no tree.
void appendLocks(JsonText& j, const lockmgr::LockStats& stats) {
    using lockmgr::LockMode;
    using lockmgr::LockStatKind;
    using lockmgr::ResourceType;
    j.begin();
    for (int t = 1; t < lockmgr::kResourceTypeCount; ++t) {
        bool typeOpen = false;
        for (int k = 0; k < lockmgr::kLockStatKinds; ++k) {
            bool kindOpen = false;
            for (int m = 1; m < lockmgr::kLockModeCount; ++m) {
                uint64_t v = stats.get(ResourceType(t), LockMode(m), LockStatKind(k));
                if (v == 0)
                    continue;
                if (!typeOpen) {
                    j.key(lockmgr::resourceTypeName(ResourceType(t)));
                    j.begin();
                    typeOpen = true;
                }
                if (!kindOpen) {
                    j.key(kLockStatKindNames[k]);
                    j.begin();
                    kindOpen = true;
                }
                j.field(lockmgr::modeStatsLetter(LockMode(m)), v);
            }
            if (kindOpen)
                j.end();
        }
        if (typeOpen)
            j.end();
    }
    j.end();
}

void appendCommand(JsonText& j, const OpSnapshot& op) {
    j.begin();
    if (op.command == "dropDatabase") {
        j.field("dropDatabase", 1);
        j.field("$db", op.ns);
        j.end();
        return;
    }
    j.field(op.command.empty() ? std::string_view("unknown") : std::string_view(op.command),
            collectionPart(op.ns));
    if (op.hasRange) {
        if (!op.key.empty() || op.keyEnd.empty())
            j.field("from", op.key);
        if (!op.keyEnd.empty())
            j.field("to", op.keyEnd);
    } else if (!op.key.empty()) {
        j.field("key", op.key);
    }
    if (op.hasValue) {
        j.field("value", op.valuePrefix);
        j.field("valueBytes", op.valueBytes);
    }
    j.end();
}

void appendCounterFields(JsonText& j, const OpCounters& c, std::string_view yieldsName) {
    j.field("keysExamined", c.keysExamined);
    j.field("docsExamined", c.docsExamined);
    j.field("nreturned", c.nreturned);
    j.field(yieldsName, c.numYields);
    j.field("writeConflicts", c.writeConflicts);
    j.field("prepareConflicts", c.prepareConflicts);
    if (c.keysInserted)
        j.field("ninserted", c.keysInserted);
    if (c.keysDeleted)
        j.field("ndeleted", c.keysDeleted);
}

void appendTransaction(JsonText& j, const FinishedOp& f) {
    j.key("transaction");
    j.begin();
    j.field("txnNumber", f.txnId);
    j.field("txnId", f.txnId);
    j.field("readTimestamp", f.readTs);
    j.key("explicit");
    j.raw("true");
    j.end();
}

void appendOutcome(JsonText& j, StatusCode code) {
    j.field("ok", code == StatusCode::kOk ? 1 : 0);
    if (code != StatusCode::kOk)
        j.field("errName", statusCodeName(code));
}

}  // namespace

std::string slowOpLine(const FinishedOp& f) {
    const OpSnapshot& op = *f.op;
    std::string out;
    out.reserve(768);
    JsonText j(&out);
    j.begin();
    j.key("t");
    j.begin();
    j.field("$date", isoDate(f.when));
    j.end();
    j.field("s", "I");
    j.field("c", "COMMAND");
    j.field("id", 51803);
    j.field("ctx", f.client);
    j.field("msg", "Slow query");
    j.key("attr");
    j.begin();
    j.field("type", op.op == CurOpType::kCommand ? std::string_view("command")
                                                  : curOpTypeName(op.op));
    j.field("ns", op.ns);
    j.field("appName", f.client);
    j.key("command");
    appendCommand(j, op);
    j.field("opid", op.opid);
    appendCounterFields(j, op.counters, "numYields");
    if (f.inTransaction)
        appendTransaction(j, f);
    j.key("locks");
    appendLocks(j, *f.locks);
    // An in-memory engine reads no disk on an operation's path.
    j.key("storage");
    j.raw("{}");
    appendOutcome(j, f.code);
    j.field("durationMillis", f.micros / 1000);
    j.end();
    j.end();
    return out;
}

std::string profileDocument(const FinishedOp& f) {
    const OpSnapshot& op = *f.op;
    std::string out;
    out.reserve(640);
    JsonText j(&out);
    j.begin();
    j.field("op", curOpTypeName(op.op));
    j.field("ns", op.ns);
    j.key("command");
    appendCommand(j, op);
    appendCounterFields(j, op.counters, "numYield");
    j.key("locks");
    appendLocks(j, *f.locks);
    if (f.inTransaction)
        appendTransaction(j, f);
    appendOutcome(j, f.code);
    j.field("millis", f.micros / 1000);
    j.field("micros", f.micros);
    j.field("ts", isoDate(f.when));
    j.field("client", f.client);
    j.field("appName", f.client);
    j.field("opid", op.opid);
    j.end();
    return out;
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
