#include "engine/op_report.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <optional>

#include "lockmgr/lock_mode.h"
#include "lockmgr/resource_id.h"
#include "engine/json_text.h"

namespace mvkv::engine {

namespace {

std::string_view collectionPart(std::string_view ns) {
    size_t dot = ns.find('.');
    return dot == std::string_view::npos ? ns : ns.substr(dot + 1);
}

}  // namespace

std::string isoDate(std::chrono::system_clock::time_point t) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03}+00:00", tm, static_cast<int>(ms % 1000));
}

std::string isoDateMs(int64_t msSinceEpoch) {
    return isoDate(std::chrono::system_clock::time_point(std::chrono::milliseconds(msSinceEpoch)));
}

namespace {

void appendLocks(JsonText& j, const lockmgr::LockStats& stats) { j.raw(stats.toJson()); }

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

void appendTransaction(JsonText& j, uint64_t txnId, uint64_t readTs, int64_t openMicros,
                       uint64_t prepareTs = 0) {
    j.key("transaction");
    j.begin();
    j.field("txnNumber", txnId);
    j.field("txnId", txnId);
    j.field("readTimestamp", readTs);
    if (openMicros >= 0)
        j.field("timeOpenMicros", openMicros);
    j.field("explicit", true);
    if (prepareTs != 0)  // MongoDB's currentOp field of a prepared transaction
        j.field("prepareTimestamp", prepareTs);
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
        appendTransaction(j, f.txnId, f.readTs, -1);
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
        appendTransaction(j, f.txnId, f.readTs, -1);
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

std::string inprogEntry(const SessionView& v) {
    // What the locker holds (strongest mode per resource type, as MongoDB's
    // "locks") and what it waits for.
    std::vector<std::pair<std::string_view, lockmgr::LockMode>> strongest;
    struct Wait {
        std::string_view type;
        std::string_view resource;
        lockmgr::LockMode mode = lockmgr::LockMode::kNone;
    };
    std::optional<Wait> waiting;
    for (const lockmgr::LockHeadInfo& h : v.locks) {
        std::string_view type = lockmgr::resourceTypeName(h.resource.type());
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
                waiting = Wait{type, h.name, g.convertMode};
        }
        for (const auto& w : h.waiting) {
            if (w.locker == v.lockerId)
                waiting = Wait{type, h.name, w.mode};
        }
    }
    std::string out;
    JsonText j(&out);
    j.begin();
    if (v.op) {
        const OpSnapshot& op = *v.op;
        int64_t running = std::max<int64_t>(0, v.nowMicros - op.startMicros);
        j.field("type", "op");
        j.field("opid", op.opid);
        j.field("active", true);
        // The wall-clock start, from the running time: the operation itself
        // records only a monotonic start (cheaper, and immune to clock steps).
        j.field("currentOpTime",
                isoDate(std::chrono::system_clock::now() - std::chrono::microseconds(running)));
        j.field("secs_running", running / 1'000'000);
        j.field("microsecs_running", running);
        j.field("op", curOpTypeName(op.op));
        j.field("ns", op.ns);
        j.key("command");
        appendCommand(j, op);
        appendCounterFields(j, op.counters, "numYields");
    } else {
        j.field("type", "idleSession");
        j.field("active", false);
    }
    j.field("client", v.client);
    j.field("appName", v.client);
    j.field("desc", v.client);
    j.field("connectionId", v.connectionId);
    j.field("waitingForLock", waiting.has_value());
    if (v.waitingForDocumentLock)
        j.field("waitingForDocumentLock", true);
    if (waiting) {
        j.key("lockWaitingFor");
        j.begin();
        j.field("type", waiting->type);
        j.field("resource", waiting->resource);
        j.field("mode", lockmgr::modeName(waiting->mode));
        j.end();
    }
    j.key("locks");
    j.begin();
    for (const auto& [type, mode] : strongest)
        j.field(type, lockmgr::modeStatsLetter(mode));
    j.end();
    if (v.op) {
        j.key("lockStats");
        appendLocks(j, v.lockStats);
    }
    if (v.txnOpen)
        appendTransaction(j, v.txnId, v.readTs,
                          std::max<int64_t>(0, v.nowMicros - v.txnStartMicros), v.prepareTs);
    j.end();
    return out;
}

}  // namespace mvkv::engine
