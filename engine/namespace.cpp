#include "engine/namespace.h"

#include <fmt/format.h>

#include "util/printable.h"
#include "util/utf8.h"

namespace mvkv::engine {

namespace {

constexpr size_t kMaxDbBytes = 64;
constexpr size_t kMaxCollBytes = 200;
constexpr std::string_view kIllegalDbChars = "/\\. \"$*<>:|?";

// Names are text (they are shown, logged and put in JSON): valid UTF-8
// with no control characters, as MongoDB requires.
Status checkText(std::string_view name, std::string_view what) {
    bool control = false;
    for (char c : name)
        control = control || static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    if (control || !isValidUtf8(name))
        return Status::InvalidArgument(fmt::format(
            "{} '{}' is not valid UTF-8 text (it has control characters or invalid bytes)", what,
            printable(name)));
    return Status::OK();
}

}  // namespace

Status Namespace::checkDbName(std::string_view db) {
    if (db.empty())
        return Status::InvalidArgument("database name is empty");
    if (db.size() > kMaxDbBytes)
        return Status::InvalidArgument(
            fmt::format("database name is {} bytes; the limit is {}", db.size(), kMaxDbBytes));
    if (Status s = checkText(db, "database name"); !s.ok())
        return s;
    for (char c : db) {
        if (c == '\0' || kIllegalDbChars.find(c) != std::string_view::npos)
            return Status::InvalidArgument(fmt::format(
                "database name '{}' contains '{}'; database names may not contain any of "
                "/\\. \"$*<>:|? or NUL",
                printable(db), printable(std::string_view(&c, 1))));
    }
    return Status::OK();
}

StatusWith<Namespace> Namespace::parse(std::string_view ns) {
    size_t dot = ns.find('.');
    if (dot == std::string_view::npos)
        return Status::InvalidArgument(
            fmt::format("namespace '{}' has no dot; write it as db.collection", printable(ns)));
    std::string_view db = ns.substr(0, dot);
    std::string_view coll = ns.substr(dot + 1);
    if (Status s = checkDbName(db); !s.ok())
        return Status::InvalidArgument(
            fmt::format("namespace '{}': {}", printable(ns), s.message()));
    if (coll.empty())
        return Status::InvalidArgument(
            fmt::format("namespace '{}' has an empty collection name", printable(ns)));
    if (coll.size() > kMaxCollBytes)
        return Status::InvalidArgument(fmt::format("collection name is {} bytes; the limit is {}",
                                                   coll.size(), kMaxCollBytes));
    if (coll.find('$') != std::string_view::npos || coll.find('\0') != std::string_view::npos)
        return Status::InvalidArgument(fmt::format(
            "collection name '{}' contains '$' or NUL, which are not allowed", printable(coll)));
    if (Status s = checkText(coll, "collection name"); !s.ok())
        return s;
    // The profiler's collection is the one system name in use: the engine
    // creates it, every reader may read it (MongoDB's db.system.profile).
    if (coll.starts_with("system.") && coll != kProfileColl)
        return Status::InvalidArgument(fmt::format(
            "collection name '{}' is reserved: names beginning with 'system.' belong to the "
            "engine",
            printable(coll)));
    Namespace out;
    out.ns_ = std::string(ns);
    out.dot_ = dot;
    return out;
}

}  // namespace mvkv::engine
