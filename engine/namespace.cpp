#include "engine/namespace.h"

#include <fmt/format.h>

#include "util/printable.h"

namespace mvkv::engine {

namespace {

constexpr size_t kMaxDbBytes = 64;
constexpr size_t kMaxCollBytes = 200;
constexpr std::string_view kIllegalDbChars = "/\\. \"$*<>:|?";

}  // namespace

Status Namespace::checkDbName(std::string_view db) {
    if (db.empty())
        return Status::InvalidArgument("database name is empty");
    if (db.size() > kMaxDbBytes)
        return Status::InvalidArgument(
            fmt::format("database name is {} bytes; the limit is {}", db.size(), kMaxDbBytes));
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
    if (coll.starts_with("system."))
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
