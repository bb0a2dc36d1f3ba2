#include "engine/profiler.h"

#include <fmt/format.h>

#include <chrono>
#include <random>

#include "engine/engine.h"
#include "engine/namespace.h"
#include "engine/session.h"

namespace mvkv::engine {

Profiler::Profiler(Engine& engine) : engine_(engine) {}

Profiler::~Profiler() { shutdown(); }

void Profiler::shutdown() {
    std::lock_guard<std::mutex> g(writeMutex_);
    shut_ = true;
    session_.reset();
}

Profiler::Setting Profiler::get(std::string_view db) const {
    Setting s;
    {
        std::lock_guard<std::mutex> g(mutex_);
        auto it = levels_.find(db);
        s.level = s.was = it == levels_.end() ? 0 : it->second;
    }
    s.slowMs = engine_.slowOpLog().slowMs();
    s.sampleRate = engine_.slowOpLog().sampleRate();
    return s;
}

StatusWith<Profiler::Setting> Profiler::setLevel(std::string_view db, int level) {
    if (level < 0 || level > 2)
        return Status::InvalidArgument(fmt::format(
            "profiling level {} is not one of 0 (off), 1 (slow operations), 2 (all)", level));
    if (Status s = Namespace::checkDbName(db); !s.ok())
        return s;
    if (db == Namespace::kLocalDb)
        return Status::InvalidArgument("database 'local' cannot be profiled");
    if (level > 0 && engine_.secondary())
        return Status::NotWritablePrimary(fmt::format(
            "this engine is a replica's secondary: profiling {} would write {}.system.profile, a "
            "write of its own beside its primary's; profile on the primary",
            db, db));
    if (level > 0) {
        std::lock_guard<std::mutex> g(writeMutex_);
        if (engine_.secondary())  // again, under the writers' mutex
            return Status::NotWritablePrimary("this engine became a replica's secondary");
        if (Status s = ensureCollection(db); !s.ok())
            return s;
    }
    Setting out = get(db);
    {
        std::lock_guard<std::mutex> g(mutex_);
        out.was = 0;
        if (auto it = levels_.find(db); it != levels_.end()) {
            out.was = it->second;
            if (level == 0)
                levels_.erase(it);
            else
                it->second = level;
        } else if (level > 0) {
            levels_.emplace(std::string(db), level);
        }
        anyOn_.store(!levels_.empty(), std::memory_order_relaxed);
    }
    out.level = level;
    engine_.updateOpMonitoring();
    return out;
}

void Profiler::forgetDatabase(std::string_view db) {
    {
        std::lock_guard<std::mutex> g(mutex_);
        auto it = levels_.find(db);
        if (it == levels_.end())
            return;
        levels_.erase(it);
        anyOn_.store(!levels_.empty(), std::memory_order_relaxed);
    }
    engine_.updateOpMonitoring();
}

Status Profiler::ensureCollection(std::string_view db) {
    if (!session_) {
        session_ = engine_.openSession();
        session_->monitored_ = false;
        session_->setName("profiler");
        // Never wait long behind a drop: an entry is worth less than the
        // operation it describes.
        session_->setLockTimeout(std::chrono::milliseconds(100));
        session_->setRetryTimeout(std::chrono::milliseconds(100));
    }
    std::string ns = fmt::format("{}.system.profile", db);
    if (engine_.catalog().lookup(ns))
        return Status::OK();
    CollectionOptions options;
    options.capped = true;
    options.cappedSizeBytes = kDefaultSizeBytes;
    Status s = session_->createCollection(ns, options);
    if (s.code() == StatusCode::kNamespaceExists)
        return Status::OK();
    return s;
}

int Profiler::levelOf(std::string_view db) const {
    std::lock_guard<std::mutex> g(mutex_);
    auto it = levels_.find(db);
    return it == levels_.end() ? 0 : it->second;
}

void Profiler::write(std::string_view db, const FinishedOp& f) {
    std::string doc = profileDocument(f);
    std::lock_guard<std::mutex> g(writeMutex_);
    if (shut_ || engine_.secondary()) {
        // The engine is closing (an engine-internal session's last
        // operation): no new session may be opened now. Or it became a
        // secondary since the operation looked: an entry would be a write
        // of its own there.
        dropped_.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    if (Status s = ensureCollection(db); !s.ok()) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    // Microseconds since the epoch, forced to increase: time order is key order.
    int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                      f.when.time_since_epoch())
                      .count();
    lastKey_ = std::max(lastKey_ + 1, now);
    std::string key = fmt::format("{:020}", lastKey_);
    std::string ns = fmt::format("{}.system.profile", db);
    if (session_->insert(ns, key, doc).ok())
        written_.fetch_add(1, std::memory_order_relaxed);
    else
        dropped_.fetch_add(1, std::memory_order_relaxed);
}

nlohmann::ordered_json Profiler::status() const {
    nlohmann::ordered_json out;
    nlohmann::ordered_json levels = nlohmann::ordered_json::object();
    {
        std::lock_guard<std::mutex> g(mutex_);
        for (const auto& [db, level] : levels_)
            levels[db] = level;
    }
    out["levels"] = levels;
    out["slowms"] = engine_.slowOpLog().slowMs();
    out["sampleRate"] = engine_.slowOpLog().sampleRate();
    out["written"] = written();
    out["dropped"] = dropped();
    return out;
}

}  // namespace mvkv::engine
