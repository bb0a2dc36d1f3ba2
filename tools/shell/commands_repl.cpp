// rs: a replica set of the shell's engine in the same process
// (docs/replication.md): `rs add [path=DIR]` (one more secondary, in memory or
// durable on DIR), `rs status`,
// `rs pause N`, `rs resume N`. Write and read concerns are `commit w=` and
// `begin read_concern=` (commands_txn.cpp).
#include <fmt/format.h>

#include "bytes.h"
#include "command_table.h"
#include "shell.h"

namespace mvkv::tools {

namespace {

constexpr std::string_view kRsUsage = "rs add [path=DIR] | rs status | rs pause N | rs resume N";

Reply usage(std::string_view what) {
    return Reply::error(Status::InvalidArgument(
        fmt::format("unexpected {}; usage: {}", displayBytes(what, 40), kRsUsage)));
}

Reply rsStatus(Shell& sh) {
    Reply r;
    ReplicaSet* set = sh.replicaSet();
    if (!set) {
        r.fields["members"] = nlohmann::ordered_json::array();
        r.fields["majorityCommitPoint"] = sh.engine().majorityCommitTs();
        r.lines.push_back("no replica set: the engine is standalone (`rs add` starts one)");
        return r;
    }
    auto doc = nlohmann::ordered_json::parse(set->statusJson());
    r.fields["members"] = doc["members"];
    r.fields["majorityCommitPoint"] = doc["majorityCommitPoint"];
    r.lines.push_back(fmt::format("  {:>3} {:<10} {:>12} {:>12}", "id", "state", "lastApplied",
                                  "lastDurable"));
    for (const MemberStatus& m : set->status()) {
        r.lines.push_back(fmt::format("  {:>3} {:<10} {:>12} {:>12}{}", m.id, m.state,
                                      m.lastApplied, m.lastDurable,
                                      m.error.empty() ? "" : "  " + m.error));
    }
    r.lines.push_back(fmt::format("majority commit point {}", doc["majorityCommitPoint"].get<uint64_t>()));
    return r;
}

Reply rs(Shell& sh, const Args& a) {
    const std::string verb = lowerCase(a[0].text);
    if (verb == "status") {
        if (a.size() != 1)
            return usage(a[1].text);
        return rsStatus(sh);
    }
    if (verb == "add") {
        // `rs add` in memory; `rs add path=DIR` durable, on its own directory.
        std::string path;
        if (a.size() > 2)
            return usage(a[2].text);
        if (a.size() == 2) {
            std::string name;
            if (!splitOption(a[1].text, &name, &path) || lowerCase(name) != "path" || path.empty())
                return usage(a[1].text);
        }
        auto set = sh.replicaSetOrStart();
        if (!set.ok())
            return Reply::error(set.status());
        auto id = path.empty() ? set.value()->addSecondary() : set.value()->addSecondary(path);
        if (!id.ok())
            return Reply::error(id.status());
        Reply r;
        r.fields["id"] = id.value();
        r.fields["members"] = set.value()->size();
        const std::string where = path.empty() ? "in memory" : "durable, on " + path;
        r.lines.push_back(fmt::format("member {} added ({}), applying the oplog; the set has "
                                      "{} members",
                                      id.value(), where, set.value()->size()));
        return r;
    }
    if (verb != "pause" && verb != "resume")
        return usage(a[0].text);
    if (a.size() != 2)
        return usage(verb);
    auto n = parseNumber(a[1].text, "member id");
    if (!n.ok())
        return Reply::error(n.status());
    ReplicaSet* set = sh.replicaSet();
    if (!set)
        return Reply::error(
            Status::NotFound("no replica set: the engine is standalone (`rs add` starts one)"));
    const int id = n.value() > 1000000 ? -1 : static_cast<int>(n.value());
    Status s = verb == "pause" ? set->pause(id) : set->resume(id);
    if (!s.ok())
        return Reply::error(s);
    Reply r;
    r.fields["id"] = id;
    r.fields["paused"] = verb == "pause";
    r.lines.push_back(fmt::format("member {} {}", id, verb == "pause" ? "paused" : "resumed"));
    return r;
}

}  // namespace

void addReplCommands(CommandTable& t) {
    CommandSpec& spec = t.add({"rs", std::string(kRsUsage),
                               "a replica set of this engine: add a secondary (in memory, or durable on "
                               "path=DIR), show "
                               "members and the majority commit point, pause or resume member N",
                               1, 2, rs});
    spec.usesSession = false;
    spec.background = false;  // changes the shell's own set
}

}  // namespace mvkv::tools
