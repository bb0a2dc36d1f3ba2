// use, show dbs / show collections, create (ordinary, capped, TTL), drop, dropdb.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "bytes.h"
#include "command_table.h"
#include "shell.h"
#include "time_text.h"

namespace mvkv::tools {

namespace {

Reply use(Shell& sh, const Args& a) {
    if (Status s = checkDatabaseName(a[0].text); !s.ok())
        return Reply::error(s);
    sh.setDb(a[0].text);
    Reply r;
    r.fields["db"] = a[0].text;
    r.lines.push_back("switched to db " + displayBytes(a[0].text));
    return r;
}

Reply show(Shell& sh, const Args& a) {
    const std::string what = lowerCase(a[0].text);
    const Args options(a.begin() + 1, a.end());
    if (what == "profile")
        return showProfile(sh, options);
    if (what == "log")
        return showLog(sh, options);
    if (a.size() > 1)
        return Reply::error(Status::InvalidArgument(fmt::format(
            "show {} takes no option, not {}", what, displayBytes(a[1].text, 40))));
    Reply r;
    if (what == "dbs" || what == "databases") {
        auto dbs = sh.engine().listDatabases();
        r.fields["dbs"] = dbs;
        for (const auto& d : dbs)
            r.lines.push_back(fmt::format("{:<24} {} collection{}", d,
                                          sh.engine().listCollections(d).size(),
                                          sh.engine().listCollections(d).size() == 1 ? "" : "s"));
        return r;
    }
    if (what == "collections" || what == "tables") {
        auto colls = sh.engine().listCollections(sh.db());
        r.fields["db"] = sh.db();
        r.fields["collections"] = colls;
        for (const auto& c : colls)
            r.lines.push_back(c);
        return r;
    }
    return Reply::error(Status::InvalidArgument(fmt::format(
        "show what? {}; usage: show dbs | collections | profile [limit=N] | log [limit=N]",
        displayBytes(a[0].text, 40))));
}

constexpr std::string_view kCreateUsage =
    "create COLL [capped size=BYTES [max=N]] [expire_after=DURATION]";

// The options after COLL: "capped size=BYTES [max=N]" and/or
// "expire_after=DURATION" (the engine refuses both together, as MongoDB).
Status createOptions(const Args& a, CollectionOptions* o) {
    bool sawSize = false;
    for (size_t i = 1; i < a.size(); ++i) {
        if (i == 1 && !a[i].quoted && lowerCase(a[i].text) == "capped") {
            o->capped = true;
            continue;
        }
        std::string name, value;
        const bool known =
            splitOption(a[i].text, &name, &value) &&
            (name == "expire_after" || (o->capped && (name == "size" || name == "max")));
        if (!known)
            return Status::InvalidArgument(fmt::format(
                "unexpected {}; usage: {}", displayBytes(a[i].text, 40), kCreateUsage));
        if (name == "expire_after") {
            auto ms = parseDurationMs(value, "expire_after", kMaxExpireAfterSeconds * 1000);
            if (!ms.ok())
                return ms.status();
            if (ms.value() % 1000 != 0)
                return Status::InvalidArgument(fmt::format(
                    "expire_after {} is not whole seconds: a TTL collection counts in seconds "
                    "(MongoDB's expireAfterSeconds)",
                    displayBytes(value, 40)));
            o->expireAfterSeconds = ms.value() / 1000;
            continue;
        }
        auto n = parseNumber(value, name);
        if (!n.ok())
            return n.status();
        // Past int64 is out of range for the engine too, which says so.
        const auto v = static_cast<int64_t>(std::min<uint64_t>(n.value(), INT64_MAX));
        (name == "size" ? o->cappedSizeBytes : o->cappedMaxDocs) = v;
        sawSize = sawSize || name == "size";
    }
    if (o->capped && !sawSize)
        return Status::InvalidArgument(
            fmt::format("a capped collection needs size=BYTES; usage: {}", kCreateUsage));
    return Status::OK();
}

Reply create(Shell& sh, const Args& a) {
    std::string ns = sh.ns(a[0]);
    CollectionOptions o;
    if (Status s = createOptions(a, &o); !s.ok())
        return Reply::error(s);
    if (Status s = sh.session().createCollection(ns, o); !s.ok())
        return Reply::error(s);
    Reply r;
    r.fields["ns"] = ns;
    if (o.expireAfterSeconds) {
        r.fields["expireAfterSeconds"] = *o.expireAfterSeconds;
        r.lines.push_back(fmt::format(
            "created TTL collection {}: entries expire {} s after their write (or at the expiry "
            "given with it)",
            displayBytes(ns), *o.expireAfterSeconds));
        return r;
    }
    if (!o.capped) {
        r.lines.push_back("created " + displayBytes(ns));
        return r;
    }
    r.fields["capped"] = true;
    r.fields["size"] = o.cappedSizeBytes;
    r.fields["max"] = o.cappedMaxDocs;
    r.lines.push_back(fmt::format("created {} capped at {} bytes{}", displayBytes(ns),
                                  o.cappedSizeBytes,
                                  o.cappedMaxDocs ? fmt::format(" and {} entries", o.cappedMaxDocs)
                                                  : std::string()));
    return r;
}

Reply drop(Shell& sh, const Args& a) {
    std::string ns = sh.ns(a[0]);
    if (Status s = sh.session().dropCollection(ns); !s.ok())
        return Reply::error(s);
    Reply r;
    r.fields["ns"] = ns;
    r.lines.push_back("dropped " + displayBytes(ns));
    return r;
}

Reply dropdb(Shell& sh, const Args& a) {
    if (Status s = sh.session().dropDatabase(a[0].text); !s.ok())
        return Reply::error(s);
    Reply r;
    r.fields["db"] = a[0].text;
    r.lines.push_back("dropped database " + displayBytes(a[0].text));
    return r;
}

}  // namespace

void addCatalogCommands(CommandTable& t) {
    CommandSpec& u = t.add({"use", "use DB",
                            "switch the current database (created with its first collection)", 1,
                            1, use});
    u.usesSession = false;
    u.background = false;
    t.add({"show", "show dbs | collections | profile [limit=N] | log [limit=N]",
           "list databases or collections; the profiler's newest entries; the slow-op log", 1, 2,
           show})
        .usesSession = false;  // `show profile` checks for itself
    t.add({"create", std::string(kCreateUsage),
           "create collection COLL in the current database; capped: oldest entries go once "
           "key+value bytes pass size (or entries pass max); expire_after: a TTL collection",
           1, 5, create});
    t.add({"drop", "drop COLL", "drop collection COLL (takes X on it: waits for sessions using it)",
           1, 1, drop});
    t.add({"dropdb", "dropdb DB", "drop database DB and all its collections", 1, 1, dropdb});
}

}  // namespace mvkv::tools
