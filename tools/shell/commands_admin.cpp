// ts, set, history, gc, checkpoint, oplog, tail, watch, locks, status, help, quit/exit.
#include <fmt/format.h>

#include <chrono>

#include "bytes.h"
#include "command_table.h"
#include "shell.h"

namespace mvkv::tools {

namespace {

// The longest lock wait or retry deadline a session takes (the engine's limit).
constexpr uint64_t kMaxWaitMs = 31536000000ull;

Reply ts(Shell& sh, const Args&) {
    Timestamps t = sh.engine().timestamps();
    Reply r;
    r.fields = {{"clock", t.clock},
                {"oldest", t.oldest},
                {"stable", t.stable},
                {"all_durable", t.allDurable},
                {"read_point", t.readPoint},
                {"oldest_reader", t.oldestReader},
                {"pinned", t.pinned}};
    // No bound (an engine without an oplog): null, and "none" to a person.
    if (t.readPoint == kMaxTimestamp)
        r.fields["read_point"] = nullptr;
    for (const auto& [name, value] : r.fields.items())
        r.lines.push_back(fmt::format("{:<14} {}", name,
                                      value.is_null() ? "none" : std::to_string(value.get<uint64_t>())));
    return r;
}

Reply set(Shell& sh, const Args& a) {
    const std::string what = lowerCase(a[0].text);
    auto n = parseNumber(a[1].text, what);
    if (!n.ok())
        return Reply::error(n.status());
    Status s;
    if (what == "lock_timeout_ms" || what == "retry_ms") {
        std::string hint;
        if (Status idle = sh.requireIdle(&hint); !idle.ok())
            return Reply::error(idle, hint);
    }
    if (what == "oldest")
        s = sh.engine().setOldestTimestamp(n.value());
    else if (what == "stable")
        s = sh.engine().setStableTimestamp(n.value());
    else if ((what == "lock_timeout_ms" || what == "retry_ms" || what == "slowms") &&
             n.value() > kMaxWaitMs)
        s = Status::InvalidArgument(fmt::format("{} {} is over the limit of {} (a year)", what,
                                                n.value(), kMaxWaitMs));
    else if (what == "lock_timeout_ms")
        sh.setLockTimeout(std::chrono::milliseconds(n.value()));
    else if (what == "retry_ms")
        sh.session().setRetryTimeout(std::chrono::milliseconds(n.value()));
    else if (what == "slowms")  // the engine's, shared by every database and the profiler
        s = sh.engine().setSlowOp(static_cast<int64_t>(n.value()),
                                  sh.engine().profilingSetting(sh.db()).sampleRate);
    else
        s = Status::InvalidArgument(
            fmt::format("cannot set {}; usage: set oldest|stable|lock_timeout_ms|retry_ms|slowms N",
                        displayBytes(a[0].text, 40)));
    if (!s.ok())
        return Reply::error(s);
    Reply r;
    r.fields[what] = n.value();
    r.lines.push_back(fmt::format("{} = {}", what, n.value()));
    return r;
}

std::string stateName(KeyVersion::State s) {
    switch (s) {
        case KeyVersion::State::kCommitted:
            return "committed";
        case KeyVersion::State::kUncommitted:
            return "uncommitted";
        case KeyVersion::State::kAborted:
            return "aborted";
        case KeyVersion::State::kPrepared:
            return "prepared";
    }
    return "?";
}

Reply history(Shell& sh, const Args& a) {
    auto versions = sh.session().keyHistory(sh.ns(a[0]), a[1].text);
    if (!versions.ok())
        return Reply::error(versions.status());
    Reply r;
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    r.lines.push_back(fmt::format("{:>8} {:>8} {:>7} {:<11} {:<8} {}", "start", "stop", "txn",
                                  "state", "where", "value"));
    for (const KeyVersion& v : versions.value()) {
        const std::string where =
            v.where == KeyVersion::Where::kChain ? "chain" : "history";
        nlohmann::ordered_json item = {{"startTs", v.startTs}, {"stopTs", v.stopTs},
                                       {"txnId", v.txnId},     {"state", stateName(v.state)},
                                       {"where", where},       {"deleted", v.tombstone}};
        if (!v.tombstone)
            item["value"] = bytesToJson(v.value);
        list.push_back(std::move(item));
        r.lines.push_back(fmt::format(
            "{:>8} {:>8} {:>7} {:<11} {:<8} {}", v.startTs ? std::to_string(v.startTs) : "-",
            v.stopTs ? std::to_string(v.stopTs) : "-", v.txnId, stateName(v.state), where,
            v.tombstone ? "(deleted)" : displayBytes(v.value, 200)));
    }
    if (versions.value().empty())
        r.lines = {"(no versions)"};
    r.fields["versions"] = std::move(list);
    return r;
}

Reply gc(Shell& sh, const Args&) {
    if (Status s = sh.engine().sweepHistory(); !s.ok())
        return Reply::error(s);
    const EngineStats st = sh.engine().stats();
    Reply r;
    r.fields = {{"historyEntries", st.historyEntries},
                {"versionsMoved", st.historyVersionsMoved},
                {"versionsFreed", st.historyVersionsFreed},
                {"pinned", st.historyPinned}};
    r.lines.push_back(fmt::format(
        "swept: {} history entries; {} versions moved and {} freed so far; "
        "pinned at timestamp {}",
        st.historyEntries, st.historyVersionsMoved, st.historyVersionsFreed, st.historyPinned));
    return r;
}

Reply checkpoint(Shell& sh, const Args&) {
    if (Status s = sh.engine().checkpoint(); !s.ok())
        return Reply::error(s);
    const EngineStats c = sh.engine().stats();
    Reply r;
    r.fields = {{"timestamp", c.lastCheckpointTs},
                {"entries", c.lastCheckpointEntries},
                {"bytes", c.lastCheckpointBytes}};
    r.lines.push_back(fmt::format("checkpoint {} at timestamp {}: {} keys, {} bytes",
                                  c.lastCheckpointNumber, c.lastCheckpointTs,
                                  c.lastCheckpointEntries, c.lastCheckpointBytes));
    return r;
}

Reply repair(Shell& sh, const Args& a) {
    if (!a.empty() && a[0].text != "clear")
        return Reply::error(Status::InvalidArgument(
            fmt::format("repair takes no argument or `clear`, not {}", displayBytes(a[0].text, 40))));
    Engine& e = sh.engine();
    auto record = e.repairRecord();  // IllegalOperation in memory
    if (!record.ok())
        return Reply::error(record.status());
    Reply r;
    if (!a.empty()) {
        auto cleared = e.clearRepairRecord();
        if (!cleared.ok())
            return Reply::error(cleared.status());
        const uint64_t had = cleared.value();
        r.fields["cleared"] = had;
        r.lines.push_back(had == 0 ? std::string("no repair record to clear")
                                   : fmt::format("cleared the record of {} repair{}; the salvage "
                                                 "copies stay in the data directory",
                                                 had, had == 1 ? "" : "s"));
        return r;
    }
    nlohmann::ordered_json repairs = nlohmann::ordered_json::parse(record.value());
    r.fields["repairs"] = repairs;
    if (repairs.empty())
        r.lines.push_back("no repair record: the oplog was never cut at damage (or the record was cleared)");
    for (const auto& one : repairs) {
        r.lines.push_back(fmt::format("{}: cut {} at offset {} ({}), {} commit(s) lost; copies in {}",
                                      one.value("time", "?"),
                                      one["damage"].value("file", "?"),
                                      one["damage"].value("offset", uint64_t{0}),
                                      one["damage"].value("reason", "?"),
                                      one.value("lostCommitCount", uint64_t{0}),
                                      one.value("salvage", "?")));
        for (const auto& c : one["lostCommits"])
            for (const auto& en : c["entries"])
                r.lines.push_back(fmt::format("  lost: ts {} op {} ns {} {}", c.value("ts", uint64_t{0}),
                                              en.value("op", "?"), en.value("ns", "?"),
                                              en.contains("key") ? "key " + en.value("key", "")
                                                                 : "command " + en.value("command", "")));
    }
    return r;
}

nlohmann::ordered_json entryJson(const OplogEntry& e) {
    nlohmann::ordered_json j = {{"ts", e.ts},
                                {"txnId", e.txnId},
                                {"op", std::string(1, static_cast<char>(e.op))},
                                {"ns", e.ns}};
    if (e.op == OplogOp::kCommand) {
        j["command"] = e.value;
    } else {
        j["key"] = bytesToJson(e.key);
        if (e.op != OplogOp::kDelete)
            j["value"] = bytesToJson(e.value);
    }
    return j;
}

std::string entryLine(const OplogEntry& e) {
    if (e.op == OplogOp::kCommand)
        return fmt::format("{:>8}  c  {:<24} {}", e.ts, e.ns, e.value);
    return fmt::format("{:>8}  {}  {:<24} {}{}", e.ts, static_cast<char>(e.op), e.ns,
                       displayBytes(e.key, 60),
                       e.op == OplogOp::kDelete ? "" : " = " + displayBytes(e.value, 120));
}

// "from=TS", "limit=N", "ns=NS" options of oplog and tail.
Status oplogOptions(const Args& a, bool allowFromLimit, OplogReadOptions* o,
                    uint64_t* limit) {
    for (const Token& t : a) {
        std::string name, value;
        if (!splitOption(t.text, &name, &value) || (!allowFromLimit && name != "ns") ||
            (name != "from" && name != "limit" && name != "ns"))
            return Status::InvalidArgument(
                fmt::format("unexpected {}; usage: {}", displayBytes(t.text, 40),
                            allowFromLimit ? "oplog [from=TS] [limit=N] [ns=NS]" : "tail [ns=NS]"));
        if (name == "ns") {
            o->ns = value;
            continue;
        }
        auto n = parseNumber(value, name);
        if (!n.ok())
            return n.status();
        (name == "from" ? o->from : *limit) = n.value();
    }
    return Status::OK();
}

Reply oplogCmd(Shell& sh, const Args& a) {
    OplogReadOptions o;
    uint64_t limit = 100;
    if (Status s = oplogOptions(a, true, &o, &limit); !s.ok())
        return Reply::error(s);
    auto cursor = sh.engine().openOplog(o);
    if (!cursor.ok())
        return Reply::error(cursor.status());
    sh.engine().refreshOplogVisibility();
    std::vector<OplogEntry> entries;
    while (entries.size() < limit) {
        size_t before = entries.size();
        if (Status s = cursor.value()->next(&entries, limit - entries.size()); !s.ok())
            return Reply::error(s);
        if (entries.size() == before)
            break;
    }
    if (entries.size() > limit)
        entries.resize(limit);
    Reply r;
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& e : entries) {
        list.push_back(entryJson(e));
        r.lines.push_back(entryLine(e));
    }
    r.fields["entries"] = std::move(list);
    if (entries.empty())
        r.lines.push_back("(no entries)");
    return r;
}

Reply tail(Shell& sh, const Args& a) {
    if (a.size() == 1 && !a[0].quoted && lowerCase(a[0].text) == "stop") {
        if (!sh.tailing())
            return Reply::error(Status::IllegalOperation("not following the oplog"));
        uint64_t n = sh.stopTail();
        Reply r;
        r.fields["entries"] = n;
        r.lines.push_back(fmt::format("stopped following ({} entr{})", n, n == 1 ? "y" : "ies"));
        return r;
    }
    OplogReadOptions o;
    uint64_t unused = 0;
    if (Status s = oplogOptions(a, false, &o, &unused); !s.ok())
        return Reply::error(s);
    if (Status s = sh.startTail(o.ns); !s.ok())
        return Reply::error(s);
    Reply r;
    r.fields["following"] = true;
    r.fields["ns"] = o.ns;
    r.lines.push_back("following the oplog: new entries print as they commit (`tail stop` or "
                      "Ctrl-C ends it)");
    return r;
}

Reply watch(Shell& sh, const Args& a) {
    if (a.size() == 1 && !a[0].quoted && lowerCase(a[0].text) == "stop") {
        if (!sh.watching())
            return Reply::error(Status::IllegalOperation("not watching"));
        uint64_t n = sh.stopWatch();
        Reply r;
        r.fields["events"] = n;
        r.lines.push_back(fmt::format("stopped watching ({} event{})", n, n == 1 ? "" : "s"));
        return r;
    }
    std::string ns, token;
    for (const Token& t : a) {
        std::string name, value;
        if (!splitOption(t.text, &name, &value) || (name != "ns" && name != "resume_after"))
            return Reply::error(Status::InvalidArgument(
                fmt::format("unexpected {}; usage: watch [ns=NS] [resume_after=TOKEN] | watch stop",
                            displayBytes(t.text, 40))));
        (name == "ns" ? ns : token) = value;
    }
    if (Status s = sh.startWatch(ns, token); !s.ok())
        return Reply::error(s);
    Reply r;
    r.fields["watching"] = true;
    r.fields["ns"] = ns;
    r.lines.push_back("watching: change events print as they are majority-committed (`watch "
                      "stop` or Ctrl-C ends it)");
    return r;
}

Reply locks(Shell& sh, const Args&) {
    Reply r;
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    auto holder = [&](const LockTableEntry::Request& e) {
        std::string who = sh.sessionOfLocker(e.lockerId);
        return who.empty() ? fmt::format("locker {}", e.lockerId) : who;
    };
    r.lines.push_back(fmt::format("{:<32} {:<36} {}", "resource", "granted", "waiting"));
    for (const LockTableEntry& h : sh.engine().lockTable()) {
        nlohmann::ordered_json granted = nlohmann::ordered_json::array();
        nlohmann::ordered_json waiting = nlohmann::ordered_json::array();
        std::vector<std::string> g, w;
        for (const auto& e : h.granted) {
            granted.push_back({{"session", holder(e)}, {"mode", e.mode}});
            g.push_back(fmt::format("{}:{}", holder(e), e.mode));
        }
        for (const auto& e : h.waiting) {
            waiting.push_back({{"session", holder(e)}, {"mode", e.mode}});
            w.push_back(fmt::format("{}:{}", holder(e), e.mode));
        }
        list.push_back({{"resource", h.resource}, {"granted", granted}, {"waiting", waiting}});
        r.lines.push_back(
            fmt::format("{:<32} {:<36} {}", h.resource, fmt::join(g, " "), fmt::join(w, " ")));
    }
    r.fields["locks"] = std::move(list);
    return r;
}

Reply status(Shell& sh, const Args& a) {
    nlohmann::ordered_json all = nlohmann::ordered_json::parse(sh.engine().statsJson());
    Reply r;
    if (a.empty()) {
        r.fields["status"] = all;
    } else {
        if (!all.contains(a[0].text))
            return Reply::error(Status::InvalidArgument(
                fmt::format("no status section {}; there are: {}", displayBytes(a[0].text, 40), [&] {
                    std::vector<std::string> names;
                    for (const auto& [k, v] : all.items())
                        names.push_back(k);
                    return fmt::format("{}", fmt::join(names, ", "));
                }())));
        r.fields["status"] = all[a[0].text];
    }
    std::string text = r.fields["status"].dump(2);
    size_t start = 0;
    while (start <= text.size()) {
        size_t nl = text.find('\n', start);
        r.lines.push_back(
            text.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
        if (nl == std::string::npos)
            break;
        start = nl + 1;
    }
    return r;
}

Reply help(Shell& sh, const Args& a) {
    Reply r;
    if (!a.empty()) {
        const CommandSpec* c = sh.commands().find(a[0].text);
        if (!c)
            return Reply::error(
                Status::InvalidArgument(fmt::format("no command {}", displayBytes(a[0].text, 40))),
                "type `help` for the list of commands");
        r.fields["usage"] = c->usage;
        r.fields["summary"] = c->summary;
        r.lines = {"usage: " + c->usage, "  " + c->summary};
        return r;
    }
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const CommandSpec& c : sh.commands().all()) {
        list.push_back({{"usage", c.usage}, {"summary", c.summary}});
        r.lines.push_back(fmt::format("  {:<44} {}", c.usage, c.summary));
    }
    r.lines.push_back(
        "Keys and values are words or \"quoted strings\" (\\\" and \\\\ escape); ';' separates "
        "commands.");
    r.fields["commands"] = std::move(list);
    return r;
}

Reply quit(Shell&, const Args&) {
    Reply r;
    r.quit = true;
    return r;
}

}  // namespace

Reply tailEntryReply(const OplogEntry& e) {
    Reply item;
    item.cmd = "tail";
    item.fields["entry"] = entryJson(e);
    item.lines.push_back(entryLine(e));
    return item;
}

Reply changeEventReply(const ChangeEvent& e) {
    Reply item;
    item.cmd = "watch";
    nlohmann::ordered_json j = {{"operationType", changeOpName(e.op)}, {"ns", e.ns}};
    if (!e.key.empty() || (e.op != ChangeOp::kDrop && e.op != ChangeOp::kDropDatabase))
        j["key"] = bytesToJson(e.key);
    if (e.value)
        j["value"] = bytesToJson(*e.value);
    j["clusterTime"] = e.clusterTime;
    j["txnId"] = e.txnId;
    j["resumeToken"] = e.resumeToken;
    item.fields["event"] = std::move(j);
    std::string what = e.key.empty() && !e.value ? e.ns : e.ns + " " + displayBytes(e.key, 60);
    if (e.value)
        what += " = " + displayBytes(*e.value, 120);
    item.lines.push_back(
        fmt::format("{:>8}  {:<12} {}  (resume_after={})", e.clusterTime, changeOpName(e.op), what,
                    e.resumeToken));
    return item;
}

void addAdminCommands(CommandTable& t) {
    // None of these but `history` uses the current session (`set` checks
    // for itself); `tail`, `locks` and `quit` belong to the foreground.
    auto global = [&](CommandSpec spec, bool background = true) {
        CommandSpec& c = t.add(std::move(spec));
        c.usesSession = false;
        c.background = background;
    };
    global({"ts", "ts", "the timestamps: clock, oldest, stable, all_durable, oldest_reader, pinned",
            0, 0, ts});
    global({"set", "set oldest|stable|lock_timeout_ms|retry_ms|slowms N",
            "move a timestamp, this session's lock timeout / write-conflict retry deadline, or "
            "the slow-op threshold",
            2, 2, set},
           false);
    t.add({"history", "history COLL KEY",
           "every version of KEY, newest first, from the update chain and the history store", 2, 2,
           history});
    global({"gc", "gc", "run the history sweep now", 0, 0, gc});
    global({"checkpoint", "checkpoint", "write a checkpoint now (at the stable timestamp)", 0, 0,
            checkpoint});
    global({"repair", "repair [clear]",
            "the repair record: every cut of a damaged oplog and the commits it lost (clear: "
            "forget it once dealt with)",
            0, 1, repair});
    global({"oplog", "oplog [from=TS] [limit=N] [ns=NS]",
            "list oplog entries (default: the first 100)", 0, 3, oplogCmd});
    global({"tail", "tail [ns=NS] | tail stop",
            "follow new oplog entries in the background until `tail stop` or Ctrl-C", 0, 1, tail},
           false);
    global({"watch", "watch [ns=NS] [resume_after=TOKEN] | watch stop",
            "a change stream: print change events in the background until `watch stop` or "
            "Ctrl-C",
            0, 2, watch},
           false);
    global({"locks", "locks", "the lock table: resources, granted modes and waiters", 0, 0, locks},
           false);
    global({"status", "status [SECTION]", "every statistic, as JSON (or one section)", 0, 1,
            status});
    global({"help", "help [COMMAND]", "this list, or one command's usage", 0, 1, help});
    global({"quit", "quit", "leave the shell (also exit, Ctrl-D)", 0, 0, quit}, false);
    global({"exit", "exit", "leave the shell", 0, 0, quit}, false);
}

}  // namespace mvkv::tools
