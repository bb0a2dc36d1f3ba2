// YCSB's core workloads A-F (Cooper et al., "Benchmarking Cloud Serving
// Systems with YCSB"), on every engine. Records are the loaded keys; keys
// are chosen zipfian (theta 0.99, hot keys scattered over the key space) by
// default, uniform with --distribution uniform.
//
//   ycsb-a  50% read, 50% update                    (session store)
//   ycsb-b  95% read, 5% update                     (photo tagging)
//   ycsb-c  100% read                               (user profile cache)
//   ycsb-d  95% read of the latest keys, 5% insert  (status updates)
//   ycsb-e  95% scan of 1-100 entries, 5% insert    (threaded conversations)
//   ycsb-f  50% read, 50% read-modify-write         (user database)
// An update writes the whole value (YCSB writes one field of ten; here a
// record is one value). Inserts take new keys past the loaded ones from a
// shared counter; a ycsb-d read of a key whose insert has not committed yet
// may miss (counted as miss_pct, as YCSB tolerates). The latency is per
// operation, whatever its kind.
#include <fmt/format.h>

#include <atomic>
#include <memory>
#include <stdexcept>

#include "storage_workload.h"

namespace mvkv::bench {
namespace {

struct Mix {
    double read = 0;
    double update = 0;
    double insert = 0;
    double scan = 0;
    double readModifyWrite = 0;
    bool latest = false;  // reads favour the newest keys (ycsb-d)
};

constexpr uint64_t kMaxScanLength = 100;
constexpr uint64_t kUpdateStamp = uint64_t{1} << 63;

StorageRun runYcsb(StorageContext& ctx, int threads, const Mix& mix) {
    auto chooser = std::make_shared<KeyChooser>(ctx.loadedKeys,
                                                ctx.distribution(Distribution::kZipfian));
    auto nextInsert = std::make_shared<std::atomic<uint64_t>>(ctx.loadedKeys);
    auto misses = std::make_shared<std::atomic<uint64_t>>(0);
    StorageRun run;
    run.measurement = timeStoreOps(ctx, threads, [&](int t, StoreThread& h) {
        return [&h, &ctx, mix, chooser, nextInsert, misses, rng = Rng(ctx.seed(t)),
                key = std::string(ctx.keys.size(), '\0'), value = std::string(),
                n = uint64_t{0}]() mutable {
            double dice = rng.unit();
            if (dice < mix.insert) {
                uint64_t index = nextInsert->fetch_add(1, std::memory_order_relaxed);
                ctx.keys.make(key.data(), index);
                ctx.values.make(value, index);
                check(h.put(key, value), "insert");
                return;
            }
            dice -= mix.insert;
            if (dice < mix.scan) {
                ctx.keys.make(key.data(), chooser->next(rng));
                ScanResult r;
                check(h.scan(key, 1 + rng.below(kMaxScanLength), &r), "scan");
                return;
            }
            uint64_t index;
            if (mix.latest) {
                uint64_t newest = nextInsert->load(std::memory_order_relaxed) - 1;
                uint64_t back = chooser->rank(rng);
                index = back > newest ? 0 : newest - back;
            } else {
                index = chooser->next(rng);
            }
            ctx.keys.make(key.data(), index);
            dice -= mix.scan;
            if (dice < mix.update) {
                ctx.values.make(value, kUpdateStamp | ++n);
                check(h.put(key, value), "update");
                return;
            }
            Status s = h.get(key, &value);
            if (s.code() == StatusCode::kNotFound && index >= ctx.loadedKeys) {
                misses->fetch_add(1, std::memory_order_relaxed);  // an insert not yet committed
                return;
            }
            check(s, "read");
            dice -= mix.update;
            if (dice < mix.readModifyWrite) {
                // Modify: a new stamp (the pattern after it stays).
                ctx.values.make(value, kUpdateStamp | ++n);
                check(h.put(key, value), "read-modify-write");
            }
        };
    });
    uint64_t ops = run.measurement.totalOps;
    if (mix.latest && ops > 0)
        run.metrics.push_back({"miss_pct", 100.0 * double(misses->load()) / double(ops), ""});
    return run;
}

StorageSpec ycsb(const char* name, const char* description, Mix mix) {
    return {name, description, true,
            [mix](StorageContext& c, int t) { return runYcsb(c, t, mix); }};
}

}  // namespace

std::vector<StorageSpec> ycsbStorageSpecs() {
    return {
        ycsb("ycsb-a", "YCSB A: 50% read, 50% update", {.read = 0.5, .update = 0.5}),
        ycsb("ycsb-b", "YCSB B: 95% read, 5% update", {.read = 0.95, .update = 0.05}),
        ycsb("ycsb-c", "YCSB C: 100% read", {.read = 1.0}),
        ycsb("ycsb-d", "YCSB D: 95% read of the latest keys, 5% insert",
             {.read = 0.95, .insert = 0.05, .latest = true}),
        ycsb("ycsb-e", "YCSB E: 95% scan of 1-100 entries, 5% insert",
             {.insert = 0.05, .scan = 0.95}),
        ycsb("ycsb-f", "YCSB F: 50% read, 50% read-modify-write",
             {.read = 0.5, .readModifyWrite = 0.5}),
    };
}

}  // namespace mvkv::bench
