// db_bench's workloads (LevelDB's names and meanings), on every engine.
//
//   fillseq          empty store; N threads write all --keys keys, each its
//                    own contiguous range in key order (one autocommit put each)
//   fillrandom       the same keys in a random order
//   overwrite        put to a random existing key (uniform)
//   readrandom       get of a random existing key (uniform); the value's
//                    stamp is checked
//   readmissing      get of a random key that was never loaded (NotFound)
//   readseq          one full scan of the store per op (entries_per_sec too)
//   seekrandom       seek to a random existing key and read 10 entries
//   deleterandom     remove of a random loaded key (found or not)
//   readwhilewriting readrandom on the timed threads while one more thread
//                    overwrites random keys as fast as it can (LMDB's
//                    showcase: readers never wait for the writer)
// The fills ignore --duration and --ops: each thread writes keys / threads
// keys (the remainder is left out), and there is no warm-up.
#include <fmt/format.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "storage_workload.h"

namespace mvkv::bench {
namespace {

// Overwrites carry stamps with the top bit set, so they never pass for a
// freshly loaded value (whose stamp is its index).
constexpr uint64_t kOverwriteStamp = uint64_t{1} << 63;

/// A thread's reusable key and value buffers.
struct Buffers {
    explicit Buffers(const StorageContext& ctx) : key(ctx.keys.size(), '\0') {}
    std::string key;
    std::string value;
};

StorageRun fill(StorageContext& ctx, int threads, bool random) {
    uint64_t share = ctx.config.keys / uint64_t(threads);
    if (share == 0)
        throw std::runtime_error(fmt::format("--keys {} is fewer than the {} threads",
                                             ctx.config.keys, threads));
    auto order = std::make_shared<std::vector<uint64_t>>();
    if (random)
        *order = shuffledIndexes(share * uint64_t(threads), ctx.seed(-1));
    ctx.limits.opsPerThread = share;
    ctx.limits.warmupOps = 0;
    StorageRun run;
    run.measurement = timeStoreOps(ctx, threads, [&](int t, StoreThread& h) {
        return [&h, &ctx, order, b = std::make_shared<Buffers>(ctx),
                next = uint64_t(t) * share]() mutable {
            uint64_t index = order->empty() ? next : (*order)[next];
            ++next;
            ctx.keys.make(b->key.data(), index);
            ctx.values.make(b->value, index);
            check(h.put(b->key, b->value), "put");
        };
    });
    ctx.loadedKeys = share * uint64_t(threads);
    return run;
}

/// Reads a random loaded key and checks it holds its loaded value
/// (`allowOverwritten`: or an overwrite's).
auto randomReader(StorageContext& ctx, int t, StoreThread& h, bool allowOverwritten) {
    return [&h, &ctx, allowOverwritten, b = std::make_shared<Buffers>(ctx),
            rng = Rng(ctx.seed(t))]() mutable {
        uint64_t index = rng.below(ctx.loadedKeys);
        ctx.keys.make(b->key.data(), index);
        check(h.get(b->key, &b->value), "get");
        uint64_t stamp = ValueFormat::stampOf(b->value);
        if (stamp != index && !(allowOverwritten && (stamp & kOverwriteStamp) != 0)) {
            throw std::runtime_error(
                fmt::format("get of key {} returned the value stamped {}", index, stamp));
        }
    };
}

/// Overwrites a random loaded key with a fresh stamp.
auto randomOverwriter(StorageContext& ctx, uint64_t seed, StoreThread& h) {
    return [&h, &ctx, b = std::make_shared<Buffers>(ctx), rng = Rng(seed),
            n = uint64_t{0}]() mutable {
        ctx.keys.make(b->key.data(), rng.below(ctx.loadedKeys));
        ctx.values.make(b->value, kOverwriteStamp | ++n);
        check(h.put(b->key, b->value), "put");
    };
}

StorageRun readRandom(StorageContext& ctx, int threads) {
    return {timeStoreOps(ctx, threads, [&](int t, StoreThread& h) {
                return randomReader(ctx, t, h, false);
            }),
            {}};
}

StorageRun readMissing(StorageContext& ctx, int threads) {
    return {timeStoreOps(ctx, threads,
                         [&](int t, StoreThread& h) {
                             return [&h, &ctx, b = std::make_shared<Buffers>(ctx),
                                     rng = Rng(ctx.seed(t))]() mutable {
                                 ctx.keys.makeMissing(b->key.data(), rng.below(ctx.loadedKeys));
                                 Status s = h.get(b->key, &b->value);
                                 if (s.code() != StatusCode::kNotFound) {
                                     throw std::runtime_error(fmt::format(
                                         "get of a missing key: expected NotFound, got {}",
                                         s.toString()));
                                 }
                             };
                         }),
            {}};
}

StorageRun overwrite(StorageContext& ctx, int threads) {
    return {timeStoreOps(ctx, threads,
                         [&](int t, StoreThread& h) {
                             return randomOverwriter(ctx, ctx.seed(t), h);
                         }),
            {}};
}

StorageRun readSeq(StorageContext& ctx, int threads) {
    ctx.limits.warmupOps = 1;  // an op is a whole scan: one warms the caches
    StorageRun run;
    run.measurement = timeStoreOps(ctx, threads, [&](int, StoreThread& h) {
        return [&h, &ctx]() {
            ScanResult r;
            check(h.scan({}, UINT64_MAX, &r), "scan");
            if (r.count != ctx.loadedKeys) {
                throw std::runtime_error(
                    fmt::format("a full scan saw {} entries of {}", r.count, ctx.loadedKeys));
            }
        };
    });
    const Measurement& m = run.measurement;
    if (m.wallSeconds > 0) {
        run.metrics.push_back(
            {"entries_per_sec", double(m.totalOps) * double(ctx.loadedKeys) / m.wallSeconds, ""});
    }
    return run;
}

StorageRun seekRandom(StorageContext& ctx, int threads) {
    constexpr uint64_t kNexts = 10;
    return {timeStoreOps(ctx, threads,
                         [&](int t, StoreThread& h) {
                             return [&h, &ctx, b = std::make_shared<Buffers>(ctx),
                                     rng = Rng(ctx.seed(t))]() mutable {
                                 ctx.keys.make(b->key.data(), rng.below(ctx.loadedKeys));
                                 ScanResult r;
                                 check(h.scan(b->key, kNexts, &r), "seek");
                                 if (r.count == 0)
                                     throw std::runtime_error("seek to a loaded key found nothing");
                             };
                         }),
            {}};
}

StorageRun deleteRandom(StorageContext& ctx, int threads) {
    // Counted over every call, warm-up included (it deletes too).
    auto calls = std::make_shared<std::atomic<uint64_t>>(0);
    auto found = std::make_shared<std::atomic<uint64_t>>(0);
    StorageRun run;
    run.measurement = timeStoreOps(ctx, threads, [&](int t, StoreThread& h) {
        return [&h, &ctx, myCalls = std::make_shared<LocalTally>(calls),
                myFound = std::make_shared<LocalTally>(found), b = std::make_shared<Buffers>(ctx),
                rng = Rng(ctx.seed(t))]() mutable {
            ctx.keys.make(b->key.data(), rng.below(ctx.loadedKeys));
            Status s = h.remove(b->key);
            myCalls->add();
            if (s.ok())
                myFound->add();
            else if (s.code() != StatusCode::kNotFound)
                check(s, "remove");
        };
    });
    if (calls->load() > 0)
        run.metrics.push_back({"found_pct", 100.0 * double(found->load()) / double(calls->load()), ""});
    return run;
}

StorageRun readWhileWriting(StorageContext& ctx, int threads) {
    std::function<void()> write;  // the writer thread's overwrite op, made on it
    BackgroundThread writer(
        ctx, {.setup = [&](StoreThread& h) { write = randomOverwriter(ctx, ctx.seed(1000), h); },
              .step = [&](StoreThread&) { write(); },
              .teardown = {}});
    StorageRun run;
    run.measurement = timeStoreOps(
        ctx, threads, [&](int t, StoreThread& h) { return randomReader(ctx, t, h, true); });
    BackgroundThread::Result w = writer.stop();
    run.metrics.push_back({"writes_per_sec", w.stepsPerSec(), ""});
    return run;
}

}  // namespace

std::vector<StorageSpec> basicStorageSpecs() {
    return {
        {"fillseq", "empty store, every key written once in key order (autocommit puts)", false,
         [](StorageContext& c, int t) { return fill(c, t, false); }},
        {"fillrandom", "empty store, every key written once in random order", false,
         [](StorageContext& c, int t) { return fill(c, t, true); }},
        {"overwrite", "put to a random existing key", true, overwrite},
        {"readrandom", "get of a random existing key", true, readRandom},
        {"readmissing", "get of a random key that does not exist", true, readMissing},
        {"readseq", "a full scan of the store per op", true, readSeq},
        {"seekrandom", "seek to a random key and read the next 10 entries", true, seekRandom},
        {"deleterandom", "remove of a random loaded key", true, deleteRandom},
        {"readwhilewriting", "readrandom while one more thread overwrites at full speed", true,
         readWhileWriting},
    };
}

}  // namespace mvkv::bench
