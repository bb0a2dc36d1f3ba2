// begin, commit, abort, session, sessions.
#include <fmt/format.h>

#include "tools/shell/bytes.h"
#include "tools/shell/command_table.h"
#include "tools/shell/shell.h"

namespace mvkv::tools {

namespace {

nlohmann::ordered_json tsOrNull(mvcc::Timestamp ts) {
    return ts == mvcc::kNoTimestamp ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(ts);
}

constexpr std::string_view kBeginUsage =
    "begin [read_ts=N] [roundup] [read_concern=local|snapshot|majority]";
constexpr std::string_view kCommitUsage = "commit [commit_ts=N] [w=N|majority] [wtimeout=MS]";

Reply begin(Shell& sh, const Args& a) {
    engine::TxnOptions o;
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
            const std::string level = lowerCase(value);
            if (level == "local")
                o.readConcern = engine::ReadConcern::kLocal;
            else if (level == "snapshot")
                o.readConcern = engine::ReadConcern::kSnapshot;
            else if (level == "majority")
                o.readConcern = engine::ReadConcern::kMajority;
            else
                return Reply::error(Status::InvalidArgument(
                    fmt::format("read_concern {} is not a level; use local, snapshot or majority",
                                displayBytes(value, 40))));
        } else {
            return Reply::error(Status::InvalidArgument(
                fmt::format("unexpected {}; usage: {}", displayBytes(t.text, 40), kBeginUsage)));
        }
    }
    if (Status s = sh.session().begin(o); !s.ok())
        return Reply::error(s);
    engine::SessionInfo info = sh.session().info();
    Reply r;
    r.fields["readTs"] = tsOrNull(info.readTs);
    r.fields["readConcern"] = engine::readConcernName(o.readConcern);
    r.lines.push_back(info.readTs
                          ? fmt::format("transaction begun, reading at timestamp {}", info.readTs)
                          : "transaction begun, reading the newest commits");
    return r;
}

Reply commit(Shell& sh, const Args& a) {
    std::optional<mvcc::Timestamp> ts;
    std::optional<engine::WriteConcern> wc;
    std::optional<std::chrono::milliseconds> wtimeout;
    for (const Token& t : a) {
        std::string name, value;
        if (!splitOption(t.text, &name, &value) ||
            (name != "commit_ts" && name != "w" && name != "wtimeout"))
            return Reply::error(Status::InvalidArgument(
                fmt::format("unexpected {}; usage: {}", displayBytes(t.text, 40), kCommitUsage)));
        if (name == "w" && lowerCase(value) == "majority") {
            wc = engine::WriteConcern::majorityOf();
            continue;
        }
        auto n = parseNumber(value, name);
        if (!n.ok())
            return Reply::error(n.status());
        if (name == "commit_ts") {
            if (n.value() == 0)  // checked here: the engine rolls back on a bad commit timestamp
                return Reply::error(Status::InvalidArgument(
                    "commit_ts must be a timestamp > 0; the transaction is still open"));
            ts = n.value();
        } else if (name == "w") {
            if (n.value() == 0 || n.value() > 1000)
                return Reply::error(Status::InvalidArgument(
                    "w must be 1 or more members, or majority; the transaction is still open"));
            wc = engine::WriteConcern::nodes(static_cast<int>(n.value()));
        } else {
            // MongoDB's wtimeout 0: no limit.
            if (n.value() > 0)
                wtimeout = std::chrono::milliseconds(n.value());
        }
    }
    if (wtimeout && !wc)
        return Reply::error(Status::InvalidArgument(
            "wtimeout goes with a write concern: give w=N or w=majority; the transaction is "
            "still open"));
    if (wc)
        wc->wtimeout = wtimeout;
    const size_t writes = sh.session().info().writes;
    Status s = wc ? sh.session().commit(*wc, ts) : sh.session().commit(ts);
    // A write concern's timeout comes after the commit: the write stands.
    if (s.code() == StatusCode::kWriteConcernTimeout)
        return Reply::error(s, "the transaction is committed; only the wait for the members "
                               "ended (rs status shows them)");
    if (!s.ok())
        return Reply::error(s);
    mvcc::Timestamp at = writes ? sh.session().lastCommitTs() : mvcc::kNoTimestamp;
    Reply r;
    r.fields["commitTs"] = tsOrNull(at);
    r.fields["writes"] = writes;
    if (wc)
        r.fields["writeConcern"] = wc->describe();
    r.lines.push_back(at ? fmt::format("committed at timestamp {} ({} write{})", at, writes,
                                       writes == 1 ? "" : "s")
                         : "committed (read-only)");
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
        engine::SessionInfo i = s->info();
        list.push_back({{"name", name},
                        {"current", name == sh.sessionName()},
                        {"inTransaction", i.inTransaction},
                        {"readTs", tsOrNull(i.readTs)},
                        {"txnId", i.txnId},
                        {"writes", i.writes}});
        r.lines.push_back(fmt::format(
            "{} {:<16} {:<14} {:>8} {:>8} {:>7}", name == sh.sessionName() ? "*" : " ", name,
            i.inTransaction ? "in transaction" : "idle", i.readTs ? std::to_string(i.readTs) : "-",
            i.txnId ? std::to_string(i.txnId) : "-", i.writes));
    }
    r.fields["sessions"] = std::move(list);
    return r;
}

}  // namespace

void addTxnCommands(CommandTable& t) {
    t.add({"begin", std::string(kBeginUsage),
           "start a transaction (a snapshot; at read_ts when given; roundup: below oldest reads at "
           "oldest; read_concern=majority: at the majority commit point)",
           0, 3, begin});
    t.add({"commit", std::string(kCommitUsage),
           "commit the transaction (at commit_ts, or the clock's next); w=: wait for that many "
           "replica set members, or a majority, up to wtimeout ms",
           0, 3, commit});
    t.add({"abort", "abort", "roll the transaction back", 0, 0, abort});
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
