// put, insert, update, del, get, scan, count, delrange.
#include <fmt/format.h>

#include <algorithm>

#include "engine/session.h"
#include "tools/shell/bytes.h"
#include "tools/shell/command_table.h"
#include "tools/shell/shell.h"

namespace mvkv::tools {

namespace {

using engine::Session;

Reply written(Shell& sh, const Args& a, Status s) {
    if (!s.ok())
        return Reply::error(std::move(s));
    Reply r;
    r.fields["ns"] = sh.ns(a[0]);
    r.fields["key"] = bytesToJson(a[1].text);
    if (!sh.session().inTransaction())
        r.fields["commitTs"] = sh.session().lastCommitTs();
    r.lines.push_back("ok");
    return r;
}

Reply put(Shell& sh, const Args& a) {
    return written(sh, a, sh.session().put(sh.ns(a[0]), a[1].text, a[2].text));
}
Reply insert(Shell& sh, const Args& a) {
    return written(sh, a, sh.session().insert(sh.ns(a[0]), a[1].text, a[2].text));
}
Reply update(Shell& sh, const Args& a) {
    return written(sh, a, sh.session().update(sh.ns(a[0]), a[1].text, a[2].text));
}
Reply del(Shell& sh, const Args& a) {
    return written(sh, a, sh.session().remove(sh.ns(a[0]), a[1].text));
}

Reply get(Shell& sh, const Args& a) {
    std::string value;
    Status s = sh.session().get(sh.ns(a[0]), a[1].text, &value);
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
    t.add({"put", "put COLL KEY VALUE", "insert or overwrite KEY (upsert)", 3, 3, put});
    t.add(
        {"insert", "insert COLL KEY VALUE", "insert KEY; DuplicateKey if it exists", 3, 3, insert});
    t.add({"update", "update COLL KEY VALUE", "overwrite KEY; NotFound if it does not exist", 3, 3,
           update});
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
