// HistorySweeper: keeps update chains short and history bounded (issue 5,
// WiredTiger's reconciliation + history store garbage collection).
//
// For each key, everything below the newest committed version N is either
// obsolete (the version that replaced it is visible to every reader, by the
// horizon below) and freed through the EpochManager, or moved to the history
// store; then the chain is cut below N (N is marked olderInHistory when
// anything went there). Uncommitted versions and anything above N are never
// touched. A key whose only version is a tombstone visible to all leaves the
// B+tree. History entries whose replacing version is visible to all, and
// those of dropped collections, are discarded.
//
// The horizon: pinned ts = min(oldest, oldest running read ts) (0 until an
// oldest timestamp is set: then nothing is obsolete by timestamp, history is
// only moved), and oldest id = the smallest snapshot of every running reader.
// Registered transactions are on the TransactionManager's active list or a
// reader shard of its; short implicit operations are on neither
// (BeginOptions::unregistered) and hold an epoch
// pin instead, so the sweep retires a marker carrying the snapshot floor of
// that moment and trusts the floor only once the marker is freed: every pin
// older than it has ended by then (a grace period).
//
// Runs: in a background thread every `interval` (EngineOptions), on demand
// (sweepAll), and for one key when a write finds its chain deeper than
// EngineOptions::chainSweepBound (sweepKey, which moves nothing to the
// history store until the chain is kKeyMoveDepth deep: a hot key rewritten
// faster than oldest moves would otherwise copy nearly every version
// there, only for the next pass to discard it). Chains are swept one at a time
// under a striped mutex that readers and writers never take: a sweep never
// blocks them.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "engine/catalog.h"
#include "historystore/history_store.h"
#include "mvcc/txn_manager.h"
#include "util/epoch.h"

namespace mvkv::engine {

struct SweepStats {
    uint64_t passes = 0;         // whole passes (background and on demand)
    uint64_t keySweeps = 0;      // single chains swept by the long-chain trigger
    uint64_t versionsMoved = 0;  // to the history store
    uint64_t versionsFreed = 0;  // obsolete or aborted, freed from chains
    uint64_t keysRemoved = 0;    // keys left as a tombstone visible to all
    uint64_t historyDiscarded = 0;  // history entries removed
    uint64_t walksSkipped = 0;      // background passes that had no reason to walk the tree
};

class HistorySweeper {
  public:
    HistorySweeper(Catalog& catalog, mvcc::TransactionManager& txns,
                   historystore::HistoryStore& history, EpochManager& epochs);
    /// Stops the background thread.
    ~HistorySweeper();
    HistorySweeper(const HistorySweeper&) = delete;
    HistorySweeper& operator=(const HistorySweeper&) = delete;

    /// Starts the background thread (interval 0: none).
    void start(std::chrono::milliseconds interval);

    /// One whole pass now: a fresh horizon, every chain, then the history.
    /// Passes run one at a time. Called with an epoch pin held it still
    /// works, but the grace period cannot end during it, so it judges
    /// implicit readers by an older snapshot floor (frees less).
    void sweepAll() { pass(false); }
    /// What the background thread runs every interval: sweepAll(), except
    /// that it skips the walk of the tree when the last walk found every key
    /// a single version (not a deletion) and no write noted work since.
    void backgroundPass() { pass(true); }

    /// A write left a chain more than one version deep or wrote a deletion:
    /// the next background pass must walk the tree. Cheap when already
    /// noted (a load), so every such write may call it.
    void noteWork() {
        // The fence orders the caller's publication of the version before
        // the load, as the pass's fence orders its exchange before its walk:
        // either this load sees the pass's clear (and sets the flag again)
        // or the walk sees the version (store buffering, both sides fenced).
#if defined(__SANITIZE_THREAD__)
        // ThreadSanitizer does not model fences: a release exchange, which
        // the pass's acquire exchange reads from, orders the same way.
        workNoted_.exchange(true, std::memory_order_acq_rel);
#else
        std::atomic_thread_fence(std::memory_order_seq_cst);
        if (!workNoted_.load(std::memory_order_relaxed))
            workNoted_.store(true, std::memory_order_release);
#endif
    }
    /// A test seam: `hook` runs in every later pass right after it has taken
    /// its horizon, before it walks the tree. Set while no pass runs.
    void setPassTestHook(std::function<void()> hook) { passTestHook_ = std::move(hook); }

    /// Sweeps the chain of one key now, unless a sweep holds it already:
    /// frees the versions below the newest one every reader sees. Versions
    /// some reader may still need stay on the chain until it is
    /// kKeyMoveDepth deep; from there they go to the history store, as a
    /// pass would move them.
    void sweepKey(Collection& coll, std::string_view key);
    static constexpr unsigned kKeyMoveDepth = 128;

    /// Whether a write that left its key's chain `depth` versions deep
    /// should sweep it (sweepKey), for EngineOptions::chainSweepBound
    /// `bound` (0: never): every `bound` versions past the bound, not at
    /// every write, since a chain some reader still needs cannot be cut.
    static bool wantsKeySweep(unsigned depth, unsigned bound) {
        return bound != 0 && depth > bound && ((depth - 1) % bound == 0 || depth >= 255);
    }

    SweepStats stats() const;
    /// The horizon of the newest sweep.
    mvcc::Horizon lastHorizon() const;

  private:
    struct GraceMarker;
    mvcc::Horizon refreshHorizon(bool reclaimNow);
    // Require the key's stripe and an epoch pin. sweepChain moves what
    // readers may need to the history store; freeUnreadable only frees
    // what no reader can reach.
    // `head` is the key's newest version, read under the stripe.
    void sweepChain(Collection& coll, std::string_view key, mvcc::Update* head,
                    const mvcc::Horizon& h);
    void freeUnreadable(mvcc::Update* head, const mvcc::Horizon& h);
    // Cuts the chain below `keep` (marked olderInHistory when `moved`),
    // retires every version below it and re-sets the depths above. Returns
    // how many it retired.
    size_t cutBelow(mvcc::Update* head, mvcc::Update* keep, bool moved);
    std::mutex& stripeFor(uint32_t collection, std::string_view key);
    void run(std::chrono::milliseconds interval);
    // A pass; `mayskipWalk`: skip the walk of the tree when the last walk
    // found every key a single live version and no write noted work since
    // (the background pass: a large tree of keys nobody rewrites costs a
    // walk per interval for nothing otherwise).
    void pass(bool mayskipWalk);  // backgroundPass: true
    // The walk of a pass: every key's chain. True when it left no key with
    // work a later pass could do.
    bool sweepChains(const std::vector<std::shared_ptr<Collection>>& colls, const mvcc::Horizon& h);

    std::function<void()> passTestHook_;
    Catalog& catalog_;
    mvcc::TransactionManager& txns_;
    historystore::HistoryStore& history_;
    EpochManager& epochs_;

    std::mutex passMutex_;
    std::array<std::mutex, 64> stripes_;
    // The snapshot floor whose grace period has passed (shared with the
    // markers, which may be freed after the sweeper is gone).
    std::shared_ptr<std::atomic<mvcc::TxnId>> graceFloor_;
    // The read point whose grace period has passed: every unregistered
    // untimestamped snapshot still running reads at or above it.
    std::shared_ptr<std::atomic<mvcc::Timestamp>> graceReadPoint_;
    // At most one marker waits for its grace period at a time (a writer's
    // sweep would otherwise retire one per sweep).
    std::shared_ptr<std::atomic<bool>> markerPending_;
    // Set by noteWork, taken by each walk as it starts.
    std::atomic<bool> workNoted_{true};
    // The last walk found every key a single version, not a deletion
    // (passMutex_).
    bool lastWalkClean_ = false;
    std::atomic<uint64_t> walksSkipped_{0};
    std::atomic<mvcc::Timestamp> lastPinned_{0};
    std::atomic<mvcc::TxnId> lastOldestId_{0};

    std::atomic<uint64_t> passes_{0}, keySweeps_{0}, moved_{0}, freed_{0}, keysRemoved_{0},
        discarded_{0};

    std::mutex wakeMutex_;
    std::condition_variable wake_;
    bool stop_ = false;  // GUARDED_BY(wakeMutex_)
    std::thread thread_;
};

}  // namespace mvkv::engine
