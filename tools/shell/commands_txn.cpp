// begin, commit, prepare, abort, session, sessions.
#include <fmt/format.h>

#include "bytes.h"
#include "command_table.h"
#include "shell.h"

namespace mvkv::tools {

namespace {

nlohmann::ordered_json tsOrNull(Timestamp ts) {
    return ts == kNoTimestamp ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(ts);
}

constexpr std::string_view kBeginUsage =
    "begin [read_ts=N] [roundup] [read_concern=local|snapshot|majority] [ignore_prepare]";
constexpr std::string_view kCommitUsage =
    "commit [commit_ts=N] [durable_ts=N] [w=N|majority] [wtimeout=MS]";

StatusWith<ReadConcern> parseReadConcern(const std::string& value) {
    const std::string level = lowerCase(value);
    if (level == "local")
        return ReadConcern::kLocal;
    if (level == "snapshot")
        return ReadConcern::kSnapshot;
    if (level == "majority")
        return ReadConcern::kMajority;
    return Status::InvalidArgument(fmt::format(
        "read_concern {} is not a level; use local, snapshot or majority", displayBytes(value, 40)));
}

// readconcern [LEVEL]: the session's read concern outside transactions.
Reply readConcern(Shell& sh, const Args& a) {
    if (!a.empty()) {
        auto level = parseReadConcern(a[0].text);
        if (!level.ok())
            return Reply::error(level.status());
        sh.session().setReadConcern(level.value());
    }
    const std::string_view name = readConcernName(sh.session().readConcern());
    Reply r;
    r.fields["readConcern"] = std::string(name);
    r.lines.push_back(fmt::format("reads outside a transaction: read concern {}", name));
    return r;
}

Reply begin(Shell& sh, const Args& a) {
    TxnOptions o;
    for (const Token& t : a) {
        std::string name, value;
        if (splitOption(t.text, &name, &value) && name == "read_ts") {
            auto n = parseNumber(value, "read_ts");
            if (!n.ok())
                return Reply::error(n.status());
            o.readTs = n.value();
        } else if (lowerCase(t.text) == "roundup") {
            o.roundUpReadTs = true;
        } else if (splitOption(t.text, &name, &value) && name == "read_concern") {
            auto level = parseReadConcern(value);
            if (!level.ok())
                return Reply::error(level.status());
            o.readConcern = level.value();
        } else if (lowerCase(t.text) == "ignore_prepare") {
            o.ignorePrepare = true;
        } else {
            return Reply::error(Status::InvalidArgument(
                fmt::format("unexpected {}; usage: {}", displayBytes(t.text, 40), kBeginUsage)));
        }
    }
    if (Status s = sh.session().begin(o); !s.ok())
        return Reply::error(s);
    SessionInfo info = sh.session().info();
    Reply r;
    r.fields["readTs"] = tsOrNull(info.readTs);
    r.fields["readConcern"] = std::string(readConcernName(o.readConcern));
    r.lines.push_back(info.readTs
                          ? fmt::format("transaction begun, reading at timestamp {}", info.readTs)
                          : "transaction begun, reading the newest commits");
    if (o.ignorePrepare) {
        r.fields["ignorePrepare"] = true;
        r.lines.back() += " (ignoring prepared writes; it may not write)";
    }
    return r;
}

// A timestamp option of commit or prepare: `name`=N with N > 0.
StatusWith<Timestamp> timestampOption(const std::string& value, std::string_view name,
                                            std::string_view still) {
    auto n = parseNumber(value, name);
    if (!n.ok())
        return n.status();
    if (n.value() == 0)  // checked here: the engine rolls back on a bad commit timestamp
        return Status::InvalidArgument(
            fmt::format("{} must be a timestamp > 0; the transaction is still {}", name, still));
    return n.value();
}

Reply commit(Shell& sh, const Args& a) {
    std::optional<Timestamp> ts;
    std::optional<Timestamp> durable;
    const bool prepared = sh.session().prepared();
    const char* still = prepared ? "prepared" : "open";
    std::optional<WriteConcern> wc;
    std::optional<std::chrono::milliseconds> wtimeout;
    for (const Token& t : a) {
        std::string name, value;
        if (!splitOption(t.text, &name, &value) ||
            (name != "commit_ts" && name != "durable_ts" && name != "w" && name != "wtimeout"))
            return Reply::error(Status::InvalidArgument(
                fmt::format("unexpected {}; usage: {}", displayBytes(t.text, 40), kCommitUsage)));
        if (name == "commit_ts" || name == "durable_ts") {
            auto n = timestampOption(value, name, still);
            if (!n.ok())
                return Reply::error(n.status());
            (name == "commit_ts" ? ts : durable) = n.value();
            continue;
        }
        if (name == "w" && lowerCase(value) == "majority") {
            wc = WriteConcern{1, true, std::nullopt};
            continue;
        }
        auto n = parseNumber(value, name);
        if (!n.ok())
            return Reply::error(n.status());
        if (name == "w") {
            if (n.value() == 0 || n.value() > 1000)
                return Reply::error(Status::InvalidArgument(fmt::format(
                    "w must be 1 or more members, or majority; the transaction is still {}", still)));
            wc = WriteConcern{static_cast<int>(n.value()), false, std::nullopt};
        } else if (n.value() > 0) {  // MongoDB's wtimeout 0: no limit
            wtimeout = std::chrono::milliseconds(n.value());
        }
    }
    if (durable && !ts)
        return Reply::error(Status::InvalidArgument(
            "durable_ts goes with commit_ts (commit commit_ts=N durable_ts=N)"));
    if (wtimeout && !wc)
        return Reply::error(Status::InvalidArgument(fmt::format(
            "wtimeout goes with a write concern: give w=N or w=majority; the transaction is "
            "still {}",
            still)));
    if (wc)
        wc->wtimeout = wtimeout;
    const size_t writes = sh.session().info().writes;
    Status s;
    if (durable)  // a prepared commit with its own durable timestamp (then the wait)
        s = (wc ? sh.session().commit(*ts, *durable, *wc) : sh.session().commit(*ts, *durable))
                .status();
    else
        s = (wc ? sh.session().commit(*wc, ts) : sh.session().commit(ts)).status();
    // A write concern's timeout comes after the commit: the write stands.
    if (s.code() == StatusCode::kWriteConcernTimeout)
        return Reply::error(s, "the transaction is committed; only the wait for the members "
                               "ended (rs status shows them)");
    if (!s.ok())
        return Reply::error(s);
    Timestamp at = writes ? sh.session().lastCommitTimestamp() : kNoTimestamp;
    Reply r;
    r.fields["commitTs"] = tsOrNull(at);
    r.fields["writes"] = writes;
    if (wc)
        r.fields["writeConcern"] = describeWriteConcern(*wc);
    if (prepared)
        r.fields["durableTs"] = tsOrNull(durable ? *durable : at);
    r.lines.push_back(at ? fmt::format("committed at timestamp {} ({} write{})", at, writes,
                                       writes == 1 ? "" : "s")
                         : "committed (read-only)");
    if (prepared && durable && at)
        r.lines.back() += fmt::format(", durable at {}", *durable);
    return r;
}

Reply prepare(Shell& sh, const Args& a) {
    std::string name, value;
    if (!splitOption(a[0].text, &name, &value) || name != "prepare_ts")
        return Reply::error(Status::InvalidArgument(fmt::format(
            "unexpected {}; usage: prepare prepare_ts=N", displayBytes(a[0].text, 40))));
    auto ts = timestampOption(value, "prepare_ts", "open");
    if (!ts.ok())
        return Reply::error(ts.status());
    if (Status s = sh.session().prepare(ts.value()); !s.ok())
        return Reply::error(s);
    SessionInfo info = sh.session().info();
    Reply r;
    r.fields["prepareTs"] = info.prepareTs;
    r.fields["txnId"] = info.txnId;
    r.fields["writes"] = info.writes;
    r.lines.push_back(fmt::format(
        "prepared at timestamp {} (transaction {}, {} write{}); commit commit_ts=N [durable_ts=N] "
        "or abort",
        info.prepareTs, info.txnId, info.writes, info.writes == 1 ? "" : "s"));
    return r;
}

Reply abort(Shell& sh, const Args&) {
    if (Status s = sh.session().abort(); !s.ok())
        return Reply::error(s);
    Reply r;
    r.lines.push_back("aborted");
    return r;
}

Reply session(Shell& sh, const Args& a) {
    const std::string& name = a[0].text;
    if (name.empty() || name.size() > 64 || name.find_first_of(" \t\r\n\"\\;") != std::string::npos)
        return Reply::error(Status::InvalidArgument(
            "a session name is 1 to 64 characters without spaces, quotes or ';'"));
    bool created = sh.useSession(name);
    Reply r;
    r.session = name;
    r.fields["created"] = created;
    r.lines.push_back(
        fmt::format("{} session {}", created ? "created and switched to" : "switched to", name));
    return r;
}

Reply sessions(Shell& sh, const Args&) {
    Reply r;
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    r.lines.push_back(fmt::format("  {:<16} {:<14} {:>8} {:>8} {:>7}", "session", "state",
                                  "read_ts", "txn_id", "writes"));
    for (const auto& [name, s] : sh.sessions()) {
        if (std::optional<uint64_t> opid = sh.busyWith(name)) {
            // Its background thread owns it: nothing of it can be read here.
            list.push_back({{"name", name},
                            {"current", name == sh.sessionName()},
                            {"busy", true},
                            {"bgOpid", *opid}});
            r.lines.push_back(fmt::format("{} {:<16} bg opid {}", name == sh.sessionName() ? "*" : " ",
                                          name, *opid));
            continue;
        }
        SessionInfo i = s->info();
        list.push_back({{"name", name},
                        {"current", name == sh.sessionName()},
                        {"inTransaction", i.inTransaction},
                        {"prepared", i.prepared},
                        {"readTs", tsOrNull(i.readTs)},
                        {"txnId", i.txnId},
                        {"writes", i.writes}});
        r.lines.push_back(fmt::format("{} {:<16} {:<14} {:>8} {:>8} {:>7}",
                                      name == sh.sessionName() ? "*" : " ", name,
                                      i.prepared        ? "prepared"
                                      : i.inTransaction ? "in transaction"
                                                        : "idle",
                                      i.readTs ? std::to_string(i.readTs) : "-",
                                      i.txnId ? std::to_string(i.txnId) : "-", i.writes));
    }
    r.fields["sessions"] = std::move(list);
    return r;
}

}  // namespace

void addTxnCommands(CommandTable& t) {
    t.add({"begin", std::string(kBeginUsage),
           "start a transaction (a snapshot; at read_ts when given; roundup: below oldest reads at "
           "oldest; read_concern=majority: at the majority commit point; ignore_prepare: prepared "
           "writes read as absent)",
           0, 3, begin});
    t.add({"commit", std::string(kCommitUsage),
           "commit the transaction (at commit_ts, or the clock's next; a prepared one needs "
           "commit_ts, durable at durable_ts or commit_ts); w=: wait for that many replica set "
           "members, or a majority, up to wtimeout ms",
           0, 5, commit});
    t.add({"prepare", "prepare prepare_ts=N",
           "prepare the transaction at prepare_ts (WiredTiger's prepare_transaction): no more "
           "writes; readers conflict until commit or abort",
           1, 1, prepare});
    t.add({"abort", "abort", "roll the transaction back", 0, 0, abort});
    t.add({"readconcern", "readconcern [local|snapshot|majority]",
           "show or set the read concern of this session's reads outside a transaction (get, "
           "scan, count, find): majority reads at the majority commit point",
           0, 1, readConcern});
    // Both read or change the shell's table of sessions: foreground only.
    CommandSpec& one = t.add({"session", "session NAME",
                              "switch to session NAME, creating it (its own transaction and locks)",
                              1, 1, session});
    one.usesSession = false;
    one.background = false;
    CommandSpec& all =
        t.add({"sessions", "sessions", "list sessions with their transaction state", 0, 0, sessions});
    all.usesSession = false;
    all.background = false;
}

}  // namespace mvkv::tools
