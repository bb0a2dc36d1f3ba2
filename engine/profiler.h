// Profiler: MongoDB's database profiler. Per database a level — 0 off, 1
// operations slower than slowms (sampled by sampleRate), 2 all — and each
// profiled operation becomes one document in `<db>.system.profile`, a capped
// collection (1 MiB unless it already exists), stored as JSON text under a
// key that increases with time, so a scan reads entries in time order.
//
// slowms and sampleRate are the engine's (Engine::setSlowOp), shared with
// the slow-op log, as in MongoDB. Writing an entry never fails the
// profiled operation: an entry that cannot be written (a lock not granted
// within a short timeout, the collection dropped meanwhile, ...) is counted
// in `dropped` and forgotten. The profiler's own writes are never profiled
// or slow-logged. Entries are written one at a time (a mutex), so their key
// order is their insertion order.
//
// Thread safety: every method, from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/op_report.h"
#include "util/status.h"

namespace mvkv::engine {

class Engine;
class Session;

class Profiler {
  public:
    static constexpr uint64_t kDefaultSizeBytes = 1 << 20;  // MongoDB's default

    explicit Profiler(Engine& engine);
    ~Profiler();

    struct Setting {
        int was = 0;
        int level = 0;
        int64_t slowMs = 0;
        double sampleRate = 1.0;
    };
    /// Sets `db`'s level (0..2); InvalidArgument otherwise or for a bad
    /// database name. Returns the previous level in `was` and the engine's
    /// slowms and sampleRate. Level 1 or 2 creates `<db>.system.profile`;
    /// on a replica's secondary it is NotWritablePrimary (a level set
    /// before it became one writes nothing while it is one).
    StatusWith<Setting> setLevel(std::string_view db, int level);
    /// `db` was dropped: its level goes back to 0 (as in MongoDB), so the
    /// drop's own entry does not bring the database back.
    void forgetDatabase(std::string_view db);
    /// `db`'s level and the shared settings (was = level).
    Setting get(std::string_view db) const;
    /// True when some database has a level above 0: operations then ask.
    bool anyOn() const { return anyOn_.load(std::memory_order_relaxed); }
    /// `db`'s level (0 when not set): the caller profiles at level 2 always,
    /// at level 1 when slow (over slowms and sampled in, decided once for
    /// the log and the profile alike). Asked before the caller builds the
    /// entry, so an operation on a database nobody profiles costs a lookup.
    int levelOf(std::string_view db) const;
    /// Writes `f` to `<db>.system.profile`.
    void profile(std::string_view db, const FinishedOp& f) { write(db, f); }

    uint64_t written() const { return written_.load(std::memory_order_relaxed); }
    uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
    /// Ends the profiler's session (the engine, before it goes).
    void shutdown();
    /// {"levels":{db:level},"written":n,"dropped":n} for serverStatus.
    nlohmann::ordered_json status() const;

  private:
    Status ensureCollection(std::string_view db);  // requires writeMutex_
    void write(std::string_view db, const FinishedOp& f);

    Engine& engine_;
    mutable std::mutex mutex_;
    std::map<std::string, int, std::less<>> levels_;  // GUARDED_BY(mutex_)
    std::atomic<bool> anyOn_{false};
    std::mutex writeMutex_;
    std::unique_ptr<Session> session_;  // GUARDED_BY(writeMutex_), opened at first use
    int64_t lastKey_ = 0;               // GUARDED_BY(writeMutex_)
    bool shut_ = false;                 // GUARDED_BY(writeMutex_)
    std::atomic<uint64_t> written_{0};
    std::atomic<uint64_t> dropped_{0};
};

}  // namespace mvkv::engine
