// The mvkv adapter: an Engine with one collection "bench.kv".
//
// Settings: an engine on the case's fresh directory, logging every commit
// to its oplog: --sync none buffers the log (written every 256 KiB, left to
// the OS), --sync fsync fdatasyncs before each commit returns (group commit
// shares syncs between threads). Data stays in memory; the log is what
// reaches the disk.
// Autocommit operations are mvkv's implicit single-operation transactions
// (IS / IX intent locks, a snapshot, automatic write-conflict retry); the
// retries of each write are counted from Session::lastOpWriteConflicts().
// As mongod does, the adapter keeps the stable and oldest timestamps close
// behind the newest commit (every 256 writes of a thread), so the history
// sweep may free what no reader needs instead of keeping every version.
#include <memory>

#include <mvkv/mvkv.h>

#include "store.h"

#ifndef MVKV_VERSION
#define MVKV_VERSION "unknown"
#endif

namespace mvkv::bench {
namespace {

// Only the public API (include/mvkv/), as a harness would use it.
using mvkv::Engine;
using mvkv::Session;

constexpr std::string_view kNs = "bench.kv";

class MvkvThread final : public StoreThread {
  public:
    MvkvThread(Engine& engine, std::unique_ptr<Session> session)
        : engine_(engine), session_(std::move(session)) {}

    Status get(std::string_view key, std::string* value) override {
        return session_->get(kNs, key, value);
    }
    Status put(std::string_view key, std::string_view value) override {
        Status s = session_->put(kNs, key, value);
        afterWrite();
        return s;
    }
    Status remove(std::string_view key) override {
        Status s = session_->remove(kNs, key);
        afterWrite();
        return s;
    }
    Status scan(std::string_view start, uint64_t limit, ScanResult* out) override {
        auto opened = session_->openCursor(kNs);
        if (!opened.ok())
            return opened.status();
        mvkv::Cursor& cursor = *opened.value();
        Status s = start.empty() ? cursor.first() : cursor.seek(start);
        for (uint64_t n = 0; s.ok() && cursor.valid() && n < limit; ++n) {
            ++out->count;
            out->bytes += cursor.key().size() + cursor.value().size();
            if (out->collect != nullptr)
                out->collect->emplace_back(cursor.key(), cursor.value());
            s = cursor.next();
        }
        return s;
    }
    Status begin(TxnKind) override { return session_->begin(); }
    Status commit() override {
        Status s = session_->commit().status();
        afterWrite();
        return s;
    }
    // mvkv rolls an explicit transaction back itself when it reports a conflict.
    Status abort() override { return session_->inTransaction() ? session_->abort() : Status::OK(); }

  private:
    void afterWrite() {
        // Inside a transaction a conflict is returned, not retried: nothing to count.
        if (!session_->inTransaction())
            conflicts_ += session_->lastOpWriteConflicts();
        if (++writes_ % 256 == 0) {
            // Other threads may have moved them further: a refusal is fine.
            mvkv::Timestamp clock = engine_.timestamps().clock;
            engine_.setStableTimestamp(clock).ignore();
            engine_.setOldestTimestamp(clock).ignore();
        }
    }

    uint64_t writes_ = 0;
    Engine& engine_;
    std::unique_ptr<Session> session_;
};

class MvkvStore final : public Store {
  public:
    explicit MvkvStore(std::unique_ptr<Engine> engine) : engine_(std::move(engine)) {}

    StatusWith<std::unique_ptr<StoreThread>> thread() override {
        auto session = engine_->openSession();
        if (!session.ok())
            return session.status();
        return std::unique_ptr<StoreThread>(new MvkvThread(*engine_, std::move(session).value()));
    }

    std::vector<std::pair<std::string, double>> engineMetrics() override {
        mvkv::EngineStats stats = engine_->stats();
        std::vector<std::pair<std::string, double>> out{
            {"max_chain", double(stats.maxChainLength)},
            {"mean_chain", stats.meanChainLength},
        };
        return out;
    }

  private:
    std::unique_ptr<Engine> engine_;
};

StatusWith<std::unique_ptr<Store>> openMvkv(const StoreOptions& options) {
    // The engine as it is meant to run: on a data directory, every commit in
    // its oplog; --sync none leaves the log to its buffer and the OS (as
    // WiredTiger's transaction_sync none), fsync makes every commit durable.
    mvkv::EngineOptions engineOptions;
    engineOptions.path = options.dir;
    engineOptions.syncMode =
        options.sync == SyncMode::kFsync ? mvkv::SyncMode::kFsync : mvkv::SyncMode::kNone;
    auto opened = Engine::open(engineOptions);
    if (!opened.ok())
        return opened.status();
    std::unique_ptr<Engine> engine = std::move(opened).value();
    {
        auto session = engine->openSession();
        if (!session.ok())
            return session.status();
        if (Status created = session.value()->createCollection(kNs); !created.ok())
            return created;
    }
    if (options.profileLevel != 0)
        if (Status set = engine->setProfilingLevel("bench", options.profileLevel); !set.ok())
            return set;
    return std::unique_ptr<Store>(new MvkvStore(std::move(engine)));
}

}  // namespace

StoreFactory mvkvStoreFactory() {
    return availableStore("mvkv", MVKV_VERSION, {SyncMode::kNone, SyncMode::kFsync}, openMvkv);
}

}  // namespace mvkv::bench
