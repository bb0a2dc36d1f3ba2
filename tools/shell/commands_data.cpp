// put, insert, update, del, get, scan, count, delrange.
#include <fmt/format.h>

#include <algorithm>

#include "bytes.h"
#include "command_table.h"
#include "shell.h"
#include "time_text.h"

namespace mvkv::tools {

namespace {

Reply written(Shell& sh, const Args& a, Status s, const WriteOptions& options = {}) {
    if (!s.ok())
        return Reply::error(std::move(s));
    Reply r;
    r.fields["ns"] = sh.ns(a[0]);
    r.fields["key"] = bytesToJson(a[1].text);
    if (!sh.session().inTransaction())
        r.fields["commitTs"] = sh.session().lastCommitTimestamp();
    if (options.expireAtMs) {
        r.fields["expiresAt"] = *options.expireAtMs;
        r.lines.push_back("ok, expires at " + formatUtcTime(*options.expireAtMs));
        return r;
    }
    r.lines.push_back("ok");
    return r;
}

/// The options after VALUE (after KEY for del): ttl=DURATION or
/// expire_at=TIME, an explicit expiry in a TTL collection (docs/ttl.md), and
/// lock=OWNER:TOKEN, a fenced write (docs/document-locks.md). VALUE is always
/// the third argument, whatever it looks like: only the unquoted words after
/// it are options. The fence's owner points into *owner.
Status writeOptions(Shell& sh, const Args& a, size_t from, std::string_view usage,
                    WriteOptions* o, std::string* owner) {
    const bool remove = from == 2;
    for (size_t i = from; i < a.size(); ++i) {
        std::string name, value;
        if (a[i].quoted || !splitOption(a[i].text, &name, &value))
            return Status::InvalidArgument(fmt::format(
                "unexpected {} after the {}; usage: {} (the value is the third argument; quote "
                "one that has blanks)",
                displayBytes(a[i].text, 40), remove ? "key" : "value", usage));
        if (name == "lock") {
            if (Status s = parseFenceOption(value, o, owner); !s.ok())
                return s;
            continue;
        }
        if (remove || (name != "ttl" && name != "expire_at"))
            return Status::InvalidArgument(fmt::format("unknown option {}= after the {}; usage: {}",
                                                       displayBytes(name, 40),
                                                       remove ? "key" : "value", usage));
        if (o->expireAtMs)
            return Status::InvalidArgument("give one expiry: ttl=DURATION or expire_at=TIME");
        if (name == "expire_at") {
            auto at = parseTimeMs(value, "expire_at");
            if (!at.ok())
                return at.status();
            o->expireAtMs = at.value();  // 0 is refused by the engine, with the reason
            continue;
        }
        auto ms = parseDurationMs(value, "ttl", kMaxExpireAfterSeconds * 1000);
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

enum class Write { kPut, kInsert, kUpdate, kDelete };

Reply write(Shell& sh, const Args& a, Write op, std::string_view usage) {
    const size_t positional = op == Write::kDelete ? 2 : 3;
    WriteOptions options;
    std::string owner;
    if (Status s = writeOptions(sh, a, positional, usage, &options, &owner); !s.ok())
        return Reply::error(s);
    Session& session = sh.session();
    const std::string ns = sh.ns(a[0]);
    const std::string_view key = a[1].text;
    const std::string_view value = op == Write::kDelete ? std::string_view() : a[2].text;
    // Without options, the plain overloads (the common path).
    const bool plain = !options.fence && !options.expireAtMs;
    Status s;
    switch (op) {
        case Write::kPut:
            s = plain ? session.put(ns, key, value) : session.put(ns, key, value, options);
            break;
        case Write::kInsert:
            s = plain ? session.insert(ns, key, value) : session.insert(ns, key, value, options);
            break;
        case Write::kUpdate:
            s = plain ? session.update(ns, key, value) : session.update(ns, key, value, options);
            break;
        case Write::kDelete:
            s = plain ? session.remove(ns, key) : session.remove(ns, key, options);
            break;
    }
    return written(sh, a, std::move(s), options);
}

constexpr std::string_view kPutUsage =
    "put COLL KEY VALUE [ttl=DURATION | expire_at=TIME] [lock=OWNER:TOKEN]";
constexpr std::string_view kInsertUsage =
    "insert COLL KEY VALUE [ttl=DURATION | expire_at=TIME] [lock=OWNER:TOKEN]";
constexpr std::string_view kUpdateUsage =
    "update COLL KEY VALUE [ttl=DURATION | expire_at=TIME] [lock=OWNER:TOKEN]";
constexpr std::string_view kDelUsage = "del COLL KEY [lock=OWNER:TOKEN]";

Reply put(Shell& sh, const Args& a) {
    return write(sh, a, Write::kPut, kPutUsage);
}
Reply insert(Shell& sh, const Args& a) {
    return write(sh, a, Write::kInsert, kInsertUsage);
}
Reply update(Shell& sh, const Args& a) {
    return write(sh, a, Write::kUpdate, kUpdateUsage);
}
Reply del(Shell& sh, const Args& a) {
    return write(sh, a, Write::kDelete, kDelUsage);
}

Reply get(Shell& sh, const Args& a) {
    std::string value;
    std::optional<int64_t> expiresAt;
    Status s = sh.session().get(sh.ns(a[0]), a[1].text, &value, &expiresAt);
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
    ScanOptions o;
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
    auto n = sh.session().removeRange(ns, KeyRange{a[1].text, a[2].text});
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
    // ttl=/expire_at=: an explicit expiry in a TTL collection; lock=: a fenced write.
    t.add({std::string("put"), std::string(kPutUsage),
           "insert or overwrite KEY (upsert); lock= only while that document lock holds", 3, 5,
           put});
    t.add({std::string("insert"), std::string(kInsertUsage),
           "insert KEY; DuplicateKey if it exists", 3, 5, insert});
    t.add({std::string("update"), std::string(kUpdateUsage),
           "overwrite KEY; NotFound if it does not exist", 3, 5, update});
    t.add({std::string("del"), std::string(kDelUsage), "delete KEY; NotFound if it does not exist",
           2, 3, del});
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
