// Workload "lockmgr": lock + unlock pairs per second through the layers of
// the lock manager, against a std::mutex baseline.
//
// Cases (every one measured at each --threads count, in this order):
//   mutex_pair  std::mutex lock()+unlock(); each thread its own mutex (own
//               cache line), i.e. always uncontended: the baseline.
//   lockmgr_is  LockManager::lock()+unlock() of a raw LockRequest in IS on the
//               Collection "db.coll", partitioned (the intent fast path the
//               Locker uses); each thread its own request and locker id.
//   autoget_is  AutoGetCollection(locker, "db.coll", IS) constructed and
//               destroyed: read ticket + Global IS + Database IS + Collection
//               IS and back; one Locker per thread, reused.
//   autoget_is_ns  The same with a LockNamespace parsed once (as a catalog
//               would keep it): no namespace split or name hashing per op.
//   autoget_ix  The same in IX (write ticket, IX everywhere): all threads on
//               the same collection, which stays on the partitioned path.
//   coll_x      AutoGetCollection X on the same collection from all threads:
//               Global/Database IX, Collection X. Contended with >1 thread:
//               the threads serialize (and wait through the LockManager).
//
// Reported per row: ops/s (all threads), ns/op per thread, ratio = ns/op /
// ns/op of mutex_pair at the same thread count, and for >1 thread scaling =
// ops/s / ops/s at 1 thread. Each case and thread count gets a fresh
// LockManager. The targets are checked in the notes under the table:
// autoget_is <= 8x mutex_pair at 1 thread; autoget_ix scales at 2 threads.
#include <fmt/format.h>

#include <memory>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "harness.h"
#include "workload.h"
#include "lockmgr/lock_manager.h"
#include "lockmgr/lock_request.h"
#include "lockmgr/locker.h"
#include "lockmgr/raii_locks.h"

namespace mvkv::bench {
namespace {

using lockmgr::AutoGetCollection;
using lockmgr::Locker;
using lockmgr::LockGrantNotification;
using lockmgr::LockManager;
using lockmgr::LockMode;
using lockmgr::LockRequest;
using lockmgr::LockResult;
using lockmgr::ResourceId;

constexpr std::string_view kWorkload = "lockmgr";
constexpr std::string_view kNamespace = "db.coll";
constexpr double kTargetIsRatio = 8.0;

Measurement runMutexPair(const BenchConfig& config, int threads) {
    struct alignas(64) PaddedMutex {
        std::mutex mutex;
    };
    return repeatRuns(config.repeat, [&] {
        std::vector<PaddedMutex> mutexes(static_cast<size_t>(threads));
        return runParallel(threads, limitsFor(config), [&](int index) {
            std::mutex* m = &mutexes[static_cast<size_t>(index)].mutex;
            return [m] {
                m->lock();
                m->unlock();
            };
        });
    });
}

Measurement runLockManagerIs(const BenchConfig& config, int threads) {
    return repeatRuns(config.repeat, [&] {
        LockManager manager;
        const ResourceId id = ResourceId::collection(kNamespace);
        return runParallel(threads, limitsFor(config), [&](int) {
            auto notification = std::make_unique<LockGrantNotification>();
            auto request =
                std::make_unique<LockRequest>(manager.newLockerId(), id, notification.get());
            return [&manager, id, notification = std::move(notification),
                    request = std::move(request)] {
                request->partitioned = true;  // as Locker does for intent modes
                if (manager.lock(id, request.get(), LockMode::kIS, kNamespace) != LockResult::kOk) {
                    throw std::runtime_error("LockManager::lock(IS) was not granted at once");
                }
                manager.unlock(request.get());  // resets the request to kNew
            };
        });
    });
}

Measurement runAutoGetCachedNs(const BenchConfig& config, int threads) {
    auto ns = lockmgr::LockNamespace::parse(kNamespace);
    if (!ns.ok())
        throw std::runtime_error(ns.status().toString());
    return repeatRuns(config.repeat, [&] {
        LockManager manager;
        return runParallel(threads, limitsFor(config), [&](int) {
            auto locker = std::make_unique<Locker>(manager);
            return [locker = std::move(locker), &ns] {
                AutoGetCollection coll(*locker, ns.value(), LockMode::kIS);
                if (!coll.isLocked())
                    throw std::runtime_error(coll.status().toString());
            };
        });
    });
}

Measurement runAutoGet(const BenchConfig& config, int threads, LockMode mode) {
    return repeatRuns(config.repeat, [&] {
        LockManager manager;
        return runParallel(threads, limitsFor(config), [&](int) {
            auto locker = std::make_unique<Locker>(manager);
            return [locker = std::move(locker), mode] {
                AutoGetCollection coll(*locker, kNamespace, mode);
                if (!coll.isLocked())
                    throw std::runtime_error(coll.status().toString());
            };
        });
    });
}

struct Case {
    std::string_view name;
    Measurement (*run)(const BenchConfig&, int threads);
};

const Case kCases[] = {
    {"mutex_pair", runMutexPair},
    {"lockmgr_is", runLockManagerIs},
    {"autoget_is", [](const BenchConfig& c, int t) { return runAutoGet(c, t, LockMode::kIS); }},
    {"autoget_is_ns", runAutoGetCachedNs},
    {"autoget_ix", [](const BenchConfig& c, int t) { return runAutoGet(c, t, LockMode::kIX); }},
    {"coll_x", [](const BenchConfig& c, int t) { return runAutoGet(c, t, LockMode::kX); }},
};

std::vector<std::string> targetNotes(const std::vector<ResultRow>& rows) {
    std::vector<std::string> notes;
    if (const ResultRow* is = findRow(rows, "autoget_is", 1); is && is->metric("ratio")) {
        double ratio = *is->metric("ratio");
        notes.push_back(fmt::format(
            "target: autoget_is at 1 thread costs {:.2f}x a mutex_pair (goal <= {:.0f}x): {}",
            ratio, kTargetIsRatio, ratio <= kTargetIsRatio ? "met" : "NOT met"));
    }
    for (const ResultRow& r : rows) {
        if (r.caseName != "autoget_ix" || r.threads <= 1 || !r.metric("scaling"))
            continue;
        double s = *r.metric("scaling");
        const char* verdict = s >= 1.5 ? "scales" : s >= 1.0 ? "scales weakly" : "collapses";
        notes.push_back(
            fmt::format("target: autoget_ix at {} threads gives {:.2f}x the 1-thread throughput "
                        "(ideal {}.00x): {}",
                        r.threads, s, r.threads, verdict));
    }
    return notes;
}

WorkloadResult runLockmgr(const BenchConfig& config) {
    WorkloadResult result;
    for (int threads : config.threads) {
        for (const Case& c : kCases) {
            if (!config.wantCase(c.name))
                continue;
            Measurement m = c.run(config, threads);
            result.rows.push_back(toRow(kWorkload, c.name, threads, m));
        }
    }
    addRatioToBaseline(result.rows, "mutex_pair");
    addScaling(result.rows);
    result.notes = targetNotes(result.rows);
    return result;
}

}  // namespace

void registerLockmgrWorkload(WorkloadRegistry& registry) {
    Workload w;
    w.name = std::string(kWorkload);
    w.description =
        "lock+unlock pairs/s: std::mutex baseline, raw LockManager IS, "
        "AutoGetCollection IS/IX/X";
    for (const Case& c : kCases)
        w.caseNames.emplace_back(c.name);
    w.run = runLockmgr;
    registry.add(std::move(w));
}

}  // namespace mvkv::bench
