// Namespace: a validated "db.collection" name.
//
// Rules (MongoDB's, simplified): the database name is 1..64 bytes with none
// of  / \ . space " $ * < > : | ?  and no NUL; the collection name is 1..200
// bytes with no '$' and no NUL and may contain dots; a name beginning with
// "system." is reserved, except "system.profile" (the profiler's collection,
// engine/profiler.h). The database `local` is reserved for the engine (the
// oplog) and refused for user collections.
//
// Thread safety: a plain value.
#pragma once

#include <string>
#include <string_view>

#include "util/status.h"

namespace mvkv::engine {

class Namespace {
  public:
    /// Parses and validates "db.coll"; InvalidArgument naming the rule broken.
    static StatusWith<Namespace> parse(std::string_view ns);
    /// Validates a database name alone.
    static Status checkDbName(std::string_view db);

    Namespace() = default;
    const std::string& ns() const { return ns_; }
    std::string_view db() const { return std::string_view(ns_).substr(0, dot_); }
    std::string_view coll() const { return std::string_view(ns_).substr(dot_ + 1); }

    static constexpr std::string_view kLocalDb = "local";
    /// The profiler's collection in each database (<db>.system.profile).
    static constexpr std::string_view kProfileColl = "system.profile";

  private:
    std::string ns_;
    size_t dot_ = 0;
};

}  // namespace mvkv::engine
