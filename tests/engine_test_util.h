// Helpers shared by the engine test suites.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "engine/cursor.h"
#include "engine/engine.h"
#include "engine/session.h"
#include "tests/status_check.h"

namespace mvkv::engine::testing {

using ::mvkv::testing::mustOk;

/// A durable engine on `path` committing with `mode`, with no background
/// history sweep or checkpoints (tests run them on demand).
inline EngineOptions onDisk(const std::string& path, oplog::SyncMode mode) {
    EngineOptions o;
    o.path = path;
    o.syncMode = mode;
    o.historySweepInterval = std::chrono::milliseconds(0);
    o.checkpointInterval = std::chrono::milliseconds(0);
    return o;
}

inline std::unique_ptr<Engine> openEngine(EngineOptions options = {}) {
    auto e = Engine::open(std::move(options));
    REQUIRE_MESSAGE(e.ok(), e.status().toString());
    return std::move(e).value();
}

/// The value of `key`, or "<" + code name + ">" when the read fails.
inline std::string getOr(Session& s, std::string_view ns, std::string_view key) {
    auto r = s.get(ns, key);
    if (!r.ok())
        return "<" + std::string(statusCodeName(r.status().code())) + ">";
    return r.value();
}

/// Every visible key=value of `ns`, in cursor order, joined with ','.
inline std::string scanAll(Session& s, std::string_view ns, bool reverse = false) {
    auto c = s.openCursor(ns);
    REQUIRE_MESSAGE(c.ok(), c.status().toString());
    Cursor& cur = *c.value();
    std::string out;
    REQUIRE((reverse ? cur.last() : cur.first()).ok());
    while (cur.valid()) {
        if (!out.empty())
            out += ',';
        out += std::string(cur.key()) + "=" + std::string(cur.value());
        REQUIRE((reverse ? cur.prev() : cur.next()).ok());
    }
    return out;
}

}  // namespace mvkv::engine::testing
