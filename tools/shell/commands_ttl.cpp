// TTL collections (docs/ttl.md): collmod (expire_after at run time) and ttl
// (the monitor's figures; `ttl run`: one pass now). `create ...
// expire_after=` is the catalog's; `put ... ttl=` the data commands'.
#include <fmt/format.h>

#include "bytes.h"
#include "command_table.h"
#include "shell.h"
#include "time_text.h"

namespace mvkv::tools {

namespace {

constexpr std::string_view kCollModUsage = "collmod COLL expire_after=DURATION";

Reply collmod(Shell& sh, const Args& a) {
    std::string name, value;
    if (a[1].quoted || !splitOption(a[1].text, &name, &value) || name != "expire_after")
        return Reply::error(Status::InvalidArgument(
            fmt::format("unexpected {}; usage: {}", displayBytes(a[1].text, 40), kCollModUsage)));
    auto ms = parseDurationMs(value, "expire_after", kMaxExpireAfterSeconds * 1000);
    if (!ms.ok())
        return Reply::error(ms.status());
    if (ms.value() % 1000 != 0)
        return Reply::error(Status::InvalidArgument(
            fmt::format("expire_after {} is not whole seconds: a TTL collection counts in seconds",
                        displayBytes(value, 40))));
    const std::string ns = sh.ns(a[0]);
    const int64_t seconds = ms.value() / 1000;
    if (Status s = sh.session().setExpireAfterSeconds(ns, seconds); !s.ok())
        return Reply::error(s);
    Reply r;
    r.fields["ns"] = ns;
    r.fields["expireAfterSeconds"] = seconds;
    r.lines.push_back(fmt::format(
        "{}: entries now expire {} s after their write (those with an explicit expiry keep it)",
        displayBytes(ns), seconds));
    return r;
}

Reply ttlRun(Shell& sh) {
    auto pass = sh.engine().runTtlPass();
    if (!pass.ok())
        return Reply::error(pass.status());
    const TtlPassResult& p = pass.value();
    Reply r;
    r.fields["deleted"] = p.deleted;
    r.fields["expired"] = p.expired;
    r.fields["skippedConflicts"] = p.skippedConflicts;
    r.fields["skippedLockTimeouts"] = p.skippedLockTimeouts;
    r.fields["collections"] = p.collections;
    r.fields["now"] = p.nowMs;
    r.lines.push_back(fmt::format("deleted {} of {} expired entr{} in {} TTL collection{}",
                                  p.deleted, p.expired, p.expired == 1 ? "y" : "ies", p.collections,
                                  p.collections == 1 ? "" : "s"));
    if (p.skippedConflicts > 0)
        r.lines.push_back(fmt::format(
            "skipped {} on a write conflict (being written now): the next pass retries them",
            p.skippedConflicts));
    if (p.skippedLockTimeouts > 0)
        r.lines.push_back(fmt::format(
            "skipped {} collection{} whose lock was held too long (see `locks`): the next pass "
            "retries",
            p.skippedLockTimeouts, p.skippedLockTimeouts == 1 ? "" : "s"));
    return r;
}

Reply ttl(Shell& sh, const Args& a) {
    if (a.size() == 1 && !a[0].quoted && lowerCase(a[0].text) == "run")
        return ttlRun(sh);
    if (!a.empty())
        return Reply::error(Status::InvalidArgument(
            fmt::format("unexpected {}; usage: ttl [run]", displayBytes(a[0].text, 40))));
    const TtlStatus st = sh.engine().ttlStatus();
    const int64_t sleepMs = st.sleepMs;
    Reply r;
    r.fields["passes"] = st.passes;
    r.fields["deletedDocuments"] = st.deletedDocuments;
    r.fields["skippedConflicts"] = st.skippedConflicts;
    r.fields["skippedLockTimeouts"] = st.skippedLockTimeouts;
    r.fields["failedPasses"] = st.failedPasses;
    r.fields["sleepMs"] = sleepMs;
    r.fields["secondary"] = st.secondary;
    nlohmann::ordered_json colls = nlohmann::ordered_json::array();
    std::vector<std::string> names;
    for (const TtlStatus::Collection& c : st.collections) {
        colls.push_back({{"ns", c.ns}, {"expireAfterSeconds", c.expireAfterSeconds}});
        names.push_back(fmt::format("{} ({} s)", c.ns, c.expireAfterSeconds));
    }
    r.fields["collections"] = std::move(colls);
    r.lines.push_back(st.secondary ? std::string("TTL monitor: off (a replica's secondary)")
                      : sleepMs > 0
                          ? fmt::format("TTL monitor: a pass every {} ms", sleepMs)
                          : std::string("TTL monitor: no background thread (ttl run runs a pass)"));
    r.lines.push_back(fmt::format(
        "{} passes, {} entries deleted, {} skipped on write conflicts, {} passes failed", st.passes,
        st.deletedDocuments, st.skippedConflicts, st.failedPasses));
    r.lines.push_back(names.empty() ? std::string("no TTL collection")
                                    : fmt::format("TTL collections: {}", fmt::join(names, ", ")));
    return r;
}

}  // namespace

void addTtlCommands(CommandTable& t) {
    t.add({"collmod", std::string(kCollModUsage),
           "change TTL collection COLL's expire_after (existing entries too, but for those with "
           "an explicit expiry)",
           2, 2, collmod});
    CommandSpec& spec = t.add({"ttl", "ttl [run]",
                               "the TTL monitor's figures; `ttl run`: one pass now (deletes "
                               "expired entries)",
                               0, 1, ttl});
    spec.usesSession = false;  // the monitor's pass runs on the engine's own session
}

}  // namespace mvkv::tools
