// Workload "kv": point reads and single-key overwrites per second on --keys
// keys (default 1M; --key-size 16 and --value-size 100 bytes), mvkv next to
// LMDB on the same data in the same run (issue 3, "Figures to report").
//
// Setup (not timed), once per run of the workload, of only the stores the
// selected --cases use (so `--cases mvkv_read` profiles mvkv alone):
//   - keys: key(i) for i in [0, keys) is the big-endian splitmix64(i) (a
//     bijection, so unique; its order is random, unlike i's) followed by
//     big-endian i, padded with zeros to --key-size. Both engines load the
//     same keys in the same order (i ascending = random key order), with the
//     same values.
//   - LMDB: a fresh env in a fresh directory under temp_directory_path()
//     ($TMPDIR or /tmp), opened MDB_NOSYNC | MDB_NOMETASYNC | MDB_NORDAHEAD,
//     mapsize generous, loaded in one write transaction. Removed at the end.
//   - mvkv: a fresh in-memory Engine with one collection "bench.kv", loaded
//     from one session in explicit transactions of kLoadBatch puts.
//
// Cases (every one measured at each --threads count; each thread has its own
// LMDB txn handle / mvkv Session and its own splitmix64 RNG):
//   lmdb_read      a uniformly random existing key: mdb_txn_renew (of a read
//                  txn made once per thread and mdb_txn_reset after each op,
//                  LMDB's documented fast path for read-only transactions) +
//                  mdb_get + copy of the value into a reused std::string +
//                  mdb_txn_reset.
//   mvkv_read      session->get(ns, key): implicit, one transaction (and IS
//                  locks) per op; returns the value as a new std::string.
//   mvkv_read_txn  begin() + get() + commit() per op: an explicit read txn.
//   lmdb_write     overwrite a random existing key with a fresh value:
//                  mdb_txn_begin + mdb_put + mdb_txn_commit per op.
//   mvkv_write     session->put(ns, key, value): implicit, one transaction
//                  (and IX locks) per op.
// The fresh value is the thread's value buffer with its first 8 bytes set to
// a per-thread counter.
//
// Metrics: vs_lmdb = mvkv ops/s / LMDB ops/s of the matching case (reads vs
// lmdb_read, writes vs lmdb_write) at the same thread count: the target
// check. cpu_vs_lmdb = LMDB's CPU-ns per op / mvkv's (ns/op x cpu%): it stays
// meaningful on a loaded machine where the cases got different CPU shares,
// but it is cost per op, not throughput (a thread asleep on LMDB's writer
// mutex costs nothing). scaling (> 1 thread) = ops/s / ops/s at 1 thread.
// peak_rss_mb = getrusage ru_maxrss after the case (process-wide and
// monotonic: it includes both loaded data sets and LMDB's mapped pages). The
// notes under the table check issue 3's targets at every thread count: mvkv
// reads >= 1x LMDB, writes >= 3x LMDB.
//
// Read the numbers with these caveats:
//   - Durability differs. mvkv keeps everything in memory and writes no
//     files yet (no oplog / checkpoint). LMDB with MDB_NOSYNC still writes
//     every commit into its file's pages (page cache, copy-on-write of the
//     leaf-to-root path, free-list upkeep), it just never fsyncs.
//   - lmdb_write is bound by those writes: without MDB_WRITEMAP each commit
//     pwrite()s its dirty pages (~3/4 of its time in the kernel's buffered
//     write path). With MDB_WRITEMAP it ran ~8x faster on the dev VM, i.e.
//     about as fast as mvkv_write: the write target depends on that flag.
//   - mvkv's overwrites grow update chains: every write adds a version that
//     is never reclaimed until the history store lands, so mvkv_write (and
//     the memory figures) measure a store that only grows. Cases run in the
//     order above for all thread counts (so every read case reads the freshly
//     loaded data, before any overwrite); the table is sorted by thread count.
//   - Both copy the value into a reused buffer: mvkv through
//     get(ns, key, &buffer), LMDB from the pointer into its map.
#include <fmt/format.h>
#include <lmdb.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "bench/harness.h"
#include "bench/workload.h"
#include "engine/engine.h"
#include "engine/session.h"

namespace mvkv::bench {
namespace {

using engine::Engine;
using engine::Session;

constexpr std::string_view kWorkload = "kv";
constexpr std::string_view kNs = "bench.kv";
constexpr uint64_t kLoadBatch = 1000;
constexpr double kTargetRead = 1.0;
constexpr double kTargetWrite = 3.0;

uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/// Per-thread generator of uniformly random key indexes in [0, n).
class Rng {
  public:
    explicit Rng(uint64_t seed) : state_(seed) {}
    uint64_t next() {
        state_ += 0x9e3779b97f4a7c15ULL;
        uint64_t z = state_;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    /// Lemire's multiply-shift: no division, no modulo bias worth the name.
    uint64_t below(uint64_t n) {
        __extension__ using U128 = unsigned __int128;
        return static_cast<uint64_t>((U128{next()} * n) >> 64);
    }

  private:
    uint64_t state_;
};

void putBigEndian(char* out, uint64_t v) {
    for (int i = 7; i >= 0; --i) {
        out[i] = static_cast<char>(v & 0xff);
        v >>= 8;
    }
}

/// key(i) into `out` (keySize bytes, keySize >= 8).
void makeKey(char* out, size_t keySize, uint64_t index) {
    putBigEndian(out, splitmix64(index));
    if (keySize >= 16) {
        putBigEndian(out + 8, index);
        std::memset(out + 16, 0, keySize - 16);
    } else {
        char tail[8];
        putBigEndian(tail, index);
        std::memcpy(out + 8, tail + 8 - (keySize - 8), keySize - 8);
    }
}

/// The value of a key: its index in the first 8 bytes, then a fixed pattern.
void makeValue(std::string& out, uint64_t stamp) {
    char head[8];
    putBigEndian(head, stamp);
    std::memcpy(out.data(), head, std::min<size_t>(8, out.size()));
}

std::string filledValue(size_t size) {
    std::string v(size, '\0');
    for (size_t i = 0; i < size; ++i)
        v[i] = static_cast<char>('a' + i % 26);
    return v;
}

double peakRssMb() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return double(ru.ru_maxrss) / 1024.0;  // Linux: KiB
}

double currentRssMb() {
    FILE* f = std::fopen("/proc/self/statm", "r");
    if (f == nullptr)
        return -1;
    unsigned long pages = 0;
    unsigned long resident = 0;
    int n = std::fscanf(f, "%lu %lu", &pages, &resident);
    std::fclose(f);
    if (n != 2)
        return -1;
    return double(resident) * double(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

void check(int rc, const char* what) {
    if (rc != MDB_SUCCESS)
        throw std::runtime_error(fmt::format("{}: {}", what, mdb_strerror(rc)));
}

void check(const Status& s, const char* what) {
    if (!s.ok())
        throw std::runtime_error(fmt::format("{}: {}", what, s.toString()));
}

// ---- the two data sets ----

class LmdbStore {
  public:
    explicit LmdbStore(const BenchConfig& config) {
        std::error_code ec;
        std::filesystem::path base = std::filesystem::temp_directory_path(ec);
        if (ec)
            base = "/tmp";
        std::string templ = (base / "mvkv-bench-kv-XXXXXX").string();
        if (mkdtemp(templ.data()) == nullptr)
            throw std::runtime_error(fmt::format("mkdtemp {}: {}", templ, std::strerror(errno)));
        dir_ = templ;
        check(mdb_env_create(&env_), "mdb_env_create");
        size_t perKey = config.keySize + config.valueSize + 64;
        size_t mapSize = std::max<size_t>(size_t{1} << 30, config.keys * perKey * 8);
        check(mdb_env_set_mapsize(env_, mapSize), "mdb_env_set_mapsize");
        check(mdb_env_set_maxreaders(env_, 256), "mdb_env_set_maxreaders");
        check(mdb_env_open(env_, dir_.c_str(), MDB_NOSYNC | MDB_NOMETASYNC | MDB_NORDAHEAD, 0644),
              "mdb_env_open");
        MDB_txn* txn = nullptr;
        check(mdb_txn_begin(env_, nullptr, 0, &txn), "mdb_txn_begin");
        int rc = mdb_dbi_open(txn, nullptr, 0, &dbi_);
        if (rc != MDB_SUCCESS) {
            mdb_txn_abort(txn);
            check(rc, "mdb_dbi_open");
        }
        check(mdb_txn_commit(txn), "mdb_txn_commit");
    }
    ~LmdbStore() {
        if (env_ != nullptr)
            mdb_env_close(env_);
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    LmdbStore(const LmdbStore&) = delete;
    LmdbStore& operator=(const LmdbStore&) = delete;

    void load(const BenchConfig& config) {
        MDB_txn* txn = nullptr;
        check(mdb_txn_begin(env_, nullptr, 0, &txn), "mdb_txn_begin");
        std::string key(config.keySize, '\0');
        std::string value = filledValue(config.valueSize);
        for (uint64_t i = 0; i < config.keys; ++i) {
            makeKey(key.data(), key.size(), i);
            makeValue(value, i);
            MDB_val k{key.size(), key.data()};
            MDB_val v{value.size(), value.data()};
            int rc = mdb_put(txn, dbi_, &k, &v, 0);
            if (rc != MDB_SUCCESS) {
                mdb_txn_abort(txn);
                check(rc, "mdb_put (load)");
            }
        }
        check(mdb_txn_commit(txn), "mdb_txn_commit (load)");
    }

    /// Size of the data file, in MB.
    double fileMb() const {
        std::error_code ec;
        auto bytes = std::filesystem::file_size(std::filesystem::path(dir_) / "data.mdb", ec);
        return ec ? -1 : double(bytes) / (1024.0 * 1024.0);
    }

    MDB_env* env() const { return env_; }
    MDB_dbi dbi() const { return dbi_; }

  private:
    std::string dir_;
    MDB_env* env_ = nullptr;
    MDB_dbi dbi_ = 0;
};

class MvkvStore {
  public:
    MvkvStore() {
        auto opened = Engine::open({});
        check(opened.status(), "Engine::open");
        engine_ = std::move(opened).value();
        auto session = engine_->openSession();
        check(session->createCollection(kNs), "createCollection");
    }
    ~MvkvStore() = default;
    MvkvStore(const MvkvStore&) = delete;
    MvkvStore& operator=(const MvkvStore&) = delete;

    void load(const BenchConfig& config) {
        auto session = engine_->openSession();
        std::string key(config.keySize, '\0');
        std::string value = filledValue(config.valueSize);
        for (uint64_t begin = 0; begin < config.keys; begin += kLoadBatch) {
            uint64_t end = std::min(config.keys, begin + kLoadBatch);
            check(session->begin(), "begin (load)");
            for (uint64_t i = begin; i < end; ++i) {
                makeKey(key.data(), key.size(), i);
                makeValue(value, i);
                check(session->put(kNs, key, value), "put (load)");
            }
            check(session->commit(), "commit (load)");
        }
    }

    Engine& engine() { return *engine_; }

  private:
    std::unique_ptr<Engine> engine_;
};

// ---- the cases ----

struct Env {
    const BenchConfig& config;
    LmdbStore* lmdbStore;  // null when no LMDB case was selected
    MvkvStore* mvkvStore;  // null when no mvkv case was selected
    LmdbStore& lmdb() { return *lmdbStore; }
    MvkvStore& mvkv() { return *mvkvStore; }
};

uint64_t seedFor(int threadIndex, uint64_t caseSalt) {
    return splitmix64(0x6b76'0000ULL + caseSalt * 1024 + static_cast<uint64_t>(threadIndex));
}

Measurement runLmdbRead(Env& env, int threads) {
    // One reader txn per thread, made on that thread (LMDB binds reader slots
    // to threads), reset after each op and renewed before the next.
    struct Reader {
        MDB_env* lmdbEnv;
        MDB_dbi dbi;
        MDB_txn* txn = nullptr;
        uint64_t keys;
        Rng rng;
        std::string key;
        std::string value;
        Reader(MDB_env* e, MDB_dbi d, uint64_t n, size_t keySize, uint64_t seed)
            : lmdbEnv(e), dbi(d), keys(n), rng(seed), key(keySize, '\0') {
            check(mdb_txn_begin(lmdbEnv, nullptr, MDB_RDONLY, &txn), "mdb_txn_begin(RDONLY)");
            mdb_txn_reset(txn);
        }
        ~Reader() { mdb_txn_abort(txn); }
        Reader(const Reader&) = delete;
        Reader& operator=(const Reader&) = delete;
        void op() {
            makeKey(key.data(), key.size(), rng.below(keys));
            check(mdb_txn_renew(txn), "mdb_txn_renew");
            MDB_val k{key.size(), key.data()};
            MDB_val v{};
            int rc = mdb_get(txn, dbi, &k, &v);
            if (rc == MDB_SUCCESS)
                value.assign(static_cast<const char*>(v.mv_data), v.mv_size);
            mdb_txn_reset(txn);
            check(rc, "mdb_get");
        }
    };
    return repeatRuns(env.config.repeat, [&] {
        return runParallel(threads, limitsFor(env.config), [&](int index) {
            auto reader =
                std::make_unique<Reader>(env.lmdb().env(), env.lmdb().dbi(), env.config.keys,
                                         env.config.keySize, seedFor(index, 1));
            return [reader = std::move(reader)] { reader->op(); };
        });
    });
}

Measurement runLmdbWrite(Env& env, int threads) {
    struct Writer {
        MDB_env* lmdbEnv;
        MDB_dbi dbi;
        uint64_t keys;
        Rng rng;
        uint64_t stamp;
        std::string key;
        std::string value;
        void op() {
            makeKey(key.data(), key.size(), rng.below(keys));
            makeValue(value, ++stamp);
            MDB_txn* txn = nullptr;
            check(mdb_txn_begin(lmdbEnv, nullptr, 0, &txn), "mdb_txn_begin");
            MDB_val k{key.size(), key.data()};
            MDB_val v{value.size(), value.data()};
            int rc = mdb_put(txn, dbi, &k, &v, 0);
            if (rc != MDB_SUCCESS) {
                mdb_txn_abort(txn);
                check(rc, "mdb_put");
            }
            check(mdb_txn_commit(txn), "mdb_txn_commit");
        }
    };
    return repeatRuns(env.config.repeat, [&] {
        return runParallel(threads, limitsFor(env.config), [&](int index) {
            auto writer = std::make_unique<Writer>(
                Writer{env.lmdb().env(), env.lmdb().dbi(), env.config.keys, Rng(seedFor(index, 2)),
                       uint64_t{static_cast<uint64_t>(index) << 48},
                       std::string(env.config.keySize, '\0'), filledValue(env.config.valueSize)});
            return [writer = std::move(writer)] { writer->op(); };
        });
    });
}

struct MvkvWorker {
    std::unique_ptr<Session> session;
    uint64_t keys;
    Rng rng;
    uint64_t stamp;
    std::string key;
    std::string value;
    std::string readBuffer;  // reused, as lmdb_read reuses its buffer

    void read() {
        makeKey(key.data(), key.size(), rng.below(keys));
        check(session->get(kNs, key, &readBuffer), "get");
        if (readBuffer.size() != value.size())
            throw std::runtime_error("get: value of the wrong size");
    }
    void readInTxn() {
        check(session->begin(), "begin");
        read();
        check(session->commit(), "commit");
    }
    void write() {
        makeKey(key.data(), key.size(), rng.below(keys));
        makeValue(value, ++stamp);
        check(session->put(kNs, key, value), "put");
    }
};

template <class Op>
Measurement runMvkv(Env& env, int threads, uint64_t salt, Op op) {
    return repeatRuns(env.config.repeat, [&] {
        return runParallel(threads, limitsFor(env.config), [&](int index) {
            auto worker = std::make_unique<MvkvWorker>(MvkvWorker{
                env.mvkv().engine().openSession(), env.config.keys, Rng(seedFor(index, salt)),
                uint64_t{static_cast<uint64_t>(index) << 48}, std::string(env.config.keySize, '\0'),
                filledValue(env.config.valueSize), std::string()});
            return [worker = std::move(worker), op] { ((*worker).*op)(); };
        });
    });
}

struct Case {
    std::string_view name;
    std::string_view baseline;  // LMDB case it is compared with; empty for LMDB cases
    Measurement (*run)(Env&, int threads);
};

const Case kCases[] = {
    {"lmdb_read", {}, runLmdbRead},
    {"mvkv_read", "lmdb_read", [](Env& e, int t) { return runMvkv(e, t, 3, &MvkvWorker::read); }},
    {"mvkv_read_txn", "lmdb_read",
     [](Env& e, int t) { return runMvkv(e, t, 4, &MvkvWorker::readInTxn); }},
    {"lmdb_write", {}, runLmdbWrite},
    {"mvkv_write", "lmdb_write",
     [](Env& e, int t) { return runMvkv(e, t, 5, &MvkvWorker::write); }},
};

std::string_view baselineOf(std::string_view caseName) {
    for (const Case& c : kCases) {
        if (c.name == caseName)
            return c.baseline;
    }
    return {};
}

/// CPU time per op of one thread: ns/op scaled by the share of the wall
/// time the thread was on a CPU (-1 when not measured).
double cpuNsPerOp(const ResultRow& r) {
    return r.cpuPercent > 0 ? r.nsPerOp * r.cpuPercent / 100.0 : -1;
}

void addVsLmdb(std::vector<ResultRow>& rows) {
    for (ResultRow& r : rows) {
        std::string_view base = baselineOf(r.caseName);
        if (base.empty() || !r.error.empty())
            continue;
        const ResultRow* b = findRow(rows, base, r.threads);
        if (b == nullptr)
            continue;
        if (b->opsPerSec > 0)
            r.setMetric("vs_lmdb", r.opsPerSec / b->opsPerSec, "x");
        if (cpuNsPerOp(*b) > 0 && cpuNsPerOp(r) > 0)
            r.setMetric("cpu_vs_lmdb", cpuNsPerOp(*b) / cpuNsPerOp(r), "x");
    }
}

std::vector<std::string> targetNotes(const std::vector<ResultRow>& rows,
                                     const std::vector<int>& threads) {
    std::vector<std::string> notes;
    auto verdict = [&](std::string_view mvkvCase, std::string_view lmdbCase, int t, double goal,
                       std::string_view what) {
        const ResultRow* m = findRow(rows, mvkvCase, t);
        const ResultRow* l = findRow(rows, lmdbCase, t);
        if (m == nullptr || l == nullptr || l->opsPerSec <= 0)
            return;
        double ratio = m->opsPerSec / l->opsPerSec;
        std::string cpu;
        if (auto c = m->metric("cpu_vs_lmdb"))
            cpu = fmt::format("; per CPU-ns/op {:.2f}x", *c);
        notes.push_back(fmt::format(
            "target: {} at {} thread{}: mvkv {:.0f} ops/s vs LMDB {:.0f} ops/s = {:.2f}x{} (goal "
            ">= {:.0f}x): {}",
            what, t, t == 1 ? "" : "s", m->opsPerSec, l->opsPerSec, ratio, cpu, goal,
            ratio >= goal ? "met" : "NOT met"));
    };
    for (int t : threads) {
        verdict("mvkv_read", "lmdb_read", t, kTargetRead, "point reads");
        verdict("mvkv_write", "lmdb_write", t, kTargetWrite, "single-key writes");
    }
    return notes;
}

WorkloadResult runKv(const BenchConfig& config) {
    WorkloadResult result;
    auto failAll = [&](const std::string& why) {
        for (int threads : config.threads) {
            for (const Case& c : kCases) {
                if (!config.wantCase(c.name))
                    continue;
                ResultRow row;
                row.workload = std::string(kWorkload);
                row.caseName = std::string(c.name);
                row.threads = threads;
                row.error = why;
                result.rows.push_back(std::move(row));
            }
        }
    };
    if (config.keySize < 8 || config.keySize > 511 || config.valueSize < 8 || config.keys == 0) {
        failAll("kv needs --keys >= 1, --key-size in [8, 511], --value-size >= 8");
        return result;
    }

    // Load only the stores the selected cases use (--cases mvkv_read profiles
    // mvkv alone, without LMDB's load in the profile).
    bool wantLmdb = false;
    bool wantMvkv = false;
    for (const Case& c : kCases) {
        if (config.wantCase(c.name))
            (c.name.starts_with("lmdb") ? wantLmdb : wantMvkv) = true;
    }
    std::unique_ptr<LmdbStore> lmdb;
    std::unique_ptr<MvkvStore> mvkv;
    std::vector<std::string> setupNotes;
    try {
        using Clock = std::chrono::steady_clock;
        auto secs = [](auto d) { return std::chrono::duration<double>(d).count(); };
        std::string loads;
        if (wantLmdb) {
            double rss0 = currentRssMb();
            auto t0 = Clock::now();
            lmdb = std::make_unique<LmdbStore>(config);
            lmdb->load(config);
            loads +=
                fmt::format("; LMDB load {:.2f} s (one txn; data.mdb {:.0f} MB, RSS +{:.0f} MB)",
                            secs(Clock::now() - t0), lmdb->fileMb(), currentRssMb() - rss0);
        }
        if (wantMvkv) {
            double rss0 = currentRssMb();
            auto t0 = Clock::now();
            mvkv = std::make_unique<MvkvStore>();
            mvkv->load(config);
            loads += fmt::format("; mvkv load {:.2f} s (txns of {} puts; RSS +{:.0f} MB)",
                                 secs(Clock::now() - t0), kLoadBatch, currentRssMb() - rss0);
        }
        setupNotes.push_back(
            fmt::format("data: {} keys of {} B, values of {} B, loaded in random "
                        "key order{}",
                        config.keys, config.keySize, config.valueSize, loads));
    } catch (const std::exception& e) {
        failAll(std::string("setup: ") + e.what());
        return result;
    }

    Env env{config, lmdb.get(), mvkv.get()};
    // Cases outer, threads inner: every read case runs before any overwrite.
    for (const Case& c : kCases) {
        if (!config.wantCase(c.name))
            continue;
        for (int threads : config.threads) {
            Measurement m;
            try {
                m = c.run(env, threads);
            } catch (const std::exception& e) {
                m.error = e.what();
            }
            ResultRow row = toRow(kWorkload, c.name, threads, m);
            if (row.error.empty())
                row.setMetric("peak_rss_mb", peakRssMb());
            result.rows.push_back(std::move(row));
        }
    }
    std::stable_sort(result.rows.begin(), result.rows.end(),
                     [](const ResultRow& a, const ResultRow& b) { return a.threads < b.threads; });
    addVsLmdb(result.rows);
    addScaling(result.rows);
    // vs_lmdb first, then scaling, then memory: move peak_rss_mb last.
    for (ResultRow& r : result.rows) {
        std::stable_partition(r.metrics.begin(), r.metrics.end(),
                              [](const Metric& m) { return m.name != "peak_rss_mb"; });
    }

    result.notes = targetNotes(result.rows, config.threads);
    for (std::string& n : setupNotes)
        result.notes.push_back(std::move(n));
    if (mvkv) {
        engine::EngineStats stats = mvkv->engine().stats();
        result.notes.push_back(
            fmt::format("mvkv after the run: update chains max {} / mean {:.2f} versions per key "
                        "(overwrites are kept until the history store lands)",
                        stats.maxChainLength, stats.meanChainLength));
    }
    if (lmdb)
        result.notes.push_back(
            fmt::format("LMDB after the run: data.mdb {:.0f} MB", lmdb->fileMb()));
    result.notes.push_back(
        "caveat: mvkv is in memory with no durability yet; LMDB (MDB_NOSYNC) still writes every "
        "commit to its mmap'd file (page cache, no fsync)");
    return result;
}

}  // namespace

void registerKvWorkload(WorkloadRegistry& registry) {
    Workload w;
    w.name = std::string(kWorkload);
    w.description =
        "point reads / single-key overwrites per second on --keys keys, mvkv vs LMDB (NOSYNC)";
    for (const Case& c : kCases)
        w.caseNames.emplace_back(c.name);
    w.run = runKv;
    registry.add(std::move(w));
}

}  // namespace mvkv::bench
