// mvkv-torture: a seeded random mix of operations from several threads on a
// durable engine, checked against a model while it runs and again after
// every kill -9 and reopen (docs/reliability.md, "The torture test"; in the
// spirit of WiredTiger's test/format).
//
// The parent process loops: it starts a child (this program with --child),
// which opens the data directory and runs the workers, reading the child's
// report of every operation (pending, acknowledged, not applied) from a
// pipe; it kills the child with SIGKILL at a random moment, reopens the
// directory itself and checks every key against what was acknowledged: an
// acknowledged write is there, an operation in flight at the kill is there
// whole or not at all (or key by key, for a removal of a range outside a
// transaction, which is not atomic), nothing else changed. One round in
// three also arms a crash point (failpoint abortProcess), where the child
// may kill itself first. A transaction the kill left prepared is resolved by
// the parent, playing the coordinator, before the check.
//
// Each worker thread of the child owns one collection, so it knows exactly
// what its keys held at each commit timestamp (tools/torture/model.h) and
// checks every read: point reads, scans, transactions with and without a
// read timestamp, committed at the clock's timestamp or at a chosen one,
// and prepared transactions. A background thread moves stable and oldest, sweeps
// history and takes checkpoints meanwhile.
//
// The seed fixes each worker's operations and the kill times; the threads'
// interleaving is the machine's. --threads 1 replays a failure's operations
// exactly.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "mvkv/engine.h"
#include "mvkv/session.h"
#include "torture/model.h"

namespace mvkv::torture {
namespace {

using Value = WorkerModel::Value;
using Clock = std::chrono::steady_clock;

std::string collectionOf(int worker) {
    return fmt::format("torture.w{}", worker);
}

SyncMode syncMode = SyncMode::kFsync;  // --sync

EngineOptions engineOptions(const std::string& dir) {
    EngineOptions o;
    o.path = dir;
    o.syncMode = syncMode;
    o.oplogCapBytes = 1 << 20;  // capped behind the checkpoints as it grows
    o.checkpointInterval = std::chrono::milliseconds(0);     // the background thread's
    o.historySweepInterval = std::chrono::milliseconds(0);
    return o;
}

// ---------------------------------------------------------------- the child

class Reporter {
  public:
    void line(const std::string& text) {
        std::lock_guard lock(mutex_);
        std::string l = text + "\n";
        for (size_t done = 0; done < l.size();) {
            ssize_t n = ::write(STDOUT_FILENO, l.data() + done, l.size() - done);
            if (n <= 0)
                std::_Exit(4);  // the parent is gone
            done += size_t(n);
        }
    }

  private:
    std::mutex mutex_;
};

[[noreturn]] void childFail(Reporter& out, int worker, const std::string& what,
                            const std::deque<std::string>& recent) {
    std::string text = fmt::format("FAIL worker {}: {}", worker, what);
    for (const std::string& r : recent)
        text += " | " + r;
    out.line(text);
    std::_Exit(3);
}

std::string show(const Value& v) {
    return v ? *v : "<absent>";
}

struct Shared {
    Engine* engine = nullptr;
    Reporter out;
    std::atomic<bool> stop{false};
    std::vector<std::atomic<Timestamp>> lastTs;  // each worker's newest commit
    std::atomic<uint64_t> ops{0};
    explicit Shared(int workers) : lastTs(workers) {}
};

class Worker {
  public:
    Worker(Shared& shared, int id, uint64_t seed)
        : sh_(shared), id_(id), ns_(collectionOf(id)), rng_(seed) {}

    void run() {
        auto opened = sh_.engine->openSession();
        if (!opened.ok())
            fail("openSession: " + opened.status().toString());
        s_ = std::move(opened).value();
        s_->setPrepareConflictWait(true);
        if (Status c = s_->createCollection(ns_); !c.ok() && c.code() != StatusCode::kNamespaceExists)
            fail("create: " + c.toString());
        std::vector<Value> values(kKeysPerWorker);
        for (int k = 0; k < kKeysPerWorker; ++k)
            values[k] = read(keyName(k));
        model_.reset(values);
        minReadTs_ = sh_.engine->timestamps().clock + 1;
        while (!sh_.stop.load()) {
            step();
            sh_.ops.fetch_add(1, std::memory_order_relaxed);
        }
    }

  private:
    [[noreturn]] void fail(const std::string& what) {
        const Timestamps t = sh_.engine->timestamps();
        childFail(sh_.out, id_,
                  fmt::format("{} (reads checked from {}; clock {}, oldest {}, stable {})", what,
                              minReadTs_, t.clock, t.oldest, t.stable),
                  recent_);
    }

    void note(const std::string& what) {
        recent_.push_back(what);
        if (recent_.size() > 20)
            recent_.pop_front();
    }

    Value read(const std::string& key) {
        std::string v;
        Status st = s_->get(ns_, key, &v);
        if (st.code() == StatusCode::kNotFound)
            return std::nullopt;
        if (!st.ok())
            fail("get " + key + ": " + st.toString());
        return v;
    }

    // Tells the parent what an operation will do before it commits.
    void pending(bool atomic, const std::vector<std::pair<int, Value>>& effects) {
        std::string l = fmt::format("P {} {} {} {}", id_, ++opId_, atomic ? 1 : 0, effects.size());
        for (const auto& [k, v] : effects)
            l += fmt::format(" {}={}", k, v ? *v : "~");
        sh_.out.line(l);
    }
    void acknowledged(const std::vector<std::pair<int, Value>>& effects) {
        const Timestamp ts = s_->lastCommitTimestamp();
        for (const auto& [k, v] : effects)
            model_.commit(k, ts, v);
        sh_.lastTs[id_].store(ts);
        sh_.out.line(fmt::format("A {} {}", id_, opId_));
    }
    void notApplied() { sh_.out.line(fmt::format("X {} {}", id_, opId_)); }

    std::string newValue() { return fmt::format("v{}-{}-{}", id_, opId_ + 1, rng_() % 1000); }

    void step() {
        const int k = int(rng_() % kKeysPerWorker);
        const std::string key = keyName(k);
        const uint32_t dice = uint32_t(rng_() % 100);
        if (dice < 30) {  // put / insert / update / remove, one key, implicit
            const int kind = int(rng_() % 4);
            Value v = kind == 3 ? Value{} : Value{newValue()};
            static const char* const kNames[] = {"put", "insert", "update", "remove"};
            note(fmt::format("{} {} {}", kNames[kind], key, show(v)));
            pending(true, {{k, v}});
            Status st;
            switch (kind) {
                case 0: st = s_->put(ns_, key, *v); break;
                case 1: st = s_->insert(ns_, key, *v); break;
                case 2: st = s_->update(ns_, key, *v); break;
                default: st = s_->remove(ns_, key); break;
            }
            const bool exists = model_.now(k).has_value();
            if (kind == 1 && exists) {
                if (st.code() != StatusCode::kDuplicateKey)
                    fail("insert of existing " + key + ": " + st.toString());
                return notApplied();
            }
            if ((kind == 2 || kind == 3) && !exists) {
                if (st.code() != StatusCode::kNotFound)
                    fail("update/remove of absent " + key + ": " + st.toString());
                return notApplied();
            }
            if (!st.ok())
                fail("write " + key + ": " + st.toString());
            return acknowledged({{k, v}});
        }
        if (dice < 45)
            return transaction(false);
        if (dice < 52)
            return preparedTransaction();
        if (dice < 60)
            return transaction(true);
        if (dice < 70)
            return scanAll();
        if (dice < 80)
            return readAtTimestamp();
        if (dice < 85)
            return rangeRemove();
        if (dice < 86)
            return dropAndCreate();
        // Reads of one key, checked.
        note("get " + key);
        if (Value got = read(key); got != model_.now(k))
            fail(fmt::format("get {} = {}, model {}", key, show(got), show(model_.now(k))));
    }

    // Begins a transaction, at a past read timestamp of this worker's when
    // asked; false when there is none to read at yet. *at: the read
    // timestamp (kNoTimestamp without one).
    bool beginTxn(bool withReadTs, Timestamp* at) {
        TxnOptions o;
        if (withReadTs) {
            o.readTs = pickReadTs();
            if (o.readTs == kNoTimestamp)
                return false;
            o.roundUpReadTs = true;
        }
        if (Status b = s_->begin(o); !b.ok())
            fail("begin: " + b.toString());
        *at = withReadTs ? s_->readTimestamp() : kNoTimestamp;
        return true;
    }

    // A commit or prepare timestamp a little ahead of the clock (another
    // worker may commit past it first: the engine then refuses it).
    Timestamp aheadOfClock() { return sh_.engine->timestamps().clock + 1 + rng_() % 3; }

    // Up to three reads, each checked, and writes of random keys inside the
    // running transaction; false when it met a write conflict (aborted).
    bool readAndWrite(Timestamp at, std::vector<std::pair<int, Value>>* effects) {
        for (int n = 1 + int(rng_() % 3); n > 0; --n) {
            const int k = int(rng_() % kKeysPerWorker);
            Value expect = at != kNoTimestamp ? model_.at(k, at) : model_.now(k);
            for (const auto& [ek, ev] : *effects)
                if (ek == k)
                    expect = ev;
            Value got = read(keyName(k));
            note(fmt::format("txn(read_ts {}) get {} = {}", at, keyName(k), show(got)));
            if (got != expect)
                fail(fmt::format("txn read at {} of {} = {}, model {}", at, keyName(k), show(got),
                                 show(expect)));
            if (rng_() % 2) {
                Value v = rng_() % 4 == 0 ? Value{} : Value{newValue()};
                Status st = v ? s_->put(ns_, keyName(k), *v) : s_->remove(ns_, keyName(k));
                if (st.code() == StatusCode::kWriteConflict) {
                    s_->abort().ignore();
                    return false;  // a read timestamp behind this key's newest commit
                }
                if (!v && st.code() == StatusCode::kNotFound)
                    continue;
                if (!st.ok())
                    fail("txn write: " + st.toString());
                effects->emplace_back(k, v);
            }
        }
        return true;
    }

    // A transaction committed at the clock's next timestamp, at one given
    // to commit, or at one fixed first with timestampTransaction.
    void transaction(bool withReadTs) {
        Timestamp at;
        if (!beginTxn(withReadTs, &at))
            return;
        enum { kClock, kAtCommit, kFixedFirst } const how =
            static_cast<decltype(kClock)>(rng_() % 3);
        Timestamp chosen = kNoTimestamp;
        if (how == kFixedFirst) {
            chosen = aheadOfClock();
            Status t = s_->timestampTransaction(chosen);
            note(fmt::format("timestampTransaction {}: {}", chosen, t.toString()));
            if (t.code() == StatusCode::kInvalidArgument) {
                s_->abort().ignore();  // another commit passed it first
                return;
            }
            if (!t.ok())
                fail("timestampTransaction: " + t.toString());
        }
        std::vector<std::pair<int, Value>> effects;
        if (!readAndWrite(at, &effects))
            return;
        if (effects.empty()) {
            s_->commit().status().ignore();
            return;
        }
        pending(true, effects);
        if (how == kAtCommit)
            chosen = aheadOfClock();
        auto c = how == kAtCommit ? s_->commit(chosen) : s_->commit();
        if (c.status().code() == StatusCode::kWriteConflict ||
            (how == kAtCommit && c.status().code() == StatusCode::kInvalidArgument)) {
            note("txn commit refused: " + c.status().toString());
            notApplied();  // rolled back
            return;
        }
        if (!c.ok())
            fail("commit: " + c.status().toString());
        if (chosen != kNoTimestamp && c.value() != chosen)
            fail(fmt::format("commit at {} committed at {}", chosen, c.value()));
        note(fmt::format("txn commit at {}", c.value()));
        acknowledged(effects);
    }

    // A prepared transaction (two-phase commit, the worker its own
    // coordinator): its writes, prepare, then commit at or after the
    // prepare timestamp with a durable timestamp at or after that, or
    // abort. The parent learns its id before the prepare: a kill after the
    // prepare leaves it prepared, and the parent resolves it after the
    // reopen.
    void preparedTransaction() {
        if (Status b = s_->begin(); !b.ok())
            fail("begin: " + b.toString());
        std::vector<std::pair<int, Value>> effects;
        if (!readAndWrite(kNoTimestamp, &effects))
            return;
        if (effects.empty()) {
            s_->abort().ignore();
            return;
        }
        pending(true, effects);
        sh_.out.line(fmt::format("T {} {} {}", id_, opId_, s_->info().txnId));
        const Timestamp prepareTs = aheadOfClock();
        Status p = s_->prepare(prepareTs);
        note(fmt::format("prepare at {}: {}", prepareTs, p.toString()));
        if (p.code() == StatusCode::kInvalidArgument) {
            s_->abort().ignore();  // another commit passed it first
            return notApplied();
        }
        if (!p.ok())
            fail("prepare: " + p.toString());
        sh_.out.line(fmt::format("R {} {}", id_, opId_));  // it must survive a kill now
        if (rng_() % 4 == 0) {
            sh_.out.line(fmt::format("B {} {}", id_, opId_));  // aborting
            if (Status a = s_->abort(); !a.ok())
                fail("abort of a prepared transaction: " + a.toString());
            return notApplied();
        }
        const Timestamp commitTs = prepareTs + rng_() % 3, durableTs = commitTs + rng_() % 3;
        sh_.out.line(fmt::format("C {} {}", id_, opId_));  // committing
        auto c = s_->commit(commitTs, durableTs);
        if (!c.ok())
            fail(fmt::format("commit of a prepared transaction at {} (durable {}): {}", commitTs,
                             durableTs, c.status().toString()));
        note(fmt::format("prepared commit at {} durable {}", commitTs, durableTs));
        acknowledged(effects);
    }

    Timestamp pickReadTs() {
        const Timestamp oldest = sh_.engine->timestamps().oldest;
        const Timestamp low = std::max(oldest, minReadTs_);
        const Timestamp high = sh_.lastTs[id_].load();
        if (high < low)
            return kNoTimestamp;
        model_.prune(low);
        return low + rng_() % (high - low + 1);
    }

    void readAtTimestamp() {
        Timestamp at;
        if (!beginTxn(true, &at))
            return;
        checkScan(at);
        s_->commit().status().ignore();
    }

    void scanAll() { checkScan(kNoTimestamp); }

    // Every key of the collection against the model (inside the running
    // transaction's snapshot at `at`, or outside one: the newest).
    void checkScan(Timestamp at) {
        std::vector<Value> seen(kKeysPerWorker);
        Status st = s_->scan(ns_, {}, [&](std::string_view key, std::string_view value) {
            int k = std::atoi(std::string(key.substr(1)).c_str());
            if (k >= 0 && k < kKeysPerWorker)
                seen[k] = std::string(value);
            return true;
        });
        if (!st.ok())
            fail("scan: " + st.toString());
        for (int k = 0; k < kKeysPerWorker; ++k) {
            Value expect = at == kNoTimestamp ? model_.now(k) : model_.at(k, at);
            if (seen[k] != expect)
                fail(fmt::format("scan at {}: {} = {}, model {}", at, keyName(k), show(seen[k]),
                                 show(expect)));
        }
        note(fmt::format("scan at {} ok", at));
    }

    void rangeRemove() {
        const int a = int(rng_() % kKeysPerWorker), b = std::min(kKeysPerWorker - 1, a + 4);
        const std::string from = keyName(a), to = keyName(b);
        std::vector<std::pair<int, Value>> effects;
        for (int k = a; k <= b; ++k)
            if (model_.now(k))
                effects.emplace_back(k, Value{});
        const bool inTxn = rng_() % 2;
        note(fmt::format("removeRange {}..{} {}", from, to, inTxn ? "in a transaction" : "alone"));
        pending(inTxn, effects);
        if (inTxn && !s_->begin().ok())
            fail("begin");
        auto removed = s_->removeRange(ns_, {from, to});
        if (!removed.ok())
            fail("removeRange: " + removed.status().toString());
        if (removed.value() != effects.size())
            fail(fmt::format("removeRange removed {}, model {}", removed.value(), effects.size()));
        if (inTxn) {
            auto c = s_->commit();
            if (!c.ok())
                fail("commit: " + c.status().toString());
        }
        // Outside a transaction each key was its own commit: the newest is
        // the session's last; an older timestamp is not known, so reads
        // at timestamps start after it.
        acknowledged(effects);
        if (!inTxn && !effects.empty())
            minReadTs_ = std::max(minReadTs_, s_->lastCommitTimestamp() + 1);
    }

    void dropAndCreate() {
        std::vector<std::pair<int, Value>> effects;
        for (int k = 0; k < kKeysPerWorker; ++k)
            effects.emplace_back(k, Value{});
        note("drop and create");
        pending(true, effects);
        if (Status d = s_->dropCollection(ns_); !d.ok())
            fail("drop: " + d.toString());
        if (Status c = s_->createCollection(ns_); !c.ok())
            fail("create: " + c.toString());
        model_.reset(std::vector<Value>(kKeysPerWorker));
        minReadTs_ = sh_.engine->timestamps().clock + 1;
        sh_.out.line(fmt::format("A {} {}", id_, opId_));
    }

    Shared& sh_;
    const int id_;
    const std::string ns_;
    std::mt19937_64 rng_;
    std::unique_ptr<Session> s_;
    WorkerModel model_;
    Timestamp minReadTs_ = 0;
    uint64_t opId_ = 0;
    std::deque<std::string> recent_;
};

int runChild(const std::string& dir, int threads, uint64_t seed, int runMs) {
    auto opened = Engine::open(engineOptions(dir));
    if (!opened.ok()) {
        std::printf("FAIL open: %s\n", opened.status().toString().c_str());
        return 3;
    }
    auto engine = std::move(opened).value();
    Shared sh(threads);
    sh.engine = engine.get();
    std::vector<std::thread> workers;
    std::vector<std::unique_ptr<Worker>> all;
    // Every worker first, then the threads: a thread reading `all` while
    // it still grew would read a moved buffer.
    for (int w = 0; w < threads; ++w)
        all.push_back(std::make_unique<Worker>(sh, w, seed * 1000003 + uint64_t(w)));
    for (int w = 0; w < threads; ++w)
        workers.emplace_back([worker = all[w].get()] { worker->run(); });
    // Stable and oldest trail the slowest worker; sweeps and checkpoints.
    std::mt19937_64 rng(seed);
    const auto end = Clock::now() + std::chrono::milliseconds(runMs);
    while (Clock::now() < end) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2 + rng() % 10));
        Timestamp slowest = ~Timestamp{0};
        for (auto& t : sh.lastTs)
            slowest = std::min(slowest, t.load());
        switch (rng() % 4) {
            case 0:
                if (slowest != ~Timestamp{0} && slowest > 50) {
                    engine->setStableTimestamp(slowest - 20).ignore();
                    engine->setOldestTimestamp(slowest - 50).ignore();
                }
                break;
            case 1: engine->sweepHistory().ignore(); break;
            default:
                if (Status c = engine->checkpoint(); !c.ok() && c.code() != StatusCode::kBusy) {
                    sh.out.line("FAIL checkpoint: " + c.toString());
                    std::_Exit(3);
                }
        }
    }
    sh.stop = true;
    for (auto& t : workers)
        t.join();
    sh.out.line(fmt::format("END {}", sh.ops.load()));
    return 0;
}

// --------------------------------------------------------------- the parent

struct Pending {
    uint64_t op = 0;
    bool atomic = true;
    std::vector<std::pair<int, Value>> effects;
    TxnId preparedTxnId = kNoTxnId;  // a prepared transaction's id (the 'T' line)
    // How far a prepared transaction got: its prepare returned ('R'), then
    // its commit ('C') or abort ('B') began.
    enum class Prepared { kNo, kYes, kCommitting, kAborting } prepared = Prepared::kNo;
};

struct ParentWorker {
    std::vector<Value> confirmed = std::vector<Value>(kKeysPerWorker);
    std::optional<Pending> pending;
    std::deque<std::string> log;  // the round's lines, for a failure's report
};

// Applies one line of the child's report to the parent's model.
void absorb(const std::string& line, std::vector<ParentWorker>& model, uint64_t* acked) {
    std::istringstream in(line);
    char kind;
    int w;
    uint64_t op;
    in >> kind >> w >> op;
    if (w < 0 || w >= int(model.size()))
        return;
    ParentWorker& pw = model[w];
    pw.log.push_back(line);
    if (pw.log.size() > 30)
        pw.log.pop_front();
    if (kind == 'P') {
        Pending p;
        p.op = op;
        int atomic;
        size_t n;
        in >> atomic >> n;
        p.atomic = atomic != 0;
        for (size_t i = 0; i < n; ++i) {
            std::string kv;
            in >> kv;
            const auto eq = kv.find('=');
            const int k = std::atoi(kv.substr(0, eq).c_str());
            const std::string v = kv.substr(eq + 1);
            p.effects.emplace_back(k, v == "~" ? Value{} : Value{v});
        }
        pw.pending = std::move(p);
    } else if (kind == 'A' && pw.pending && pw.pending->op == op) {
        for (const auto& [k, v] : pw.pending->effects)
            pw.confirmed[k] = v;
        pw.pending.reset();
        ++*acked;
    } else if (kind == 'X' && pw.pending && pw.pending->op == op) {
        pw.pending.reset();
    } else if (kind == 'T' && pw.pending && pw.pending->op == op) {
        in >> pw.pending->preparedTxnId;
    } else if ((kind == 'R' || kind == 'C' || kind == 'B') && pw.pending &&
               pw.pending->op == op) {
        using P = Pending::Prepared;
        pw.pending->prepared = kind == 'R' ? P::kYes : kind == 'C' ? P::kCommitting : P::kAborting;
    }
}

// Plays the coordinator for the transactions a kill left prepared: each
// must be the operation its worker had in flight (by id), and is committed
// (at or a little after its prepare timestamp) or aborted at random. The
// operation then becomes acknowledged or not applied, so the check that
// follows is exact for it. A transaction whose prepare had returned must
// come back prepared unless its commit or abort had begun. "" when all is
// well.
std::string resolvePrepared(Engine& engine, std::vector<ParentWorker>& model, std::mt19937_64& rng,
                            uint64_t* resolved) {
    for (const PreparedTransaction& p : engine.preparedTransactions()) {
        if (!p.ownerless)
            return fmt::format("prepared transaction {} has an owner right after an open", p.txnId);
        ParentWorker* owner = nullptr;
        for (ParentWorker& pw : model)
            if (pw.pending && pw.pending->preparedTxnId == p.txnId)
                owner = &pw;
        if (!owner)
            return fmt::format("prepared transaction {} (prepared at {}) came back after the "
                               "reopen, but no operation in flight prepared it",
                               p.txnId, p.prepareTs);
        const bool commit = rng() % 2;
        owner->log.push_back(fmt::format("(parent) {} recovered prepared transaction {}",
                                         commit ? "commits" : "aborts", p.txnId));
        if (commit) {
            const Timestamp commitTs = p.prepareTs + rng() % 3;
            const Timestamp durable =
                std::max(commitTs + rng() % 3, engine.timestamps().stable + 1);
            if (Status c = engine.commitPrepared(p.txnId, commitTs, durable); !c.ok())
                return fmt::format("commitPrepared {} at {} (durable {}): {}", p.txnId,
                                   commitTs, durable, c.toString());
            for (const auto& [k, v] : owner->pending->effects)
                owner->confirmed[k] = v;
        } else if (Status a = engine.abortPrepared(p.txnId); !a.ok()) {
            return fmt::format("abortPrepared {}: {}", p.txnId, a.toString());
        }
        owner->pending.reset();
        ++*resolved;
    }
    if (!engine.preparedTransactions().empty())
        return "prepared transactions are left after every one was resolved";
    for (size_t w = 0; w < model.size(); ++w) {
        const auto& pending = model[w].pending;
        if (pending && pending->prepared == Pending::Prepared::kYes)
            return fmt::format("worker {}: operation {} was prepared (transaction {}) and did "
                               "not come back prepared after the reopen",
                               w, pending->op, pending->preparedTxnId);
    }
    return "";
}

// Reopens `dir`, resolves what the kill left prepared and checks every
// worker's keys; "" when all is well.
std::string verify(const std::string& dir, std::vector<ParentWorker>& model, std::mt19937_64& rng,
                   uint64_t* resolved) {
    auto opened = Engine::open(engineOptions(dir));
    if (!opened.ok())
        return "reopen failed: " + opened.status().toString();
    auto engine = std::move(opened).value();
    const uint64_t before = *resolved;
    if (std::string r = resolvePrepared(*engine, model, rng, resolved); !r.empty())
        return r;
    if (*resolved != before) {
        // What the coordinator decided must hold after another restart too.
        engine.reset();
        opened = Engine::open(engineOptions(dir));
        if (!opened.ok())
            return "reopen after resolving prepared transactions failed: " +
                   opened.status().toString();
        engine = std::move(opened).value();
    }
    auto session = std::move(engine->openSession()).value();
    for (size_t w = 0; w < model.size(); ++w) {
        ParentWorker& pw = model[w];
        std::vector<Value> got(kKeysPerWorker);
        for (int k = 0; k < kKeysPerWorker; ++k) {
            std::string v;
            Status st = session->get(collectionOf(int(w)), keyName(k), &v);
            if (st.ok())
                got[k] = v;
            else if (st.code() != StatusCode::kNotFound &&
                     st.code() != StatusCode::kNamespaceNotFound)
                return fmt::format("worker {}: get {}: {}", w, keyName(k), st.toString());
        }
        std::vector<Value> applied = pw.confirmed;
        if (pw.pending)
            for (const auto& [k, v] : pw.pending->effects)
                applied[k] = v;
        bool sameAsBefore = true, sameAsAfter = true;
        for (int k = 0; k < kKeysPerWorker; ++k) {
            sameAsBefore &= got[k] == pw.confirmed[k];
            sameAsAfter &= got[k] == applied[k];
            if (got[k] != pw.confirmed[k] && got[k] != applied[k])
                return fmt::format("worker {}: {} = {} after the reopen; acknowledged {}, in "
                                   "flight {}",
                                   w, keyName(k), show(got[k]), show(pw.confirmed[k]),
                                   show(applied[k]));
        }
        if (pw.pending && pw.pending->atomic && !sameAsBefore && !sameAsAfter)
            return fmt::format("worker {}: operation {} in flight came back in part", w,
                               pw.pending->op);
        // Prepared and not back as prepared: its commit or abort had begun.
        if (pw.pending && pw.pending->prepared == Pending::Prepared::kCommitting && !sameAsAfter)
            return fmt::format("worker {}: prepared operation {} was committing at the kill and "
                               "is neither prepared nor committed after the reopen",
                               w, pw.pending->op);
        if (pw.pending && pw.pending->prepared == Pending::Prepared::kAborting && !sameAsBefore)
            return fmt::format("worker {}: prepared operation {} was aborting at the kill and is "
                               "neither prepared nor rolled back after the reopen",
                               w, pw.pending->op);
        pw.confirmed = got;
        pw.pending.reset();
        pw.log.clear();
    }
    return "";
}

// The crash points of failpoint abortProcess (docs/failpoints.md) a round
// may arm, and how many passes of it to let go by first (at most): the
// commit points pass thousands of times a second, the checkpoint ones tens.
struct CrashPoint {
    const char* name;
    uint64_t maxSkip;
};
constexpr CrashPoint kCrashPoints[] = {
    {"beforeCommit", 3000},          {"afterOplogWrite", 2000},
    {"afterOplogAppend", 3000},      {"beforeCheckpointRename", 40},
    {"afterCheckpointRename", 40},
};

int runParent(const std::string& self, const std::string& dir, int threads, uint64_t seed,
              int seconds, int killMinMs, int killMaxMs) {
    std::filesystem::create_directories(dir);
    std::vector<ParentWorker> model(threads);
    std::mt19937_64 rng(seed);
    const auto end = Clock::now() + std::chrono::seconds(seconds);
    uint64_t rounds = 0, kills = 0, acked = 0, crashes = 0, resolved = 0;
    uint64_t crashesAt[std::size(kCrashPoints)] = {};
    std::fprintf(stderr, "torture: seed %llu, %d threads, %d s, data in %s\n",
                 static_cast<unsigned long long>(seed), threads, seconds, dir.c_str());
    while (Clock::now() < end) {
        ++rounds;
        const uint64_t roundSeed = seed * 7919 + rounds;
        const int killAfter = killMinMs + int(rng() % uint64_t(killMaxMs - killMinMs + 1));
        // One round in three also arms a crash point: the child may die
        // there, by its own SIGKILL, before the parent's kill.
        std::string failpoints;
        int crashPoint = -1;
        if (rng() % 3 == 0) {
            crashPoint = int(rng() % std::size(kCrashPoints));
            const CrashPoint& cp = kCrashPoints[crashPoint];
            failpoints = fmt::format("abortProcess skip {} key={}", rng() % cp.maxSkip, cp.name);
        }
        int fds[2];
        if (::pipe(fds) != 0)
            return 2;
        pid_t pid = ::fork();
        if (pid == 0) {
            ::dup2(fds[1], STDOUT_FILENO);
            if (!failpoints.empty())
                ::setenv("MVKV_FAILPOINTS", failpoints.c_str(), 1);
            else
                ::unsetenv("MVKV_FAILPOINTS");
            ::close(fds[0]);
            ::close(fds[1]);
            const std::string t = std::to_string(threads), s = std::to_string(roundSeed),
                              ms = std::to_string(killMaxMs * 2);
            const char* sync = syncMode == SyncMode::kNone    ? "none"
                               : syncMode == SyncMode::kWrite ? "write"
                                                              : "fsync";
            ::execl(self.c_str(), self.c_str(), "--child", "--dir", dir.c_str(), "--threads",
                    t.c_str(), "--seed", s.c_str(), "--run-ms", ms.c_str(), "--sync", sync,
                    nullptr);
            std::_Exit(127);
        }
        ::close(fds[1]);
        const auto killAt = Clock::now() + std::chrono::milliseconds(killAfter);
        std::string buffer, failure;
        bool killed = false, ended = false;
        char chunk[65536];
        ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
        while (true) {
            ssize_t n = ::read(fds[0], chunk, sizeof chunk);
            if (n > 0) {
                buffer.append(chunk, size_t(n));
                size_t nl;
                while ((nl = buffer.find('\n')) != std::string::npos) {
                    std::string line = buffer.substr(0, nl);
                    buffer.erase(0, nl + 1);
                    if (line.rfind("FAIL", 0) == 0)
                        failure = line;
                    else if (line.rfind("END", 0) == 0)
                        ended = true;
                    else
                        absorb(line, model, &acked);
                }
                continue;
            }
            if (n == 0)
                break;  // the child is gone
            if (!killed && Clock::now() >= killAt) {
                ::kill(pid, SIGKILL);
                killed = true;
                ++kills;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        ::close(fds[0]);
        int status = 0;
        ::waitpid(pid, &status, 0);
        const bool crashed = !killed && crashPoint >= 0 && WIFSIGNALED(status) &&
                             WTERMSIG(status) == SIGKILL;
        if (crashed) {
            ++crashes;
            ++crashesAt[crashPoint];
        }
        if (failure.empty() && !killed && !crashed &&
            !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
            failure = fmt::format("the child died: status {}", status);
        (void)ended;
        if (failure.empty()) {
            // Its own generator: how many draws resolving takes depends on
            // timing, and the round's kill times must not.
            std::mt19937_64 coordinator(roundSeed);
            failure = verify(dir, model, coordinator, &resolved);
        }
        if (!failure.empty()) {
            std::fprintf(stderr, "torture FAILED (seed %llu, round %llu, round seed %llu%s%s): %s\n",
                         static_cast<unsigned long long>(seed),
                         static_cast<unsigned long long>(rounds),
                         static_cast<unsigned long long>(roundSeed),
                         failpoints.empty() ? "" : ", MVKV_FAILPOINTS=", failpoints.c_str(),
                         failure.c_str());
            for (size_t w = 0; w < model.size(); ++w)
                for (const std::string& l : model[w].log)
                    std::fprintf(stderr, "  worker %zu: %s\n", w, l.c_str());
            std::fprintf(stderr, "replay: mvkv-torture --seed %llu --threads %d (data kept in %s)\n",
                         static_cast<unsigned long long>(seed), threads, dir.c_str());
            return 1;
        }
    }
    std::string atPoints;
    for (size_t i = 0; i < std::size(kCrashPoints); ++i)
        atPoints += fmt::format("{}{} {}", i ? ", " : "", kCrashPoints[i].name, crashesAt[i]);
    std::fprintf(stderr,
                 "torture: %llu rounds, %llu kills, %llu crashes at crash points (%s), %llu "
                 "prepared transactions resolved after a reopen, %llu acknowledged operations "
                 "checked, 0 failures\n",
                 static_cast<unsigned long long>(rounds), static_cast<unsigned long long>(kills),
                 static_cast<unsigned long long>(crashes), atPoints.c_str(),
                 static_cast<unsigned long long>(resolved), static_cast<unsigned long long>(acked));
    return 0;
}

}  // namespace
}  // namespace mvkv::torture

int main(int argc, char** argv) {
    CLI::App app{"mvkv-torture: random operations from several threads, kill -9 and reopen, "
                 "checked against a model (docs/reliability.md)"};
    std::string dir;
    int threads = 4, seconds = 60, runMs = 0, killMinMs = 100, killMaxMs = 1500;
    uint64_t seed = std::random_device{}();
    bool child = false;
    std::string sync = "fsync";
    app.add_option("--dir", dir, "data directory (made empty first; default: a new temp dir)");
    app.add_option("--threads", threads, "worker threads")->check(CLI::Range(1, 64));
    app.add_option("--seconds", seconds, "how long to run")->check(CLI::Range(1, 86400));
    app.add_option("--seed", seed, "the seed (printed; give it again to replay)");
    app.add_option("--kill-min-ms", killMinMs, "earliest kill after a start")->check(CLI::Range(1, 600000));
    app.add_option("--kill-max-ms", killMaxMs, "latest kill after a start")->check(CLI::Range(1, 600000));
    app.add_option("--sync", sync, "commit sync mode: fsync (default), write, or none (which loses "
                   "acknowledged writes at a kill: the check then fails, as it should)")
        ->check(CLI::IsMember({"none", "write", "fsync"}));
    app.add_flag("--child", child, "internal: run the workers (the parent starts it)");
    app.add_option("--run-ms", runMs, "internal: the child's run time");
    CLI11_PARSE(app, argc, argv);
    mvkv::torture::syncMode = sync == "none"    ? mvkv::SyncMode::kNone
                              : sync == "write" ? mvkv::SyncMode::kWrite
                                                : mvkv::SyncMode::kFsync;
    if (child)
        return mvkv::torture::runChild(dir, threads, seed, runMs);
    if (killMaxMs < killMinMs)
        killMaxMs = killMinMs;
    if (dir.empty()) {
        char tmpl[] = "/tmp/mvkv-torture-XXXXXX";
        if (!::mkdtemp(tmpl))
            return 2;
        dir = tmpl;
    } else {
        std::filesystem::remove_all(dir);
    }
    std::string self = std::filesystem::canonical("/proc/self/exe").string();
    int rc = mvkv::torture::runParent(self, dir, threads, seed, seconds, killMinMs, killMaxMs);
    if (rc == 0)
        std::filesystem::remove_all(dir);
    return rc;
}
