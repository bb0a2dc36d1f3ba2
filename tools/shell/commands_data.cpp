// put, insert, update, del, get, scan, count, delrange.
#include <fmt/format.h>

#include <algorithm>

#include "engine/session.h"
#include "tools/shell/bytes.h"
#include "tools/shell/command_table.h"
#include "tools/shell/shell.h"
#include "tools/shell/time_text.h"

namespace mvkv::tools {

namespace {

using engine::Session;

Reply written(Shell& sh, const Args& a, Status s, const engine::WriteOptions& options = {}) {
    if (!s.ok())
        return Reply::error(std::move(s));
    Reply r;
    r.fields["ns"] = sh.ns(a[0]);
    r.fields["key"] = bytesToJson(a[1].text);
    if (!sh.session().inTransaction())
        r.fields["commitTs"] = sh.session().lastCommitTs();
    if (options.expireAtMs) {
        r.fields["expiresAt"] = *options.expireAtMs;
        r.lines.push_back("ok, expires at " + formatUtcTime(*options.expireAtMs));
        return r;
    }
    r.lines.push_back("ok");
    return r;
}

// The options after VALUE (put, insert, update): ttl=DURATION or
// expire_at=TIME, an explicit expiry in a TTL collection (docs/ttl.md).
// VALUE is always the third argument, whatever it looks like: only the
// unquoted words after it are options.
Status writeOptions(Shell& sh, const Args& a, engine::WriteOptions* o) {
    for (size_t i = 3; i < a.size(); ++i) {
        std::string name, value;
        if (a[i].quoted || !splitOption(a[i].text, &name, &value) ||
            (name != "ttl" && name != "expire_at"))
            return Status::InvalidArgument(fmt::format(
                "unexpected {} after the value: the options are ttl=DURATION or expire_at=TIME "
                "(the value is the third argument; quote one that has blanks)",
                displayBytes(a[i].text, 40)));
        if (o->expireAtMs)
            return Status::InvalidArgument("give one expiry: ttl=DURATION or expire_at=TIME");
        if (name == "expire_at") {
            auto at = parseTimeMs(value, "expire_at");
            if (!at.ok())
                return at.status();
            o->expireAtMs = at.value();  // 0 is refused by the engine, with the reason
            continue;
        }
        auto ms = parseDurationMs(value, "ttl", engine::kMaxExpireAfterSeconds * 1000);
        if (!ms.ok())
            return ms.status();
        if (ms.value() == 0)
            return Status::InvalidArgument(
                "ttl must be above 0: an entry that expires at once is deleted by the next TTL "
                "pass (use del to delete it now)");
        o->expireAtMs = sh.engine().wallClockMs() + ms.value();
    }
    return Status::OK();
}

using WriteFn = Status (Session::*)(std::string_view, std::string_view, std::string_view,
                                    const engine::WriteOptions&);

Reply writeWith(Shell& sh, const Args& a, WriteFn fn) {
    engine::WriteOptions o;
    if (Status s = writeOptions(sh, a, &o); !s.ok())
        return Reply::error(s);
    return written(sh, a, (sh.session().*fn)(sh.ns(a[0]), a[1].text, a[2].text, o), o);
}

Reply put(Shell& sh, const Args& a) {
    return writeWith(sh, a, &Session::put);
}
Reply insert(Shell& sh, const Args& a) {
    return writeWith(sh, a, &Session::insert);
}
Reply update(Shell& sh, const Args& a) {
    return writeWith(sh, a, &Session::update);
}
Reply del(Shell& sh, const Args& a) {
    return written(sh, a, sh.session().remove(sh.ns(a[0]), a[1].text));
}

Reply get(Shell& sh, const Args& a) {
    std::string value;
    std::optional<int64_t> expiresAt;
    Status s = sh.session().getWithExpiry(sh.ns(a[0]), a[1].text, &value, &expiresAt);
    Reply r;
    if (s.code() == StatusCode::kNotFound) {
        r.fields["found"] = false;
        r.lines.push_back("(not found)");
        return r;
    }
    if (!s.ok())
        return Reply::error(s);
    r.fields["found"] = true;
    r.fields["value"] = bytesToJson(value);
    r.lines.push_back(displayBytes(value));
    if (expiresAt) {
        // An expired entry stays readable until a TTL pass deletes it.
        r.fields["expiresAt"] = *expiresAt;
        const int64_t left = *expiresAt - sh.engine().wallClockMs();
        r.lines.push_back(
            left > 0 ? fmt::format("(expires at {}, in {} ms)", formatUtcTime(*expiresAt), left)
                     : fmt::format("(expired at {}, {} ms ago; the next TTL pass "
                                   "deletes it)",
                                   formatUtcTime(*expiresAt), -left));
    }
    return r;
}

Reply scan(Shell& sh, const Args& a) {
    // scan COLL [FROM [TO]] [limit N] [reverse]
    std::vector<const Token*> bounds;
    uint64_t limit = UINT64_MAX;
    bool reverse = false;
    for (size_t i = 1; i < a.size(); ++i) {
        const std::string w = a[i].quoted ? "" : lowerCase(a[i].text);
        if (w == "limit") {
            if (i + 1 == a.size())
                return Reply::error(Status::InvalidArgument(
                    "limit needs a number; usage: scan COLL [FROM [TO]] [limit N] [reverse]"));
            auto n = parseNumber(a[++i].text, "limit");
            if (!n.ok())
                return Reply::error(n.status());
            limit = n.value();
        } else if (w == "reverse") {
            reverse = true;
        } else if (bounds.size() < 2) {
            bounds.push_back(&a[i]);
        } else {
            return Reply::error(Status::InvalidArgument(
                fmt::format("unexpected '{}'; usage: scan COLL [FROM [TO]] [limit N] [reverse]",
                            displayBytes(a[i].text, 40))));
        }
    }
    // FROM and TO are inclusive; reverse walks from TO (or the end) down to FROM.
    // Session::scan yields, counts in currentop and stops at killop.
    engine::ScanOptions o;
    if (bounds.size() > 0)
        o.range.from = bounds[0]->text;
    if (bounds.size() > 1)
        o.range.to = bounds[1]->text;
    o.reverse = reverse;
    Reply r;
    nlohmann::ordered_json items = nlohmann::ordered_json::array();
    std::vector<std::pair<std::string, std::string>> rows;
    uint64_t n = 0;
    bool interrupted = false;
    Status s = sh.session().scan(sh.ns(a[0]), o, [&](std::string_view key, std::string_view value) {
        if (n >= limit)  // limit 0 still opens the collection (NamespaceNotFound)
            return false;
        if (sh.interrupted()) {  // a Ctrl-C that came before the scan began
            interrupted = true;
            return false;
        }
        items.push_back({{"key", bytesToJson(key)}, {"value", bytesToJson(value)}});
        rows.emplace_back(displayBytes(key, 60), displayBytes(value, 200));
        ++n;
        return n < limit;
    });
    if (s.ok() && interrupted)
        s = Status::Interrupted("scan interrupted");
    if (!s.ok())
        return Reply::error(s);
    r.fields["items"] = std::move(items);
    size_t width = 3;
    for (const auto& row : rows)
        width = std::max(width, row.first.size());
    r.lines.push_back(fmt::format("{:<{}}  {}", "key", width, "value"));
    r.lines.push_back(fmt::format("{:-<{}}  {:-<5}", "", width, ""));
    for (const auto& row : rows)
        r.lines.push_back(fmt::format("{:<{}}  {}", row.first, width, row.second));
    r.lines.push_back(fmt::format("({} item{})", n, n == 1 ? "" : "s"));
    return r;
}

Reply count(Shell& sh, const Args& a) {
    auto n = sh.session().count(sh.ns(a[0]));
    if (!n.ok())
        return Reply::error(n.status());
    Reply r;
    r.fields["count"] = n.value();
    r.lines.push_back(std::to_string(n.value()));
    return r;
}

Reply delrange(Shell& sh, const Args& a) {
    const std::string ns = sh.ns(a[0]);
    auto n = sh.session().removeRange(ns, engine::KeyRange{a[1].text, a[2].text});
    if (!n.ok())
        return Reply::error(n.status());
    Reply r;
    r.fields["ns"] = ns;
    r.fields["removed"] = n.value();
    r.lines.push_back(fmt::format("removed {} key{}", n.value(), n.value() == 1 ? "" : "s"));
    return r;
}

}  // namespace

void addDataCommands(CommandTable& t) {
    // [ttl=DURATION | expire_at=TIME]: an explicit expiry in a TTL collection.
    t.add({"put", "put COLL KEY VALUE [ttl=DURATION | expire_at=TIME]",
           "insert or overwrite KEY (upsert)", 3, 4, put});
    t.add({"insert", "insert COLL KEY VALUE [ttl=DURATION | expire_at=TIME]",
           "insert KEY; DuplicateKey if it exists", 3, 4, insert});
    t.add({"update", "update COLL KEY VALUE [ttl=DURATION | expire_at=TIME]",
           "overwrite KEY; NotFound if it does not exist", 3, 4, update});
    t.add({"del", "del COLL KEY", "delete KEY; NotFound if it does not exist", 2, 2, del});
    t.add({"get", "get COLL KEY", "the value of KEY in this session's snapshot", 2, 2, get});
    t.add({"scan", "scan COLL [FROM [TO]] [limit N] [reverse]",
           "keys from FROM to TO (inclusive) in order, as a table", 1, 6, scan});
    t.add({"count", "count COLL", "how many keys this session sees", 1, 1, count});
    t.add({"delrange", "delrange COLL FROM TO",
           "delete every key from FROM to TO (inclusive); outside a transaction each key is its "
           "own write (not atomic)",
           3, 3, delrange});
}

}  // namespace mvkv::tools
