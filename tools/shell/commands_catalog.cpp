// use, show dbs / show collections, create, drop, dropdb.
#include <fmt/format.h>

#include "engine/namespace.h"
#include "tools/shell/bytes.h"
#include "tools/shell/command_table.h"
#include "tools/shell/shell.h"

namespace mvkv::tools {

namespace {

Reply use(Shell& sh, const Args& a) {
    if (Status s = engine::Namespace::checkDbName(a[0].text); !s.ok())
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

Reply create(Shell& sh, const Args& a) {
    std::string ns = sh.ns(a[0]);
    if (Status s = sh.session().createCollection(ns); !s.ok())
        return Reply::error(s);
    Reply r;
    r.fields["ns"] = ns;
    r.lines.push_back("created " + displayBytes(ns));
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
    t.add(
        {"create", "create COLL", "create collection COLL in the current database", 1, 1, create});
    t.add({"drop", "drop COLL", "drop collection COLL (takes X on it: waits for sessions using it)",
           1, 1, drop});
    t.add({"dropdb", "dropdb DB", "drop database DB and all its collections", 1, 1, dropdb});
}

}  // namespace mvkv::tools
