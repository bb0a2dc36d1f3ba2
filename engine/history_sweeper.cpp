#include "engine/history_sweeper.h"

#include <xxhash.h>

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "engine/collection.h"
#include "failpoint/failpoints.h"
#include "mvcc/update.h"

namespace mvkv::engine {

struct HistorySweeper::GraceMarker {
    std::shared_ptr<std::atomic<mvcc::TxnId>> target;
    std::shared_ptr<std::atomic<bool>> pending;
    mvcc::TxnId floor;
    std::shared_ptr<std::atomic<mvcc::Timestamp>> readPointTarget;
    mvcc::Timestamp readPoint;  // with floor: a later snapshot's is at least this

    // Freed by the EpochManager once every pin older than the marker has
    // ended: the floor now covers every unregistered reader still running.
    static void passed(void* p) {
        auto* m = static_cast<GraceMarker*>(p);
        mvcc::TxnId seen = m->target->load(std::memory_order_relaxed);
        while (seen < m->floor &&
               !m->target->compare_exchange_weak(seen, m->floor, std::memory_order_release)) {
        }
        // Stored as it is, not raised: markers pass one at a time, in
        // order, and the read point of one taken before the engine ordered
        // its commits (recovery's replay) is "no bound", which a later,
        // real one must replace.
        m->readPointTarget->store(m->readPoint, std::memory_order_release);
        m->pending->store(false, std::memory_order_release);
        delete m;
    }
};

namespace {
void destroyUpdate(void* p) {
    mvcc::Update::destroy(static_cast<mvcc::Update*>(p));
}
}  // namespace

HistorySweeper::HistorySweeper(Catalog& catalog, mvcc::TransactionManager& txns,
                               historystore::HistoryStore& history, EpochManager& epochs)
    : catalog_(catalog),
      txns_(txns),
      history_(history),
      epochs_(epochs),
      graceFloor_(std::make_shared<std::atomic<mvcc::TxnId>>(0)),
      graceReadPoint_(std::make_shared<std::atomic<mvcc::Timestamp>>(0)),
      markerPending_(std::make_shared<std::atomic<bool>>(false)) {}

HistorySweeper::~HistorySweeper() {
    {
        std::lock_guard lock(wakeMutex_);
        stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable())
        thread_.join();
}

void HistorySweeper::start(std::chrono::milliseconds interval) {
    if (interval.count() > 0 && !thread_.joinable())
        thread_ = std::thread([this, interval] { run(interval); });
}

void HistorySweeper::run(std::chrono::milliseconds interval) {
    std::unique_lock lock(wakeMutex_);
    while (!stop_) {
        if (wake_.wait_for(lock, interval, [this] { return stop_; }))
            break;
        lock.unlock();
        if (!failpoint::pauseHistorySweep.check())  // explicit sweeps still run
            backgroundPass();
        lock.lock();
    }
}

std::mutex& HistorySweeper::stripeFor(uint32_t collection, std::string_view key) {
    uint64_t h = XXH3_64bits_withSeed(key.data(), key.size(), collection);
    return stripes_[h % stripes_.size()];
}

mvcc::Horizon HistorySweeper::refreshHorizon(bool reclaimNow) {
    // Read the floor first, then retire the marker that vouches for it.
    if (reclaimNow)
        epochs_.reclaim();  // lets an older marker pass first
    if (!markerPending_->exchange(true, std::memory_order_acq_rel)) {
        // Read from the same copy of the running table as the floor: an
        // unregistered snapshot taken after this has a read point at least
        // as new (it never moves back).
        mvcc::Timestamp readPoint = 0;
        mvcc::TxnId floor = txns_.snapshotFloorNow(&readPoint);
        epochs_.retire(
            new GraceMarker{graceFloor_, markerPending_, floor, graceReadPoint_, readPoint},
            &GraceMarker::passed);
    }
    if (reclaimNow)
        epochs_.reclaim();
    mvcc::Horizon h = txns_.horizon(graceFloor_->load(std::memory_order_acquire),
                                    graceReadPoint_->load(std::memory_order_acquire));
    lastPinned_.store(h.pinnedTs, std::memory_order_relaxed);
    lastOldestId_.store(h.oldestId, std::memory_order_relaxed);
    return h;
}

mvcc::Horizon HistorySweeper::lastHorizon() const {
    mvcc::Horizon h;
    h.pinnedTs = lastPinned_.load(std::memory_order_relaxed);
    h.oldestId = lastOldestId_.load(std::memory_order_relaxed);
    return h;
}

size_t HistorySweeper::cutBelow(mvcc::Update* head, mvcc::Update* keep, bool moved) {
    mvcc::Update* below = keep->next();
    keep->truncateBelow(moved);
    // Unlinked now; the caller's pin keeps them readable while we walk them.
    size_t cut = 0;
    for (mvcc::Update* v = below; v;) {
        mvcc::Update* older = v->next();
        epochs_.retire(v, &destroyUpdate);
        v = older;
        ++cut;
    }
    // The versions above the cut still carry the old depth; without this
    // every later write would pass the bound and sweep again.
    unsigned above = 0;
    for (const mvcc::Update* u = head; u != keep; u = u->next())
        ++above;
    for (mvcc::Update* u = head; u != keep; u = u->next())
        u->setDepth(1 + above--);
    return cut;
}

void HistorySweeper::sweepChain(Collection& coll, std::string_view key, mvcc::Update* head,
                                const mvcc::Horizon& h) {
    mvcc::Update* newest = head;
    while (newest && newest->state() != mvcc::UpdateState::kCommitted)
        newest = newest->next();
    if (!newest)
        return;  // nothing committed yet: nothing to sweep
    if (h.newerThanHorizon(newest->txnId()) && head->depth() < kKeyMoveDepth) {
        // Committed after the horizon was taken (during a pass, which takes
        // a while over a large tree): whether a reader still needs what it
        // replaced is for the next pass to judge. Moving those versions now
        // would fill the store with entries the next pass discards (a third
        // of a pass's time beside a steady overwriter); free only what every
        // reader has passed. Not for a deep chain: a key rewritten faster
        // than a pass reaches it would then never be moved while an old
        // reader holds its versions (with chainSweepBound 0 nothing else
        // would), so such a chain is swept as before.
        freeUnreadable(head, h);
        return;
    }
    if (mvcc::Update* below = newest->next()) {
        // Below the newest committed version every version is committed or
        // aborted (a writer cannot write under an uncommitted version).
        bool moved = newest->olderInHistory();
        const mvcc::Update* stop = newest;  // the version that replaced v
        for (mvcc::Update* v = below; v; v = v->next()) {
            moved = moved || v->olderInHistory();
            if (v->state() != mvcc::UpdateState::kCommitted)
                continue;  // aborted: nobody reads it
            // Obsolete when every reader sees its replacement; a version its
            // own transaction overwrote was never visible to anyone.
            bool obsolete = h.visibleToAll(stop->txnId(), stop->startTs()) ||
                            v->txnId() == stop->txnId();
            if (!obsolete) {
                history_.insert(coll.id(), key, *v, *stop);
                moved = true;
                moved_.fetch_add(1, std::memory_order_relaxed);
            } else {
                freed_.fetch_add(1, std::memory_order_relaxed);
            }
            stop = v;
        }
        // Into the history store first, then the cut: a reader that sees the
        // shorter chain sees the mark and finds the versions there.
        cutBelow(head, newest, moved);
    }
    // A key that is only a deletion every reader sees leaves the tree.
    if (head == newest && newest->isTombstone() &&
        h.visibleToAll(newest->txnId(), newest->startTs()) &&
        coll.tree().removeIf(key, newest)) {
        epochs_.retire(newest, &destroyUpdate);
        keysRemoved_.fetch_add(1, std::memory_order_relaxed);
    }
}

void HistorySweeper::freeUnreadable(mvcc::Update* head, const mvcc::Horizon& h) {
    // The newest committed version every reader sees: each reader stops at
    // it or above, so nothing below it is ever read again.
    mvcc::Update* floor = head;
    while (floor && !(floor->state() == mvcc::UpdateState::kCommitted &&
                      h.visibleToAll(floor->txnId(), floor->startTs())))
        floor = floor->next();
    if (!floor || !floor->next())
        return;
    bool moved = floor->olderInHistory();
    for (mvcc::Update* v = floor->next(); v; v = v->next())
        moved = moved || v->olderInHistory();  // kept: the pass discards those entries
    freed_.fetch_add(cutBelow(head, floor, moved), std::memory_order_relaxed);
}

void HistorySweeper::sweepKey(Collection& coll, std::string_view key) {
    std::unique_lock stripe(stripeFor(coll.id(), key), std::try_to_lock);
    if (!stripe.owns_lock())
        return;  // a sweep is at it already
    auto guard = epochs_.pin();
    // Called from a writer that holds a pin, so a reclaim advances the
    // epoch at most once: the marker retired now passes two key sweeps
    // later. Without it the floor would wait for the next pass, and a hot
    // key's sweeps could free nothing until then. Never waits: a writer
    // must not queue behind a pass's reclaim.
    epochs_.reclaimIfFree();
    mvcc::Horizon h = refreshHorizon(false);
    auto* head = const_cast<mvcc::Update*>(coll.newestVersion(key));
    if (head && head->depth() < kKeyMoveDepth)
        freeUnreadable(head, h);
    else if (head)
        sweepChain(coll, key, head, h);
    keySweeps_.fetch_add(1, std::memory_order_relaxed);
}

namespace {
// Whether a later pass could still do something for a key whose chain starts
// at `head`, just swept: aborted versions on top are skipped (no pass
// unlinks those; the key's next write does), an uncommitted or prepared
// version's end decides what the chain needs, and a committed one leaves
// work while versions remain below it (left for the next pass) or while it
// is a deletion not every reader has passed.
bool leftWork(const mvcc::Update* head) {
    const mvcc::Update* u = head;
    while (u && u->state() == mvcc::UpdateState::kAborted)
        u = u->next();
    if (!u)
        return false;
    if (u->state() != mvcc::UpdateState::kCommitted)
        return true;
    return u->next() != nullptr || u->isTombstone();
}
}  // namespace

bool HistorySweeper::sweepChains(const std::vector<std::shared_ptr<Collection>>& colls,
                                 const mvcc::Horizon& h) {
    bool clean = true;
    for (const auto& coll : colls) {
        BTree::Cursor c(coll->tree());
        for (c.seekFirst(); c.valid(); c.next()) {
            {
                // Most chains have nothing to do: skip them without the stripe.
                auto guard = epochs_.pin();
                const auto* head = static_cast<const mvcc::Update*>(c.value());
                if (!head || (!head->next() && !head->isTombstone()))
                    continue;
            }
            std::lock_guard stripe(stripeFor(coll->id(), c.key()));
            auto guard = epochs_.pin();
            // The head as it is now, under the stripe: the cursor reads the
            // leaf slot again (or looks the key up when the leaf changed).
            sweepChain(*coll, c.key(), static_cast<mvcc::Update*>(c.value()), h);
            if (leftWork(static_cast<const mvcc::Update*>(c.value())))
                clean = false;
        }
    }
    return clean;
}

void HistorySweeper::pass(bool mayskipWalk) {
    std::lock_guard passLock(passMutex_);
    // Taken before the walk: a write after this notes work for the next one.
    // A key the walk finds clean (one version, not a deletion) becomes
    // unclean only through such a write.
    const bool noted = workNoted_.exchange(false, std::memory_order_acq_rel);
#if !defined(__SANITIZE_THREAD__)
    std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with noteWork's
#endif
    const bool walk = !mayskipWalk || noted || !lastWalkClean_;
    if (!walk)
        walksSkipped_.fetch_add(1, std::memory_order_relaxed);
    mvcc::Horizon h = refreshHorizon(true);
    if (passTestHook_) [[unlikely]]
        passTestHook_();
    uint32_t maxId = 0;
    std::vector<std::shared_ptr<Collection>> colls = catalog_.all(&maxId);
    std::unordered_set<uint32_t> live;
    for (const auto& c : colls)
        live.insert(c->id());
    if (walk)
        lastWalkClean_ = sweepChains(colls, h);
    // Collections created after the list was taken have larger ids.
    size_t discarded = history_.discardObsolete(
        h, [&](uint32_t id) { return id <= maxId && live.count(id) == 0; });
    discarded_.fetch_add(discarded, std::memory_order_relaxed);
    passes_.fetch_add(1, std::memory_order_relaxed);
    epochs_.reclaim();
}

SweepStats HistorySweeper::stats() const {
    SweepStats s;
    s.passes = passes_.load(std::memory_order_relaxed);
    s.keySweeps = keySweeps_.load(std::memory_order_relaxed);
    s.walksSkipped = walksSkipped_.load(std::memory_order_relaxed);
    s.versionsMoved = moved_.load(std::memory_order_relaxed);
    s.versionsFreed = freed_.load(std::memory_order_relaxed);
    s.keysRemoved = keysRemoved_.load(std::memory_order_relaxed);
    s.historyDiscarded = discarded_.load(std::memory_order_relaxed);
    return s;
}

}  // namespace mvkv::engine
