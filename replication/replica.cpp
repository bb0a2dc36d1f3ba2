#include "replication/replica.h"

#include <fmt/format.h>

#include <functional>
#include <optional>
#include <string_view>
#include <utility>

#include "util/printable.h"

namespace mvkv::replication {

using engine::CollectionOptions;
using engine::Engine;
using engine::Session;
using engine::TxnOptions;
using engine::parseCollModCommand;
using engine::parseCreateCommand;

namespace {

using oplog::OpType;
using Clock = std::chrono::steady_clock;

// The worker of an entry: one key's entries always go to the same one, so
// they stay in timestamp order.
size_t workerOf(const oplog::OplogEntry& e, size_t workers) {
    size_t h = std::hash<std::string_view>{}(e.ns);
    h ^= std::hash<std::string_view>{}(e.key) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h % workers;
}

// The status of a failed entry, naming it.
Status withEntry(const Status& s, const oplog::OplogEntry& e) {
    return Status(s.code(),
                  fmt::format("replica apply of '{}' {} {} at timestamp {}: {}",
                              static_cast<char>(e.op), e.ns, printable(e.key), e.ts, s.message()));
}

}  // namespace

StatusWith<std::unique_ptr<ReplicaApplier>> ReplicaApplier::start(Engine& primary,
                                                                  Engine& secondary,
                                                                  ReplicaOptions options) {
    if (options.workers == 0 || options.maxBatchEntries == 0 || options.syncEveryBatches == 0)
        return Status::InvalidArgument(
            "a replica needs at least one worker, one entry a batch and a sync every batch or more");
    if (&primary == &secondary)
        return Status::InvalidArgument("a replica cannot apply an engine's oplog to itself");
    const mvcc::Timestamp from =
        options.startAfter == mvcc::kNoTimestamp ? mvcc::kNoTimestamp : options.startAfter + 1;
    auto cursor = primary.openOplogCursor({from, ""});
    if (!cursor.ok())
        return cursor.status();
    // The secondary's TTL collections lose entries only through the
    // primary's deletes: its own monitor must not run ahead of the oplog.
    // No client's transaction that wrote before this may commit after it.
    const bool wasSecondary = secondary.secondary();
    if (Status s = secondary.becomeSecondary(options.becomeSecondaryWait); !s.ok())
        return s;
    // startAfter is the secondary's lastAppliedTs(): stable goes to one
    // below it, as publish() would have put it.
    const mvcc::Timestamp stable = options.startAfter == 0 ? 0 : options.startAfter - 1;
    if (stable > secondary.timestamps().stable) {
        if (Status s = secondary.setStableTimestamp(stable); !s.ok()) {
            secondary.setSecondary(wasSecondary);  // as it was: nothing applies to it
            return s;
        }
    }
    std::unique_ptr<ReplicaApplier> applier(
        new ReplicaApplier(secondary, options, std::move(cursor).value()));
    for (auto& w : applier->workers_) {
        Worker* worker = w.get();
        worker->thread = std::thread([a = applier.get(), worker] { a->workerLoop(*worker); });
    }
    applier->tailer_ = std::thread([a = applier.get()] { a->tailLoop(); });
    return applier;
}

ReplicaApplier::ReplicaApplier(Engine& secondary, ReplicaOptions options,
                               std::unique_ptr<oplog::OplogCursor> cursor)
    : secondary_(secondary),
      options_(options),
      lastApplied_(options.startAfter),
      lastDurable_(options.startAfter),
      durable_(secondary.recovery().durable),
      ordered_(secondary.oplog() != nullptr),
      syncsEachCommit_(durable_ && secondary.oplog() &&
                       secondary.oplog()->syncMode() == oplog::SyncMode::kFsync),
      cursor_(std::move(cursor)),
      commandSession_(secondary.openSession()) {
    // Lock waits end every pollWait so that stop() is heard (a reader of the
    // secondary holding a collection delays a drop for as long as it reads).
    commandSession_->setLockTimeout(options_.pollWait);
    // Replicated writes are not client operations: never profiled or
    // slow-logged on the secondary, in none of its opcounters.
    commandSession_->setMonitored(false);
    for (size_t i = 0; i < options_.workers; ++i) {
        auto w = std::make_unique<Worker>();
        w->session = secondary.openSession();
        w->session->setLockTimeout(options_.pollWait);
        w->session->setApplyingOplog(true);  // capped evictions come in the log
        w->session->setMonitored(false);
        workers_.push_back(std::move(w));
    }
    stats_.lastAppliedTs = options.startAfter;
    stats_.lastDurableTs = options.startAfter;
}

ReplicaApplier::~ReplicaApplier() {
    stop();
}

void ReplicaApplier::stop() {
    std::lock_guard lock(stopMutex_);
    stopping_ = true;
    if (tailer_.joinable())
        tailer_.join();  // the tailer joins the workers on its way out
}

// --- the tailing thread ---

void ReplicaApplier::tailLoop() {
    Status s;
    Entries batch;
    while (s.ok() && !stopping_) {
        batch.clear();
        s = readBatch(&batch);
        if (!s.ok())
            continue;
        if (batch.empty()) {
            // Caught up: a good time to make the applied part durable.
            if (durable_ && lastDurableTs() < lastAppliedTs())
                s = syncDurable();
            continue;
        }
        s = applyBatch(batch);
        if (s.ok() && durable_ && !syncsEachCommit_ &&
            ++batchesSinceSync_ >= options_.syncEveryBatches)
            s = syncDurable();
    }
    // A command that stop() cut short left nothing behind lastAppliedTs().
    if (commandInterrupted_)
        s = Status::OK();
    {
        std::lock_guard lock(poolMutex_);
        quit_ = true;
    }
    workCv_.notify_all();
    for (auto& w : workers_)
        w->thread.join();
    finish(std::move(s));
}

Status ReplicaApplier::readBatch(Entries* batch) {
    batch->swap(carry_);
    if (batch->size() < options_.maxBatchEntries) {
        // With a peeked record in hand there is work already: do not wait.
        auto wait = batch->empty() ? options_.pollWait : std::chrono::milliseconds(0);
        if (Status s = cursor_->next(batch, options_.maxBatchEntries - batch->size(), wait);
            !s.ok())
            return s;
        if (batch->empty())
            return Status::OK();
    }
    // Peek one record at a time until the timestamp changes, so that the
    // last group is whole as far as the oplog shows it now: a reader at the
    // batch's end then sees every transaction at that timestamp at once.
    // (One committed there later still comes: see "stable is T - 1".)
    while (true) {
        Entries peek;
        if (Status s = cursor_->next(&peek, 1); !s.ok())
            return s;
        if (peek.empty())
            return Status::OK();
        if (peek.front().ts != batch->back().ts) {
            carry_ = std::move(peek);
            return Status::OK();
        }
        for (auto& e : peek)
            batch->push_back(std::move(e));
    }
}

Status ReplicaApplier::applyBatch(const Entries& batch) {
    // The batch's figures go out with its last publication, so that a
    // waiter woken by it sees them.
    const auto start = Clock::now();
    auto published = [&](size_t next) {
        return next == batch.size() ? std::optional(start) : std::nullopt;
    };
    size_t begin = 0;
    for (size_t i = 0; i <= batch.size(); ++i) {
        if (i < batch.size() && batch[i].op != OpType::kCommand)
            continue;
        if (i > begin) {
            if (Status s = applyRun(batch, begin, i); !s.ok())
                return s;
            if (Status s = publish(batch[i - 1].ts, published(i)); !s.ok())
                return s;
        }
        if (i < batch.size()) {
            if (Status s = applyCommand(batch[i]); !s.ok())
                return s;
            if (Status s = publish(batch[i].ts, published(i + 1)); !s.ok())
                return s;
        }
        begin = i + 1;
    }
    return Status::OK();
}

Status ReplicaApplier::applyRun(const Entries& batch, size_t begin, size_t end) {
    if (ordered_) {
        // In timestamp order on one session (the header's "Durable
        // secondaries"); the workers stay idle.
        std::vector<uint32_t> all;
        all.reserve(end - begin);
        for (size_t i = begin; i < end; ++i)
            all.push_back(static_cast<uint32_t>(i));
        if (Status s = applyShare(*workers_.front()->session, batch, all); !s.ok())
            return s;
        std::lock_guard stateLock(stateMutex_);
        stats_.entriesApplied += end - begin;
        return Status::OK();
    }
    // Workers are idle here (after the barrier): their shares are ours.
    for (auto& w : workers_)
        w->share.clear();
    for (size_t i = begin; i < end; ++i)
        workers_[workerOf(batch[i], workers_.size())]->share.push_back(static_cast<uint32_t>(i));
    std::unique_lock lock(poolMutex_);
    run_ = &batch;
    busy_ = workers_.size();
    ++generation_;
    workCv_.notify_all();
    doneCv_.wait(lock, [&] { return busy_ == 0; });
    run_ = nullptr;
    lock.unlock();
    for (auto& w : workers_) {
        if (!w->error.ok())
            return w->error;
    }
    std::lock_guard stateLock(stateMutex_);
    stats_.entriesApplied += end - begin;
    return Status::OK();
}

Status ReplicaApplier::applyCommand(const oplog::OplogEntry& e) {
    Session& s = *commandSession_;
    // A secondary with an oplog logs the command at the primary's timestamp.
    auto logAtPrimaryTs = [&] {
        if (ordered_)
            s.setNextCommandTimestamp(e.ts);
    };
    Status r;
    StatusCode fine = StatusCode::kOk;  // what an idempotent repeat returns
    CollectionOptions options;
    auto create = parseCreateCommand(e.value, &options);
    int64_t expireAfter = 0;
    auto collMod = parseCollModCommand(e.value, &expireAfter);
    if (!create.ok() || !collMod.ok()) {
        r = create.ok() ? collMod.status() : create.status();
    } else if (create.value()) {
        r = retryLockTimeouts([&] {
            logAtPrimaryTs();
            return s.createCollection(e.ns, options);
        });
        fine = StatusCode::kNamespaceExists;
    } else if (collMod.value()) {
        r = retryLockTimeouts([&] {
            logAtPrimaryTs();
            return s.setExpireAfterSeconds(e.ns, expireAfter);
        });
    } else if (e.value == "drop") {
        r = retryLockTimeouts([&] {
            logAtPrimaryTs();
            return s.dropCollection(e.ns);
        });
        fine = StatusCode::kNamespaceNotFound;
    } else if (e.value == "dropDatabase") {
        r = retryLockTimeouts([&] {
            logAtPrimaryTs();
            return s.dropDatabase(e.ns);
        });
        fine = StatusCode::kNamespaceNotFound;
    } else {
        r = Status::InvalidArgument(fmt::format("unknown command '{}'", printable(e.value)));
    }
    s.setNextCommandTimestamp(mvcc::kNoTimestamp);  // unused when it failed early
    if (r.code() == fine)
        r = Status::OK();
    if (r.code() == StatusCode::kInterrupted && stopping_)
        commandInterrupted_ = true;
    if (!r.ok())
        return withEntry(r, e);
    std::lock_guard lock(stateMutex_);
    stats_.commandsApplied++;
    return Status::OK();
}

Status ReplicaApplier::publish(mvcc::Timestamp ts,
                               std::optional<std::chrono::steady_clock::time_point> batchStart) {
    // Stable first: from here nothing commits below ts, so a reader at ts
    // sees a state that no later batch changes (but for a late transaction
    // at ts itself: the header's "stable is T - 1").
    if (Status s = secondary_.setStableTimestamp(ts - 1); !s.ok())
        return Status(s.code(),
                      "replica cannot move the secondary's stable timestamp: " + s.message());
    {
        std::lock_guard lock(stateMutex_);
        lastApplied_.store(ts, std::memory_order_release);
        stats_.lastAppliedTs = ts;
        if (!durable_ || syncsEachCommit_) {
            lastDurable_.store(ts, std::memory_order_release);
            stats_.lastDurableTs = ts;
        }
        if (batchStart) {
            stats_.batches++;
            stats_.applyMicros += static_cast<uint64_t>(
                std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - *batchStart)
                    .count());
        }
    }
    appliedCv_.notify_all();
    if (options_.onApplied)
        options_.onApplied(ts, lastDurableTs());
    return Status::OK();
}

Status ReplicaApplier::syncDurable() {
    batchesSinceSync_ = 0;
    if (options_.beforeSync && !options_.beforeSync())
        return Status::OK();
    const mvcc::Timestamp applied = lastAppliedTs();
    if (Status s = secondary_.oplog()->flush(); !s.ok())
        return Status(s.code(), "replica cannot sync the secondary's oplog: " + s.message());
    {
        std::lock_guard lock(stateMutex_);
        lastDurable_.store(applied, std::memory_order_release);
        stats_.lastDurableTs = applied;
    }
    if (options_.onApplied)
        options_.onApplied(applied, applied);
    return Status::OK();
}

void ReplicaApplier::finish(Status s) {
    {
        std::lock_guard lock(stateMutex_);
        error_ = s;
        running_ = false;
    }
    appliedCv_.notify_all();
    if (options_.onStopped)
        options_.onStopped(s);
}

// --- the workers ---

void ReplicaApplier::workerLoop(Worker& w) {
    uint64_t seen = 0;
    while (true) {
        const Entries* run = nullptr;
        {
            std::unique_lock lock(poolMutex_);
            workCv_.wait(lock, [&] { return quit_ || generation_ != seen; });
            if (quit_)
                return;  // only set while no run is out
            seen = generation_;
            run = run_;
        }
        Status s = applyShare(*w.session, *run, w.share);
        std::lock_guard lock(poolMutex_);
        w.error = std::move(s);
        if (--busy_ == 0)
            doneCv_.notify_one();
    }
}

Status ReplicaApplier::applyShare(Session& session, const Entries& batch,
                                  const std::vector<uint32_t>& share) {
    // One transaction per timestamp, committed at it: the primary's
    // transaction (its part on this worker) lands whole at its own time.
    size_t i = 0;
    while (i < share.size()) {
        const mvcc::Timestamp ts = batch[share[i]].ts;
        if (Status s = session.begin(); !s.ok())
            return withEntry(s, batch[share[i]]);
        for (; i < share.size() && batch[share[i]].ts == ts; ++i) {
            if (Status s = applyWrite(session, batch[share[i]]); !s.ok()) {
                if (session.inTransaction())
                    session.abort().ignore();
                return withEntry(s, batch[share[i]]);
            }
        }
        if (Status s = session.commit(ts); !s.ok())
            return withEntry(s, batch[share[i - 1]]);
    }
    return Status::OK();
}

Status ReplicaApplier::applyWrite(Session& session, const oplog::OplogEntry& e) {
    switch (e.op) {
        case OpType::kInsert:
        case OpType::kUpdate:
            // The full post-image: a put makes a repeat harmless.
            return retryLockTimeouts([&] { return session.put(e.ns, e.key, e.value); });
        case OpType::kDelete: {
            Status s = retryLockTimeouts([&] { return session.remove(e.ns, e.key); });
            return s.code() == StatusCode::kNotFound ? Status::OK() : s;
        }
        case OpType::kCommand:
            break;
    }
    return Status::Internal("a command reached a worker; commands are applied serially");
}

template <typename Op>
Status ReplicaApplier::retryLockTimeouts(Op&& op) {
    while (true) {
        Status s = op();
        if (s.code() != StatusCode::kLockTimeout)
            return s;
        if (stopping_)
            return Status::Interrupted("the replica was stopped while it waited for a lock (" +
                                       s.message() + ")");
    }
}

// --- what callers see ---

Status ReplicaApplier::waitApplied(mvcc::Timestamp ts, std::chrono::milliseconds timeout) const {
    std::unique_lock lock(stateMutex_);
    appliedCv_.wait_for(lock, timeout, [&] { return lastAppliedTs() >= ts || !running_; });
    if (lastAppliedTs() >= ts)
        return Status::OK();
    if (!error_.ok())
        return error_;
    if (!running_)
        return Status::IllegalOperation(fmt::format(
            "the replica was stopped at timestamp {} before it applied {}", lastAppliedTs(), ts));
    return Status::Busy(fmt::format("timestamp {} not applied after {} ms (applied through {})", ts,
                                    timeout.count(), lastAppliedTs()));
}

Status ReplicaApplier::status() const {
    std::lock_guard lock(stateMutex_);
    return error_;
}

ReplicaStats ReplicaApplier::stats() const {
    std::lock_guard lock(stateMutex_);
    ReplicaStats out = stats_;
    out.running = running_;
    if (out.batches > 0)
        out.meanBatch = static_cast<double>(out.entriesApplied + out.commandsApplied) /
                        static_cast<double>(out.batches);
    return out;
}

}  // namespace mvkv::replication
