// Operations (issue 16, docs/operations.md): bg, wait, jobs, currentop,
// killop, serverstatus, profile, and `show profile` / `show log`.
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

#include "bytes.h"
#include "command_table.h"
#include "shell.h"

namespace mvkv::tools {

namespace {

using Json = nlohmann::ordered_json;

// How `jobs` and the notices show a command: its words, quoted as the
// tokenizer would read them back where that matters.
std::string commandText(const Args& words) {
    std::string out;
    for (const Token& t : words) {
        if (!out.empty())
            out += ' ';
        out += displayBytes(t.text, 60);
    }
    return out;
}

// The lines of a pretty-printed JSON document (human mode).
std::vector<std::string> jsonLines(const Json& j) {
    std::vector<std::string> out;
    std::string text = j.dump(2, ' ', false, Json::error_handler_t::replace);
    size_t start = 0;
    while (start <= text.size()) {
        size_t nl = text.find('\n', start);
        out.push_back(text.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
        if (nl == std::string::npos)
            break;
        start = nl + 1;
    }
    return out;
}

// "limit=N" (the only option of show profile / show log).
Status limitOption(const Args& a, std::string_view usage, uint64_t* limit) {
    for (const Token& t : a) {
        std::string name, value;
        if (!splitOption(t.text, &name, &value) || name != "limit")
            return Status::InvalidArgument(
                fmt::format("unexpected {}; usage: {}", displayBytes(t.text, 40), usage));
        auto n = parseNumber(value, "limit");
        if (!n.ok())
            return n.status();
        *limit = n.value();
    }
    return Status::OK();
}

Reply bg(Shell& sh, const Args& a) {
    const Token& word = a[0];
    const CommandSpec* spec = word.quoted ? nullptr : sh.commands().find(word.text.substr(0, 64));
    if (!spec) {
        std::vector<std::string> close = sh.commands().suggest(word.text);
        return Reply::error(
            Status::InvalidArgument(fmt::format("unknown command {}", displayBytes(word.text, 64))),
            close.empty() ? "type `help` for the list of commands"
                          : fmt::format("did you mean {}?", fmt::join(close, ", ")));
    }
    if (!spec->background)
        return Reply::error(Status::IllegalOperation(fmt::format(
            "{} cannot run in the background: it reads or changes the shell's own state",
            spec->name)));
    Args args(a.begin() + 1, a.end());
    if (Status s = checkArgs(*spec, args); !s.ok())
        return Reply::error(s);
    const std::string text = commandText(a);
    uint64_t opid = sh.startJob(*spec, std::move(args), text);
    Reply r;
    r.fields["opid"] = opid;
    r.lines.push_back(fmt::format("[bg {}] {}", opid, text));
    return r;
}

Reply waitCmd(Shell& sh, const Args& a) {
    auto opid = parseNumber(a[0].text, "opid");
    if (!opid.ok())
        return Reply::error(opid.status());
    auto reply = sh.waitJob(opid.value());
    if (!reply.ok())
        return Reply::error(reply.status(), reply.status().code() == StatusCode::kNotFound
                                                ? "`jobs` lists the background commands"
                                                : "");
    return std::move(reply).value();
}

Reply jobsCmd(Shell& sh, const Args&) {
    Reply r;
    Json list = Json::array();
    r.lines.push_back(fmt::format("{:>8}  {:<16} {:<22} {}", "opid", "session", "state", "command"));
    for (const Shell::JobInfo& j : sh.jobs()) {
        Json item = {{"opid", j.opid},
                     {"session", j.session},
                     {"command", j.command},
                     {"state", j.done ? "done" : "running"}};
        if (j.done)
            item["code"] = std::string(statusCodeName(j.status.code()));
        list.push_back(std::move(item));
        r.lines.push_back(fmt::format(
            "{:>8}  {:<16} {:<22} {}", j.opid, j.session,
            j.done ? fmt::format("done ({})", statusCodeName(j.status.code())) : "running",
            j.command));
    }
    if (list.empty())
        r.lines = {"(no background commands)"};
    r.fields["jobs"] = std::move(list);
    return r;
}

Reply currentop(Shell& sh, const Args& a) {
    bool all = false;
    if (!a.empty()) {
        if (a[0].quoted || lowerCase(a[0].text) != "all")
            return Reply::error(Status::InvalidArgument(
                fmt::format("unexpected {}; usage: currentop [all]", displayBytes(a[0].text, 40))));
        all = true;
    }
    Json doc = Json::parse(sh.engine().currentOp(all));
    Reply r;
    r.fields["inprog"] = doc["inprog"];  // the reply's own "ok" stands for the engine's ok:1
    r.lines.push_back(fmt::format("{:>8}  {:<12} {:<8} {:<24} {:>5}  {:<7} {}", "opid", "session",
                                  "op", "ns", "secs", "waiting", "lock waited for"));
    for (const Json& e : doc["inprog"]) {
        const bool idle = e.value("type", "") == "idleSession";
        std::string lock = "-";
        bool waiting = e.value("waitingForLock", false);
        if (e.contains("lockWaitingFor")) {
            const Json& w = e["lockWaitingFor"];
            lock = fmt::format("{} on {} {}", w.value("mode", "?"), w.value("type", "?"),
                               w.value("resource", "?"));
        } else if (e.value("waitingForDocumentLock", false)) {
            waiting = true;
            lock = "document lock " + e["command"].value("key", std::string("?"));
        }
        r.lines.push_back(fmt::format(
            "{:>8}  {:<12} {:<8} {:<24} {:>5}  {:<7} {}",
            idle ? std::string("-") : std::to_string(e.value("opid", uint64_t{0})),
            e.value("client", ""), idle ? std::string("idle") : e.value("op", ""),
            idle ? std::string("-") : e.value("ns", ""),
            idle ? std::string("-") : std::to_string(e.value("secs_running", int64_t{0})),
            waiting ? "yes" : "no", lock));
    }
    if (doc["inprog"].empty())
        r.lines = {"(no operation running)"};
    return r;
}

Reply killop(Shell& sh, const Args& a) {
    auto opid = parseNumber(a[0].text, "opid");
    if (!opid.ok())
        return Reply::error(opid.status());
    if (Status s = sh.engine().killOp(opid.value()); !s.ok())
        return Reply::error(s);
    Reply r;
    r.fields["opid"] = opid.value();
    r.lines.push_back(fmt::format(
        "killed opid {}: it stops with Interrupted at its next interrupt point", opid.value()));
    return r;
}

Reply serverstatus(Shell& sh, const Args& a) {
    auto doc = sh.engine().serverStatus(a.empty() ? std::string_view{} : a[0].text);
    if (!doc.ok())
        return Reply::error(doc.status());
    Json j = Json::parse(doc.value());
    j.erase("ok");  // the reply's own "ok" says it
    Reply r;
    r.fields = j;  // MongoDB's serverStatus reply: the sections at the top level
    r.lines = jsonLines(j);
    return r;
}

// A sample rate: a decimal number from 0 to 1.
StatusWith<double> parseRate(const std::string& text) {
    char* end = nullptr;
    double v = text.empty() ? NAN : std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !(v >= 0.0 && v <= 1.0))
        return Status::InvalidArgument(fmt::format(
            "samplerate must be a number from 0 to 1, not {}", displayBytes(text, 40)));
    return v;
}

Json settingJson(const ProfilingSetting& s) {
    return {{"was", s.was}, {"level", s.level}, {"slowms", s.slowMs}, {"sampleRate", s.sampleRate}};
}

Reply profile(Shell& sh, const Args& a) {
    constexpr std::string_view kUsage = "profile [LEVEL] [slowms=N] [samplerate=F]";
    std::optional<int> level;
    std::optional<int64_t> slowMs;
    std::optional<double> rate;
    for (size_t i = 0; i < a.size(); ++i) {
        std::string name, value;
        if (splitOption(a[i].text, &name, &value)) {
            if (name == "slowms") {
                auto n = parseNumber(value, "slowms");
                if (!n.ok())
                    return Reply::error(n.status());
                if (n.value() > 31536000000ull)  // the same year as `set slowms`
                    return Reply::error(Status::InvalidArgument(
                        fmt::format("slowms {} is over the limit of 31536000000 (a year)", n.value())));
                slowMs = static_cast<int64_t>(n.value());
            } else if (name == "samplerate") {
                auto r = parseRate(value);
                if (!r.ok())
                    return Reply::error(r.status());
                rate = r.value();
            } else {
                return Reply::error(Status::InvalidArgument(
                    fmt::format("unexpected {}; usage: {}", displayBytes(a[i].text, 40), kUsage)));
            }
        } else if (i == 0) {
            auto n = parseNumber(a[i].text, "the profiling level");
            if (!n.ok() || n.value() > 2)
                return Reply::error(Status::InvalidArgument(fmt::format(
                    "the profiling level is 0 (off), 1 (slower than slowms) or 2 (all), not {}",
                    displayBytes(a[i].text, 40))));
            level = static_cast<int>(n.value());
        } else {
            return Reply::error(Status::InvalidArgument(
                fmt::format("unexpected {}; usage: {}", displayBytes(a[i].text, 40), kUsage)));
        }
    }
    Engine& e = sh.engine();
    // Everything was checked above, so a refusal below leaves nothing half-set.
    if (slowMs || rate) {
        const ProfilingSetting now = e.profilingSetting(sh.db());
        if (Status s = e.setSlowOp(slowMs.value_or(now.slowMs), rate.value_or(now.sampleRate));
            !s.ok())
            return Reply::error(s);
    }
    ProfilingSetting setting = e.profilingSetting(sh.db());
    if (level) {
        auto set = e.profile(sh.db(), *level);
        if (!set.ok())
            return Reply::error(set.status());
        setting = set.value();
    }
    Reply r;
    r.fields = settingJson(setting);
    r.lines.push_back(fmt::format("db {}: profiling level {}{}; slowms {}, sampleRate {}",
                                  displayBytes(sh.db()), setting.level,
                                  level ? fmt::format(" (was {})", setting.was) : "",
                                  setting.slowMs, setting.sampleRate));
    return r;
}

}  // namespace

Reply showProfile(Shell& sh, const Args& options) {
    uint64_t limit = 5;  // the mongo shell's `show profile` shows five
    if (Status s = limitOption(options, "show profile [limit=N]", &limit); !s.ok())
        return Reply::error(s);
    std::string hint;
    if (Status s = sh.requireIdle(&hint); !s.ok())
        return Reply::error(s, hint);
    Reply r;
    Json entries = Json::array();
    if (limit > 0) {
        ScanOptions o;
        o.limit = limit;
        o.reverse = true;  // keys increase with time: newest first
        bool interrupted = false;
        Status s = sh.session().scan(sh.db() + ".system.profile", o,
                                     [&](std::string_view, std::string_view value) {
                                         if (sh.interrupted()) {
                                             interrupted = true;
                                             return false;
                                         }
                                         Json doc = Json::parse(value, nullptr, false);
                                         entries.push_back(doc.is_discarded()
                                                               ? Json(bytesToJson(value))
                                                               : std::move(doc));
                                         return true;
                                     });
        if (s.ok() && interrupted)
            s = Status::Interrupted("show profile interrupted");
        // No profile collection yet: nothing was profiled in this database.
        if (!s.ok() && s.code() != StatusCode::kNamespaceNotFound)
            return Reply::error(s);
    }
    for (const Json& d : entries) {
        if (!d.is_object()) {
            r.lines.push_back(d.dump());
            continue;
        }
        r.lines.push_back(fmt::format("{}  {:<7} {:<24} {:>6}ms  {}", d.value("ts", ""),
                                      d.value("op", ""), d.value("ns", ""),
                                      d.value("millis", int64_t{0}),
                                      d.contains("command") ? d["command"].dump() : ""));
    }
    if (entries.empty())
        r.lines.push_back(fmt::format(
            "(no profile entries in {}.system.profile; `profile 2` profiles every operation)",
            displayBytes(sh.db())));
    r.fields["db"] = sh.db();
    r.fields["entries"] = std::move(entries);
    return r;
}

Reply showLog(Shell& sh, const Args& options) {
    uint64_t limit = 0;  // as getLog: every line the ring holds
    if (Status s = limitOption(options, "show log [limit=N]", &limit); !s.ok())
        return Reply::error(s);
    Reply r;
    Json lines = Json::array();
    for (const std::string& line : sh.engine().slowOpLog(limit)) {
        Json doc = Json::parse(line, nullptr, false);
        lines.push_back(doc.is_discarded() ? Json(line) : std::move(doc));
        r.lines.push_back(line);
    }
    if (lines.empty())
        r.lines.push_back("(no slow operations logged; `set slowms 0` logs every one)");
    r.fields["lines"] = std::move(lines);
    return r;
}

void addOpsCommands(CommandTable& t) {
    CommandSpec& b = t.add({"bg", "bg COMMAND",
                            "run COMMAND in this session on a thread of its own; prints its opid "
                            "(the session is busy until it ends)",
                            1, SIZE_MAX, bg});
    b.background = false;
    auto foreground = [&](CommandSpec spec) {
        CommandSpec& c = t.add(std::move(spec));
        c.usesSession = false;
        c.background = false;
    };
    foreground({"wait", "wait OPID",
                "wait for background command OPID to end and print its reply", 1, 1, waitCmd});
    foreground({"jobs", "jobs", "the background commands: opid, session, command, state", 0, 0,
                jobsCmd});
    auto global = [&](CommandSpec spec) { t.add(std::move(spec)).usesSession = false; };
    global({"currentop", "currentop [all]",
            "running operations (all: and idle open transactions), with the lock each waits for",
            0, 1, currentop});
    global({"killop", "killop OPID",
            "stop operation OPID at its next interrupt point (Interrupted)", 1, 1, killop});
    global({"serverstatus", "serverstatus [SECTION]",
            "MongoDB's serverStatus: locks, globalLock, opcounters, metrics, transactions, ...", 0,
            1, serverstatus});
    global({"profile", "profile [LEVEL] [slowms=N] [samplerate=F]",
            "this database's profiling level (0 off, 1 slow, 2 all) and the slow-op settings", 0,
            3, profile});
}

}  // namespace mvkv::tools
