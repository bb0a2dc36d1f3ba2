// put, insert, update, del, get, scan, count.
#include <fmt/format.h>

#include <algorithm>

#include "engine/cursor.h"
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
    std::string from = bounds.size() > 0 ? bounds[0]->text : "";
    std::optional<std::string> to;
    if (bounds.size() > 1)
        to = bounds[1]->text;
    auto opened = sh.session().openCursor(sh.ns(a[0]));
    if (!opened.ok())
        return Reply::error(opened.status());
    engine::Cursor& c = *opened.value();
    Status s = reverse ? (to ? c.seekForPrev(*to) : c.last()) : c.seek(from);
    Reply r;
    nlohmann::ordered_json items = nlohmann::ordered_json::array();
    std::vector<std::pair<std::string, std::string>> rows;
    uint64_t n = 0;
    while (s.ok() && c.valid() && n < limit) {
        if (sh.interrupted())
            return Reply::error(Status::Interrupted("scan interrupted"));
        if (!reverse && to && c.key() > std::string_view(*to))
            break;
        if (reverse && c.key() < std::string_view(from))
            break;
        items.push_back({{"key", bytesToJson(c.key())}, {"value", bytesToJson(c.value())}});
        rows.emplace_back(displayBytes(c.key(), 60), displayBytes(c.value(), 200));
        ++n;
        s = reverse ? c.prev() : c.next();
    }
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
    auto opened = sh.session().openCursor(sh.ns(a[0]));
    if (!opened.ok())
        return Reply::error(opened.status());
    engine::Cursor& c = *opened.value();
    uint64_t n = 0;
    Status s = c.first();
    while (s.ok() && c.valid()) {
        if (sh.interrupted())
            return Reply::error(Status::Interrupted("count interrupted"));
        ++n;
        s = c.next();
    }
    if (!s.ok())
        return Reply::error(s);
    Reply r;
    r.fields["count"] = n;
    r.lines.push_back(std::to_string(n));
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
}

}  // namespace mvkv::tools
