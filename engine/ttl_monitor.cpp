#include "engine/ttl_monitor.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/op_scope.h"
#include "engine/session.h"
#include "engine/ttl_value.h"
#include "failpoint/failpoints.h"

namespace mvkv::engine {

void TtlMonitor::start(std::chrono::milliseconds sleep) {
    if (sleep.count() <= 0)
        return;
    thread_ = std::thread([this, sleep] { run(sleep); });
}

void TtlMonitor::stop() {
    stopping_.store(true, std::memory_order_release);
    {
        std::lock_guard lock(sessionMutex_);
        if (running_)
            running_->interrupt();  // a lock wait ends at once
    }
    {
        std::lock_guard lock(wakeMutex_);
        stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable())
        thread_.join();
    std::lock_guard pass(passMutex_);  // one run on another thread has ended too
}

void TtlMonitor::setSecondary(bool on) {
    secondary_.store(on, std::memory_order_release);
    std::lock_guard pass(passMutex_);  // a pass that began before has ended
}

void TtlMonitor::run(std::chrono::milliseconds sleep) {
    std::unique_lock lock(wakeMutex_);
    while (!wake_.wait_for(lock, sleep, [&] { return stop_; })) {
        lock.unlock();
        if (!failpoint::pauseTtlMonitor.check()) {  // explicit passes still run
            auto result = runPass();  // counted in stats (passes, failedPasses)
            (void)result;
        }
        lock.lock();
    }
}

void TtlMonitor::setTestHook(std::function<void(std::string_view, std::string_view)> hook) {
    std::lock_guard pass(passMutex_);
    testHook_ = std::move(hook);
}

TtlStats TtlMonitor::stats() const {
    TtlStats s;
    s.passes = passes_.load(std::memory_order_relaxed);
    s.deletedDocuments = deleted_.load(std::memory_order_relaxed);
    s.skippedConflicts = conflicts_.load(std::memory_order_relaxed);
    s.failedPasses = failed_.load(std::memory_order_relaxed);
    s.skippedLockTimeouts = lockTimeouts_.load(std::memory_order_relaxed);
    s.secondary = secondary();
    return s;
}

StatusWith<TtlPassResult> TtlMonitor::runPass() {
    std::lock_guard pass(passMutex_);
    if (stopping_.load(std::memory_order_acquire))
        return Status::IllegalOperation(
            "the engine is closing: the TTL monitor runs no more passes");
    if (secondary())
        return Status::IllegalOperation(
            "this engine is a replica's secondary: its TTL collections lose expired entries "
            "through its primary's deletes, applied from the oplog, never on their own");
    auto halted = [this] { return stopping_.load(std::memory_order_acquire) || secondary(); };
    std::unique_ptr<Session> session = engine_.openSession();
    session->setMonitored(false);  // the engine's own: no slow log, profile or opcounter
    session->setName("TTLMonitor");
    // A collection held in X (a drop waiting behind a long transaction) is
    // skipped until the next pass rather than holding up the others.
    const auto& configured = engine_.options().lockTimeout;
    session->setLockTimeout(configured ? std::min(*configured, kLockTimeout) : kLockTimeout);
    {
        std::lock_guard lock(sessionMutex_);
        running_ = session.get();
    }
    passes_.fetch_add(1, std::memory_order_relaxed);
    TtlPassResult result;
    Status s = [&]() -> Status {
        for (const std::shared_ptr<Collection>& coll : engine_.catalog().all()) {
            if (halted())
                return Status::OK();
            if (!coll->ttl())
                continue;
            const std::string ns = coll->ns().ns();
            const int64_t now = engine_.wallClockMs();
            ++result.collections;
            result.nowMs = now;
            // The scan: a yielding walk with its own snapshot, stored values.
            std::vector<std::string> expired;
            Status scanned;
            {
                OpScope scope(*session, {CurOpType::kQuery, "find", ns});
                scanned = scope.finish(
                    session->walkRange(ns, lockmgr::LockMode::kIS, {}, false,
                                       [&](Collection& c, std::string_view key,
                                           std::string_view stored, bool* stop) -> Status {
                                           TtlStamp stamp;
                                           if (c.ttl() && decodeTtlStamp(stored, &stamp) &&
                                               stamp.expiresAtMs(c.expireAfterSeconds()) <= now)
                                               expired.emplace_back(key);
                                           *stop = halted();
                                           return Status::OK();
                                       }));
            }
            // Dropped since the catalog was listed: nothing left to expire.
            if (scanned.code() == StatusCode::kNamespaceNotFound ||
                scanned.code() == StatusCode::kQueryPlanKilled)
                continue;
            if (scanned.code() == StatusCode::kLockTimeout) {
                ++result.skippedLockTimeouts;
                continue;
            }
            if (!scanned.ok())
                return scanned;
            result.expired += expired.size();
            for (const std::string& key : expired) {
                if (halted())
                    return Status::OK();
                if (testHook_)
                    testHook_(ns, key);
                bool deleted = false, conflict = false;
                Status d = deleteIfExpired(*session, ns, key, now, &deleted, &conflict);
                if (d.code() == StatusCode::kNamespaceNotFound)
                    break;
                if (d.code() == StatusCode::kLockTimeout) {
                    ++result.skippedLockTimeouts;  // the rest waits for the next pass
                    break;
                }
                if (!d.ok())
                    return d;
                if (deleted) {
                    ++result.deleted;
                    deleted_.fetch_add(1, std::memory_order_relaxed);
                }
                if (conflict) {
                    ++result.skippedConflicts;
                    conflicts_.fetch_add(1, std::memory_order_relaxed);
                }
            }
        }
        return Status::OK();
    }();
    {
        std::lock_guard lock(sessionMutex_);
        running_ = nullptr;
    }
    lockTimeouts_.fetch_add(result.skippedLockTimeouts, std::memory_order_relaxed);
    if (!s.ok()) {
        failed_.fetch_add(1, std::memory_order_relaxed);
        return Status(s.code(), fmt::format("TTL monitor pass: {} (after deleting {} entries, "
                                            "which stay deleted)",
                                            s.message(), result.deleted));
    }
    return result;
}

Status TtlMonitor::deleteIfExpired(Session& session, const std::string& ns, const std::string& key,
                                   int64_t nowMs, bool* deleted, bool* conflict) {
    // Read again inside the transaction: a refresh committed since the scan
    // shows here and is kept; one committed after this snapshot, or still
    // running, makes the remove a write conflict.
    if (Status s = session.begin(); !s.ok())
        return s;
    std::string value;
    std::optional<int64_t> expiresAt;
    Status r = session.getWithExpiry(ns, key, &value, &expiresAt);
    bool removing = r.ok() && expiresAt && *expiresAt <= nowMs;
    if (removing)
        r = session.remove(ns, key);
    else if (r.code() == StatusCode::kNotFound)
        r = Status::OK();  // removed meanwhile
    if (r.code() == StatusCode::kWriteConflict) {
        *conflict = true;  // the remove aborted the transaction
        return Status::OK();
    }
    if (!r.ok()) {
        if (session.inTransaction())
            session.abort().ignore();
        return r;
    }
    Status c = session.commit();
    *deleted = c.ok() && removing;
    return c;
}

}  // namespace mvkv::engine
