// Transactional and contended workloads, on every engine.
//
//   transfer      each op is an explicit read-write transaction moving 1 unit
//                 between two accounts (keys chosen zipfian by default; the
//                 balance is the value's stamp, loaded as the key's index).
//                 A WriteConflict aborts and retries the whole transaction;
//                 conflicts are counted. Afterwards the sum of all balances
//                 is checked: nothing created or lost.
//   hotkey        every thread overwrites one of 4 keys (autocommit): goodput
//                 and the write conflicts the engine retried.
//   longsnapshot  one more thread opens a read-only transaction before the
//                 timed threads start overwriting random keys, and reads
//                 random keys through it for the whole run, checking each
//                 still shows its loaded value. Reports the snapshot's read
//                 rate and what holding it cost: RSS and disk growth over the
//                 run, and the engine's own figures (mvkv: update-chain
//                 lengths; LMDB: pages used).
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <stdexcept>

#include "storage_workload.h"
#include "sysinfo.h"

namespace mvkv::bench {
namespace {

constexpr uint64_t kOverwriteStamp = uint64_t{1} << 62;

/// Adds the conflicts a handle retried since the last call to a shared total.
struct ConflictTally {
    std::shared_ptr<std::atomic<uint64_t>> total = std::make_shared<std::atomic<uint64_t>>(0);
    void add(uint64_t n) const {
        if (n != 0)
            total->fetch_add(n, std::memory_order_relaxed);
    }
    /// The conflicts and conflicts per op columns.
    void report(StorageRun& run) const {
        double n = double(total->load());
        run.metrics.push_back({"conflicts", n, ""});
        if (run.measurement.totalOps > 0)
            run.metrics.push_back({"conflicts_per_op", n / double(run.measurement.totalOps), ""});
    }
};

StorageRun transfer(StorageContext& ctx, int threads) {
    if (ctx.loadedKeys < 2)
        throw std::runtime_error("transfer needs --keys >= 2");
    auto chooser = std::make_shared<KeyChooser>(ctx.loadedKeys,
                                                ctx.distribution(Distribution::kZipfian));
    ConflictTally conflicts;
    StorageRun run;
    run.measurement = timeStoreOps(ctx, threads, [&](int t, StoreThread& h) {
        return [&h, &ctx, chooser, conflicts, rng = Rng(ctx.seed(t)),
                from = std::string(ctx.keys.size(), '\0'), to = std::string(ctx.keys.size(), '\0'),
                a = std::string(), b = std::string()]() mutable {
            uint64_t i = chooser->next(rng);
            uint64_t j = chooser->next(rng);
            while (j == i)
                j = rng.below(ctx.loadedKeys);
            ctx.keys.make(from.data(), i);
            ctx.keys.make(to.data(), j);
            for (;;) {
                check(h.begin(TxnKind::kReadWrite), "begin");
                Status s = h.get(from, &a);
                if (s.ok())
                    s = h.get(to, &b);
                uint64_t balanceFrom = ValueFormat::stampOf(a);
                if (s.ok() && balanceFrom > 0) {
                    ctx.values.make(a, balanceFrom - 1);
                    ctx.values.make(b, ValueFormat::stampOf(b) + 1);
                    s = h.put(from, a);
                    if (s.ok())
                        s = h.put(to, b);
                }
                if (s.ok()) {
                    s = h.commit();
                    if (s.ok())
                        return;
                }
                check(h.abort(), "abort");
                if (s.code() != StatusCode::kWriteConflict)
                    check(s, "transfer");
                conflicts.add(1);  // and retry the whole transaction
            }
        };
    });
    // Nothing created or lost: the balances still sum to 0 + 1 + ... + (n - 1).
    auto handle = ctx.openThread();
    std::vector<std::pair<std::string, std::string>> all;
    ScanResult r;
    r.collect = &all;
    check(handle->scan({}, UINT64_MAX, &r), "scan (check)");
    __extension__ using U128 = unsigned __int128;
    U128 sum = 0;
    for (const auto& kv : all)
        sum += ValueFormat::stampOf(kv.second);
    U128 expected = U128{ctx.loadedKeys} * (ctx.loadedKeys - 1) / 2;
    if (sum != expected || all.size() != ctx.loadedKeys) {
        throw std::runtime_error(fmt::format("transfer broke the invariant: {} accounts (of {}), "
                                             "total {} (expected {})",
                                             all.size(), ctx.loadedKeys, uint64_t(sum),
                                             uint64_t(expected)));
    }
    conflicts.report(run);
    return run;
}

constexpr uint64_t kHotKeys = 4;

StorageRun hotkey(StorageContext& ctx, int threads) {
    ConflictTally conflicts;
    StorageRun run;
    run.measurement = timeStoreOps(ctx, threads, [&](int t, StoreThread& h) {
        return [&h, &ctx, conflicts, rng = Rng(ctx.seed(t)), key = std::string(ctx.keys.size(), '\0'),
                value = std::string(), n = uint64_t{0}, seen = uint64_t{0}]() mutable {
            ctx.keys.make(key.data(), rng.below(std::min(kHotKeys, ctx.loadedKeys)));
            ctx.values.make(value, kOverwriteStamp | ++n);
            check(h.put(key, value), "put");
            conflicts.add(h.conflicts() - seen);
            seen = h.conflicts();
        };
    });
    conflicts.report(run);
    return run;
}

StorageRun longSnapshot(StorageContext& ctx, int threads) {
    double rssBefore = currentRssMb();
    double diskBefore = ctx.diskMb();
    std::string key(ctx.keys.size(), '\0');
    std::string value;
    Rng rng(ctx.seed(1000));
    BackgroundThread reader(
        ctx, {.setup = [](StoreThread& h) { check(h.begin(TxnKind::kReadOnly), "begin snapshot"); },
              .step =
                  [&](StoreThread& h) {
                      uint64_t index = rng.below(ctx.loadedKeys);
                      ctx.keys.make(key.data(), index);
                      check(h.get(key, &value), "get at the snapshot");
                      if (ValueFormat::stampOf(value) != index) {
                          throw std::runtime_error(fmt::format(
                              "the snapshot saw key {} change (stamp {})", index,
                              ValueFormat::stampOf(value)));
                      }
                  },
              .teardown = [](StoreThread& h) { check(h.commit(), "end snapshot"); }});
    StorageRun run;
    run.measurement = timeStoreOps(ctx, threads, [&](int t, StoreThread& h) {
        return [&h, &ctx, rng = Rng(ctx.seed(t)), k = std::string(ctx.keys.size(), '\0'),
                v = std::string(), n = uint64_t{0}]() mutable {
            ctx.keys.make(k.data(), rng.below(ctx.loadedKeys));
            ctx.values.make(v, kOverwriteStamp | ++n);
            check(h.put(k, v), "put");
        };
    });
    // Measured while the snapshot is still held.
    std::vector<std::pair<std::string, double>> engine = ctx.store.engineMetrics();
    double rssGrowth = currentRssMb() - rssBefore;
    double diskGrowth = ctx.diskMb() - diskBefore;
    BackgroundThread::Result snapshot = reader.stop();
    run.metrics.push_back({"snapshot_reads_per_sec", snapshot.stepsPerSec(), ""});
    run.metrics.push_back({"rss_growth_mb", rssGrowth, ""});
    run.metrics.push_back({"disk_growth_mb", diskGrowth, ""});
    for (auto& [name, v] : engine)
        run.metrics.push_back({ctx.engine + "." + name, v, ""});
    return run;
}

}  // namespace

std::vector<StorageSpec> txnStorageSpecs() {
    return {
        {"transfer", "explicit transactions moving 1 unit between two accounts, retried on conflict",
         true, transfer},
        {"hotkey", "every thread overwrites one of 4 keys: goodput and conflicts", true, hotkey},
        {"longsnapshot", "overwrites while one reader holds its snapshot for the whole run", true,
         longSnapshot},
    };
}

}  // namespace mvkv::bench
