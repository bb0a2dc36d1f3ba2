// EpochManager: epoch-based memory reclamation for lock-free readers.
//
// A reader that walks a shared structure without locks (the B+tree, update
// chains) cannot know when a writer unlinks the node it is looking at. So
// writers do not free what they unlink: they retire() it, and the manager
// frees it only once no reader that might still hold a pointer to it remains.
// A reader announces itself with pin(), which returns a Guard:
//
//     auto guard = epochs.pin();        // enter: cheap, no mutex
//     Node* n = shared.load();          // n stays allocated while guard lives
//     ...
//     // writer elsewhere: unlink(n); epochs.retire(n, &freeNode);
//
// How it works (the classic scheme of Fraser, as in crossbeam-epoch): a global
// epoch counter; each thread's pin publishes the epoch it saw; an object is
// tagged with the global epoch when it is retired; the global epoch advances
// only when every pinned thread has seen the current one, and an object tagged
// e is freed once the global epoch reaches e + 2. Any guard that could have
// seen the object keeps the epoch from getting there.
//
// Pin fences: publishing the pin must be ordered before the reads it
// protects (a StoreLoad fence). By default the fence is asymmetric
// (util/process_barrier.h): pin() is a plain store and a reclaimer that finds
// a thread unpinned runs one process-wide barrier before it trusts that, so
// the cost moves from every read to the rare reclaim. Where the kernel lacks
// membarrier, and under ThreadSanitizer (which cannot see it), pin() uses a
// full fence instead. Before a barrier the reclaimer parks every owned
// record, so a thread that stays idle costs no further barriers; a thread's
// next pin after that takes a full fence once and unparks it.
//
// Contract:
// - Thread safety: every method may be called from any thread concurrently.
//   Per-thread state is registered lazily on a thread's first pin()/retire()
//   for this manager and is released when the thread exits; a record released
//   by an exited thread is reused by the next new thread. Threads may exit
//   before or after the manager is destroyed.
// - Guard: RAII, movable, not copyable. Pins nest: a thread may hold several
//   guards of one manager at once (an inner pin costs a thread-local lookup and
//   an increment). A guard must be destroyed on the thread that made it and
//   before the manager.
// - retire(p, deleter): the manager takes ownership of p and calls deleter(p)
//   exactly once, on some thread, later: from reclaim(), from a later retire()
//   (every kReclaimEvery retirements a thread tries to reclaim, so memory stays
//   bounded under steady churn), or from the destructor. p must already be
//   unreachable for readers that pin after the retire() call. Deleters run
//   with no lock held but must not call back into this manager.
// - A thread that keeps a guard forever keeps everything retired after its pin
//   from being freed: guards belong around one operation, not a session.
// - The destructor frees everything still retired; no guard may be alive and
//   no other thread may be using the manager then.
// - reclaimIfFree() (and a retire's own reclaim) is for hot paths: besides
//   never waiting for the mutex, only every kBarrierEvery-th of the tries
//   that need the process-wide barrier (counted over all threads) runs it
//   (twice at most, once per epoch advance); the others free only what is safe
//   already. reclaim() runs it whenever it needs it: a system call that
//   interrupts every CPU running this process, made under the manager's
//   mutex (microseconds).
// - No errors: allocation failure is fatal, as elsewhere in mvkv, and so is
//   a failing membarrier after it registered (process_barrier.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace mvkv {

class EpochManager {
  public:
    /// A thread tries to advance the epoch and free memory after this many
    /// retirements of its own.
    static constexpr size_t kReclaimEvery = 64;
    /// reclaimIfFree() and a retire's own reclaim run the process-wide
    /// barrier on every this-many-th attempt that needs it.
    static constexpr uint32_t kBarrierEvery = 8;

    /// How pin() orders its announcement before the reads it protects.
    enum class PinFence {
        kAsymmetric,  // a plain store; reclaimers run process_barrier::heavy()
        kFull,        // an atomic exchange (a full fence) on every pin
    };
    /// kAsymmetric where process_barrier::available() and the build is not
    /// instrumented by ThreadSanitizer; kFull otherwise.
    static PinFence defaultPinFence();

    struct Record;  // one per (thread, manager); defined in epoch.cpp

    class Guard {
      public:
        Guard(Guard&& other) noexcept : record_(other.record_) { other.record_ = nullptr; }
        Guard& operator=(Guard&& other) noexcept;
        Guard(const Guard&) = delete;
        Guard& operator=(const Guard&) = delete;
        ~Guard() { release(); }
        /// Ends the critical section early (idempotent).
        void release();

      private:
        friend class EpochManager;
        explicit Guard(Record* record) : record_(record) {}
        Record* record_;
    };

    /// kAsymmetric falls back to kFull where the default is kFull; pinFence()
    /// tells which one the manager uses.
    explicit EpochManager(PinFence fence = defaultPinFence());
    ~EpochManager();
    EpochManager(const EpochManager&) = delete;
    EpochManager& operator=(const EpochManager&) = delete;

    /// Enters a critical section on the calling thread: nothing retired after
    /// this call is freed until the returned guard (and any enclosing one) ends.
    [[nodiscard]] Guard pin();

    /// Frees p with deleter(p) once no guard that could have seen p remains.
    void retire(void* p, void (*deleter)(void*));

    /// retire() with `delete p`.
    template <class T>
    void retireObject(T* p) {
        retire(p, [](void* q) { delete static_cast<T*>(q); });
    }

    /// Collects every thread's retired objects, advances the epoch as far as
    /// the live guards allow and frees what is safe. Returns how many were freed.
    size_t reclaim();
    /// reclaim() unless another thread is reclaiming now, in which case it
    /// returns 0 at once (for hot paths that must not wait on its mutex).
    size_t reclaimIfFree() { return tryReclaim(/*wait=*/false); }

    /// Retired and not yet freed.
    size_t pendingCount() const { return pending_.load(std::memory_order_relaxed); }

    PinFence pinFence() const { return asymmetric_ ? PinFence::kAsymmetric : PinFence::kFull; }

    /// Process-wide barriers run so far (for tests and stats).
    uint64_t barriersRun() const { return barriersRun_.load(std::memory_order_relaxed); }

    /// The current global epoch (for tests and stats).
    uint64_t epoch() const { return globalEpoch_.load(std::memory_order_relaxed); }

  private:
    struct Retired {
        void* p;
        void (*deleter)(void*);
        uint64_t epoch;  // global epoch when retired
    };

    friend struct ThreadRecords;
    Record* recordForThisThread();
    Record* registerThisThread();
    // The calling thread is exiting: hand its record and retired objects back.
    void releaseRecord(Record* record);
    // Advances the global epoch while every pinned thread has seen it (at most
    // twice) and moves what is then safe into `out`. Requires mutex_.
    void collectSafeLocked(std::vector<Retired>& out, bool wait);
    // One reading of every record: may the epoch move from g (each record
    // unpinned or pinned at g), is a record pinned elsewhere, or does an
    // owned record read unpinned, which only a process-wide barrier and a
    // second reading can confirm (asymmetric pins). Requires mutex_.
    enum class Scan { kMayAdvance, kBlocked, kUnsure };
    Scan scanLocked(uint64_t g) const;
    size_t freeAll(std::vector<Retired>& items);
    size_t tryReclaim(bool wait);

    const uint64_t id_;  // unique over the process lifetime, unlike `this`
    const bool asymmetric_;  // PinFence::kAsymmetric
    std::atomic<uint64_t> globalEpoch_{1};
    std::atomic<size_t> pending_{0};

    mutable std::mutex mutex_;
    std::vector<Record*> records_;  // GUARDED_BY(mutex_); never shrinks before ~EpochManager
    std::vector<Retired> retired_;  // GUARDED_BY(mutex_); collected from threads
    uint32_t barriersSkipped_ = 0;  // GUARDED_BY(mutex_); see kBarrierEvery
    std::atomic<uint64_t> barriersRun_{0};  // written under mutex_
};

}  // namespace mvkv
