// EpochManager: per-thread records, the global epoch and the retired lists.
//
// Invariants:
// 1. A record's `local` is 0 while its thread holds no guard, else
//    (epoch << 1) | 1 for the global epoch it read when it pinned.
// 2. The global epoch moves from g to g + 1 only while no record is pinned at
//    an epoch other than g (checked under mutex_, the only place it moves).
//    With asymmetric pins a record that reads 0 may hide a pin still in its
//    thread's store buffer, whose reads have begun; so when an owned record
//    reads 0 the check runs process_barrier::heavy() and reads every record
//    again, and only that second reading counts. After the barrier a pin made
//    before it is visible, and a pin made after it reads memory at least as
//    new as at the barrier, when what is retired so far was already unlinked.
//    Threads that stay idle would make every reclaim pay for a barrier, so
//    the barrier also parks every owned record first: the owner's next pin
//    publishes itself, then reads `parked`, and if set takes a full fence
//    (an exchange) before it reads anything and clears the flag. A parked
//    record's 0 is then as reliable as a fully fenced pin's: the pin either
//    saw the flag (and fenced), or read it before the barrier parked it, so
//    its store preceded the barrier and the barrier's second reading sees it.
// 3. An object retired at epoch e is freed only when the global epoch is at
//    least e + 2: a guard that could have seen it pinned at e - 1 or later
//    (it pinned before the object was unlinked, hence before the retire read
//    the epoch), and by 2. the epoch cannot pass e + 1 while that guard lives.
// 4. Records are owned by their manager and live until it is destroyed; a
//    thread's record is handed back (owned = false) when the thread exits and
//    is then reused. Exit and manager destruction are ordered by the process
//    registry's mutex, so an exiting thread never touches a dead manager.
#include "util/epoch.h"

#include <algorithm>
#include <cassert>
#include <unordered_set>
#include <utility>

#include "util/process_barrier.h"
#include "util/spin_latch.h"

namespace mvkv {

struct alignas(64) EpochManager::Record {
    std::atomic<uint64_t> local{0};  // invariant 1
    std::atomic<bool> owned{false};  // claimed by a live thread
    // Asymmetric pins: set by a reclaimer just before a process-wide barrier,
    // cleared by the owner's next pin, which then takes a full fence. While
    // set, this record's 0 needs no barrier to be believed (invariant 2).
    std::atomic<bool> parked{false};
    // Touched only by the owning thread (handed over under mutex_ on reuse).
    uint32_t nest = 0;
    uint32_t sinceReclaim = 0;
    // Retired by the owning thread, not yet collected; collect() may steal.
    SpinLatch bagLatch;
    std::vector<Retired> bag;  // GUARDED_BY(bagLatch)
};

namespace {

// The live managers, by id: lets an exiting thread tell whether the manager it
// registered with still exists. Leaked on purpose so that threads exiting
// during static destruction still find it.
struct Registry {
    std::mutex mu;
    std::unordered_set<uint64_t> live;  // GUARDED_BY(mu)
};

Registry& registry() {
    static Registry* r = new Registry;
    return *r;
}

std::atomic<uint64_t> nextManagerId{1};

// A two-entry cache for the hot path (an engine operation pins two managers
// in turn: the transaction manager's and the engine's), most recent first.
// Trivially destructible thread_locals need no guard variable or wrapper call.
// Manager ids are never reused, so an entry of a dead manager never matches.
thread_local uint64_t tlsCachedId[2] = {0, 0};
thread_local EpochManager::Record* tlsCachedRecord[2] = {nullptr, nullptr};

void cacheRecord(uint64_t id, EpochManager::Record* record) {
    tlsCachedId[1] = tlsCachedId[0];
    tlsCachedRecord[1] = tlsCachedRecord[0];
    tlsCachedId[0] = id;
    tlsCachedRecord[0] = record;
}

void forgetCached(uint64_t id) {
    for (int i = 0; i < 2; ++i) {
        if (tlsCachedId[i] == id) {
            tlsCachedId[i] = 0;
            tlsCachedRecord[i] = nullptr;
        }
    }
}

constexpr uint64_t pinnedWord(uint64_t epoch) {
    return (epoch << 1) | 1;
}

}  // namespace

// Every record this thread holds, released when the thread exits.
struct ThreadRecords {
    struct Entry {
        uint64_t id;
        EpochManager* manager;
        EpochManager::Record* record;
    };
    std::vector<Entry> entries;

    ~ThreadRecords() {
        for (int i = 0; i < 2; ++i) {
            tlsCachedId[i] = 0;
            tlsCachedRecord[i] = nullptr;
        }
        Registry& reg = registry();
        std::lock_guard<std::mutex> lock(reg.mu);
        for (const Entry& e : entries) {
            if (reg.live.count(e.id) != 0) {
                e.manager->releaseRecord(e.record);
            }
        }
        entries.clear();
    }
};

namespace {
thread_local ThreadRecords tlsRecords;
}  // namespace

#if defined(__SANITIZE_THREAD__)
#define MVKV_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MVKV_TSAN 1
#endif
#endif

EpochManager::PinFence EpochManager::defaultPinFence() {
#ifdef MVKV_TSAN
    return PinFence::kFull;  // ThreadSanitizer cannot see the process-wide barrier
#else
    return process_barrier::available() ? PinFence::kAsymmetric : PinFence::kFull;
#endif
}

EpochManager::EpochManager(PinFence fence)
    : id_(nextManagerId.fetch_add(1, std::memory_order_relaxed)),
      asymmetric_(fence == PinFence::kAsymmetric && defaultPinFence() == PinFence::kAsymmetric) {
    Registry& reg = registry();
    std::lock_guard<std::mutex> lock(reg.mu);
    reg.live.insert(id_);
}

EpochManager::~EpochManager() {
    {
        // After this no exiting thread will call releaseRecord() on us.
        Registry& reg = registry();
        std::lock_guard<std::mutex> lock(reg.mu);
        reg.live.erase(id_);
    }
    forgetCached(id_);
    std::vector<Retired> all;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        all.swap(retired_);
        for (Record* r : records_) {
            assert(r->local.load(std::memory_order_relaxed) == 0 && "guard outlives its manager");
            all.insert(all.end(), r->bag.begin(), r->bag.end());
            delete r;
        }
        records_.clear();
    }
    freeAll(all);
}

EpochManager::Record* EpochManager::recordForThisThread() {
    if (tlsCachedId[0] == id_) {
        return tlsCachedRecord[0];
    }
    if (tlsCachedId[1] == id_) {
        return tlsCachedRecord[1];
    }
    for (const ThreadRecords::Entry& e : tlsRecords.entries) {
        if (e.id == id_) {
            cacheRecord(id_, e.record);
            return e.record;
        }
    }
    return registerThisThread();
}

EpochManager::Record* EpochManager::registerThisThread() {
    Registry& reg = registry();
    std::lock_guard<std::mutex> regLock(reg.mu);
    // Forget managers that died since this thread last registered, so a
    // long-lived thread does not accumulate entries.
    auto& entries = tlsRecords.entries;
    entries.erase(
        std::remove_if(entries.begin(), entries.end(),
                       [&](const ThreadRecords::Entry& e) { return reg.live.count(e.id) == 0; }),
        entries.end());
    Record* record = nullptr;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (Record* r : records_) {
            if (!r->owned.load(std::memory_order_relaxed)) {
                record = r;
                break;
            }
        }
        if (record == nullptr) {
            record = new Record;
            records_.push_back(record);
        }
        record->owned.store(true, std::memory_order_relaxed);
        record->parked.store(false, std::memory_order_relaxed);
        record->nest = 0;
        record->sinceReclaim = 0;
    }
    entries.push_back({id_, this, record});
    cacheRecord(id_, record);
    return record;
}

void EpochManager::releaseRecord(Record* record) {
    std::vector<Retired> bag;
    {
        std::lock_guard<SpinLatch> latch(record->bagLatch);
        bag.swap(record->bag);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    retired_.insert(retired_.end(), bag.begin(), bag.end());
    record->local.store(0, std::memory_order_seq_cst);
    record->nest = 0;
    record->owned.store(false, std::memory_order_relaxed);
}

EpochManager::Guard EpochManager::pin() {
    Record* r = recordForThisThread();
    if (r->nest++ == 0) {
        uint64_t e = globalEpoch_.load(std::memory_order_relaxed);
        // Publishing the epoch is ordered before the first read of shared
        // data (invariant 3 relies on it): by the reclaimer's heavy barrier
        // (invariant 2), or by a full one here. An exchange is one on x86,
        // and ThreadSanitizer understands it, unlike atomic_thread_fence.
        if (asymmetric_) {
            r->local.store(pinnedWord(e), std::memory_order_relaxed);
            process_barrier::light();
            if (r->parked.load(std::memory_order_relaxed)) [[unlikely]] {
                r->local.exchange(pinnedWord(e), std::memory_order_seq_cst);
                r->parked.store(false, std::memory_order_release);
            }
        } else {
            r->local.exchange(pinnedWord(e), std::memory_order_seq_cst);
        }
    }
    return Guard(r);
}

EpochManager::Guard& EpochManager::Guard::operator=(Guard&& other) noexcept {
    if (this != &other) {
        release();
        record_ = other.record_;
        other.record_ = nullptr;
    }
    return *this;
}

void EpochManager::Guard::release() {
    if (record_ != nullptr) {
        if (--record_->nest == 0) {
            record_->local.store(0, std::memory_order_release);
        }
        record_ = nullptr;
    }
}

void EpochManager::retire(void* p, void (*deleter)(void*)) {
    Record* r = recordForThisThread();
    // seq_cst: ordered after the caller's unlink of p (invariant 3).
    uint64_t e = globalEpoch_.load(std::memory_order_seq_cst);
    pending_.fetch_add(1, std::memory_order_relaxed);
    {
        std::lock_guard<SpinLatch> latch(r->bagLatch);
        r->bag.push_back({p, deleter, e});
    }
    if (++r->sinceReclaim >= kReclaimEvery) {
        r->sinceReclaim = 0;
        tryReclaim(/*wait=*/false);
    }
}

size_t EpochManager::reclaim() {
    return tryReclaim(/*wait=*/true);
}

size_t EpochManager::tryReclaim(bool wait) {
    std::vector<Retired> safe;
    {
        std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
        if (wait) {
            lock.lock();
        } else if (!lock.try_lock()) {
            return 0;  // someone else is reclaiming; our bag waits for the next round
        }
        for (Record* r : records_) {
            std::lock_guard<SpinLatch> latch(r->bagLatch);
            retired_.insert(retired_.end(), r->bag.begin(), r->bag.end());
            r->bag.clear();
        }
        collectSafeLocked(safe, wait);
    }
    // Deleters run outside the lock: they may be slow, and may retire().
    return freeAll(safe);
}

EpochManager::Scan EpochManager::scanLocked(uint64_t g) const {
    Scan result = Scan::kMayAdvance;
    for (const Record* r : records_) {
        uint64_t local = r->local.load(std::memory_order_seq_cst);
        if (local == 0) {
            // Invariant 2. A record nobody owns cannot be claimed while we
            // hold mutex_, so its 0 is final; a parked one's is reliable.
            if (asymmetric_ && r->owned.load(std::memory_order_relaxed) &&
                !r->parked.load(std::memory_order_seq_cst))
                result = Scan::kUnsure;
        } else if (local != pinnedWord(g)) {
            return Scan::kBlocked;
        }
    }
    return result;
}

void EpochManager::collectSafeLocked(std::vector<Retired>& out, bool wait) {
    // A try (a hot path's) pays for a barrier only every kBarrierEvery tries
    // that need one; once it does, both rounds may use one.
    bool mayBarrier = wait;
    // Two advances are enough to make everything retired so far safe when no
    // guard is held; more would only spin.
    for (int round = 0; round < 2; ++round) {
        uint64_t g = globalEpoch_.load(std::memory_order_seq_cst);
        Scan scan = scanLocked(g);
        if (scan == Scan::kUnsure) {
            if (!mayBarrier && ++barriersSkipped_ < kBarrierEvery)
                break;
            barriersSkipped_ = 0;
            mayBarrier = true;
            for (Record* r : records_)
                if (r->owned.load(std::memory_order_relaxed))
                    r->parked.store(true, std::memory_order_seq_cst);
            process_barrier::heavy();
            barriersRun_.fetch_add(1, std::memory_order_relaxed);
            scan = scanLocked(g) == Scan::kBlocked ? Scan::kBlocked : Scan::kMayAdvance;
        }
        if (scan != Scan::kMayAdvance)
            break;
        globalEpoch_.store(g + 1, std::memory_order_seq_cst);
    }
    uint64_t g = globalEpoch_.load(std::memory_order_relaxed);
    auto firstUnsafe = std::partition(retired_.begin(), retired_.end(),
                                      [g](const Retired& item) { return item.epoch + 2 <= g; });
    out.assign(retired_.begin(), firstUnsafe);
    retired_.erase(retired_.begin(), firstUnsafe);
}

size_t EpochManager::freeAll(std::vector<Retired>& items) {
    for (const Retired& item : items) {
        item.deleter(item.p);
    }
    size_t n = items.size();
    pending_.fetch_sub(n, std::memory_order_relaxed);
    items.clear();
    return n;
}

}  // namespace mvkv
