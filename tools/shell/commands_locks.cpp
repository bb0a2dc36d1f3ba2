// Document locks (issue 17, docs/document-locks.md): lock, unlock, refresh,
// doclocks, and the `lock=OWNER:TOKEN` option of fenced writes.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>

#include "bytes.h"
#include "command_table.h"
#include "time_text.h"
#include "shell.h"
#include "mvkv/document_locks.h"

namespace mvkv::tools {

namespace {

using Json = nlohmann::ordered_json;

/// The options after the positional words: name=value, each name at most
/// once and one of `names`.
Status lockOptions(const Args& a, size_t from, std::initializer_list<std::string_view> names,
                   std::string_view usage, std::map<std::string, std::string>* out) {
    for (size_t i = from; i < a.size(); ++i) {
        std::string name, value;
        if (a[i].quoted || !splitOption(a[i].text, &name, &value) ||
            std::find(names.begin(), names.end(), name) == names.end())
            return Status::InvalidArgument(
                fmt::format("unexpected {}; usage: {}", displayBytes(a[i].text, 40), usage));
        if (!out->emplace(name, value).second)
            return Status::InvalidArgument(
                fmt::format("{}= is given twice; usage: {}", name, usage));
    }
    return Status::OK();
}

/// `name`=DURATION of `opts` into *out (unchanged when absent).
Status durationOption(const std::map<std::string, std::string>& opts, const std::string& name,
                      std::chrono::milliseconds* out) {
    auto it = opts.find(name);
    if (it == opts.end())
        return Status::OK();
    // The engine says what range a lock's ttl and wait take.
    auto ms = parseDurationMs(it->second, name, std::numeric_limits<int64_t>::max());
    if (!ms.ok())
        return ms.status();
    *out = std::chrono::milliseconds(ms.value());
    return Status::OK();
}

void addLockFields(Json& j, const DocumentLock& l) {
    j["owner"] = l.owner;
    j["token"] = l.token;
    j["acquiredAt"] = formatIsoDate(l.acquiredAtMs);
    j["expiresAt"] = formatIsoDate(l.expiresAtMs);
    j["expiresAtMs"] = l.expiresAtMs;
    j["remainingMs"] = l.remainingMs;
}

Reply lock(Shell& sh, const Args& a) {
    constexpr std::string_view kUsage = "lock COLL KEY [ttl=30s] [owner=ID] [wait=5s]";
    std::map<std::string, std::string> opts;
    if (Status s = lockOptions(a, 2, {"ttl", "owner", "wait"}, kUsage, &opts); !s.ok())
        return Reply::error(s);
    AcquireOptions o;
    if (Status s = durationOption(opts, "ttl", &o.ttl); !s.ok())
        return Reply::error(s);
    if (Status s = durationOption(opts, "wait", &o.wait); !s.ok())
        return Reply::error(s);
    if (auto it = opts.find("owner"); it != opts.end())
        o.owner = it->second;
    const std::string ns = sh.ns(a[0]);
    auto l = DocumentLocks(sh.session()).acquire(ns, a[1].text, o);
    if (!l.ok())
        return Reply::error(l.status(),
                            l.status().code() == StatusCode::kDocumentLocked
                                ? "wait for it with wait=DURATION (bg lock ... to keep the shell)"
                                : "");
    Reply r;
    r.fields["ns"] = ns;
    r.fields["key"] = bytesToJson(a[1].text);
    addLockFields(r.fields, l.value());
    r.fields["tookOver"] = l.value().tookOver;
    r.lines.push_back(
        fmt::format("locked {} {}: owner {} token {}, expires {} (in {} ms){}", ns,
                    displayBytes(a[1].text, 60), l.value().owner, l.value().token,
                    formatIsoDate(l.value().expiresAtMs), l.value().remainingMs,
                    l.value().tookOver ? " (took over an expired lock)" : ""));
    return r;
}

Reply unlock(Shell& sh, const Args& a) {
    constexpr std::string_view kUsage = "unlock COLL KEY owner=ID | unlock owner=ID";
    std::map<std::string, std::string> opts;
    const bool byOwner = !a[0].quoted && lowerCase(a[0].text.substr(0, 6)) == "owner=";
    const size_t positional = byOwner ? 0 : 2;
    if (a.size() < positional)
        return Reply::error(Status::InvalidArgument(fmt::format("usage: {}", kUsage)));
    if (Status s = lockOptions(a, positional, {"owner"}, kUsage, &opts); !s.ok())
        return Reply::error(s);
    auto owner = opts.find("owner");
    if (owner == opts.end())
        return Reply::error(Status::InvalidArgument(fmt::format(
            "unlock needs owner=ID (only the holder releases a lock); usage: {}", kUsage)));
    DocumentLocks locks(sh.session());
    Reply r;
    if (byOwner) {
        auto n = locks.releaseAll(owner->second);
        if (!n.ok())
            return Reply::error(n.status());
        r.fields["owner"] = owner->second;
        r.fields["released"] = n.value();
        r.lines.push_back(fmt::format("released {} lock{} of owner {}", n.value(),
                                      n.value() == 1 ? "" : "s", owner->second));
        return r;
    }
    const std::string ns = sh.ns(a[0]);
    if (Status s = locks.release(ns, a[1].text, owner->second); !s.ok())
        return Reply::error(s);
    r.fields["ns"] = ns;
    r.fields["key"] = bytesToJson(a[1].text);
    r.fields["released"] = 1;
    r.lines.push_back(fmt::format("released {} {}", ns, displayBytes(a[1].text, 60)));
    return r;
}

Reply refresh(Shell& sh, const Args& a) {
    constexpr std::string_view kUsage = "refresh COLL KEY owner=ID [ttl=30s]";
    std::map<std::string, std::string> opts;
    if (Status s = lockOptions(a, 2, {"owner", "ttl"}, kUsage, &opts); !s.ok())
        return Reply::error(s);
    auto owner = opts.find("owner");
    if (owner == opts.end())
        return Reply::error(Status::InvalidArgument(fmt::format(
            "refresh needs owner=ID (only the holder refreshes a lock); usage: {}", kUsage)));
    std::chrono::milliseconds ttl{30000};
    if (Status s = durationOption(opts, "ttl", &ttl); !s.ok())
        return Reply::error(s);
    const std::string ns = sh.ns(a[0]);
    auto l = DocumentLocks(sh.session()).refresh(ns, a[1].text, owner->second, ttl);
    if (!l.ok())
        return Reply::error(l.status());
    Reply r;
    r.fields["ns"] = ns;
    r.fields["key"] = bytesToJson(a[1].text);
    addLockFields(r.fields, l.value());
    r.lines.push_back(fmt::format("refreshed {} {}: token {}, expires {} (in {} ms)", ns,
                                  displayBytes(a[1].text, 60), l.value().token,
                                  formatIsoDate(l.value().expiresAtMs),
                                  l.value().remainingMs));
    return r;
}

Reply doclocks(Shell& sh, const Args& a) {
    const std::string ns = sh.ns(a[0]);
    auto all = DocumentLocks(sh.session()).list(ns);
    if (!all.ok())
        return Reply::error(all.status());
    Reply r;
    r.fields["ns"] = ns;
    Json items = Json::array();
    r.lines.push_back(fmt::format("{:<20} {:<34} {:>8}  {:<29} {}", "key", "owner", "token",
                                  "expiresAt", "remaining"));
    for (const DocumentLock& l : all.value()) {
        Json item;
        item["key"] = bytesToJson(l.key);
        addLockFields(item, l);
        item["expired"] = l.expired;
        items.push_back(std::move(item));
        r.lines.push_back(
            fmt::format("{:<20} {:<34} {:>8}  {:<29} {}", displayBytes(l.key, 20), l.owner,
                        l.token, formatIsoDate(l.expiresAtMs),
                        l.expired ? std::string("expired") : fmt::format("{} ms", l.remainingMs)));
    }
    r.lines.push_back(
        fmt::format("({} lock{})", all.value().size(), all.value().size() == 1 ? "" : "s"));
    r.fields["locks"] = std::move(items);
    return r;
}

}  // namespace

Status parseFenceOption(std::string_view value, WriteOptions* options, std::string* owner) {
    const size_t colon = value.rfind(':');
    if (colon == std::string_view::npos)
        return Status::InvalidArgument(
            fmt::format("lock={} is not OWNER:TOKEN; give the owner and token that `lock` returned",
                        displayBytes(value, 60)));
    auto token = parseNumber(value.substr(colon + 1), "the fencing token of lock=OWNER:TOKEN");
    if (!token.ok())
        return token.status();
    owner->assign(value.substr(0, colon));
    options->fence = WriteFence{*owner, token.value()};
    return Status::OK();
}

void addLockCommands(CommandTable& t) {
    t.add({"lock", "lock COLL KEY [ttl=30s] [owner=ID] [wait=5s]",
           "lock document KEY (in COLL.lock); prints the owner, fencing token and expiry; wait= "
           "blocks until it is free (bg lock ... to keep the shell; killop stops it)",
           2, 5, lock});
    t.add({"unlock", "unlock COLL KEY owner=ID | unlock owner=ID",
           "release one lock of owner ID, or every lock it holds (released: N)", 1, 3, unlock});
    t.add({"refresh", "refresh COLL KEY owner=ID [ttl=30s]",
           "extend owner ID's lock to now + ttl, keeping its token", 3, 4, refresh});
    t.add({"doclocks", "doclocks COLL", "the document locks of COLL with their remaining time", 1,
           1, doclocks});
}

}  // namespace mvkv::tools
