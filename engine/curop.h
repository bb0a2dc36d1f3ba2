// CurOp: the operation a Session is running now, as MongoDB's CurOp shows it
// to currentOp, killOp, the slow-op log and the profiler.
//
// Every Session owns one CurOp and reuses it for each operation, so starting
// an operation allocates nothing and touches no shared cache line: the owner
// writes the description (op, command, ns, key) while the CurOp is idle,
// then publishes it with one release store; counters are relaxed atomics
// only the owner writes. Another thread (currentOp, killOp) reads a running
// operation by moving its state from active to reading; the owner's end()
// waits out such a read before the description's views (the caller's ns and
// key) go out of scope. Opids are handed out lazily, the first time anybody
// asks for one (a reader, a `bg` command, the slow-op log), from one engine
// counter: unique and increasing in the order they are handed out, and the
// hot path never touches that counter.
//
// Thread safety: begin()/end()/setters on the owner thread only; snapshot()
// and the kill path from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "mvcc/timestamp.h"

namespace mvkv::engine {

/// MongoDB's operation types ("op" in currentOp and the profiler).
enum class CurOpType : uint8_t { kNone, kQuery, kGetMore, kInsert, kUpdate, kRemove, kCommand };
std::string_view curOpTypeName(CurOpType t);

/// The live counters of one operation.
struct OpCounters {
    uint64_t keysExamined = 0;
    uint64_t docsExamined = 0;
    uint64_t nreturned = 0;
    uint64_t numYields = 0;
    uint64_t writeConflicts = 0;
    uint64_t prepareConflicts = 0;
    uint64_t keysInserted = 0;
    uint64_t keysDeleted = 0;
};

/// A copy of what an operation is doing, made by snapshot().
struct OpSnapshot {
    uint64_t opid = 0;
    CurOpType op = CurOpType::kNone;
    std::string command;  // "find", "insert", "getMore", "drop", ...
    std::string ns;
    std::string key;     // printable
    std::string keyEnd;  // printable; a range's end when hasRange
    bool hasRange = false;
    std::string valuePrefix;  // printable, at most kValuePrefixBytes of the value
    uint64_t valueBytes = 0;
    bool hasValue = false;
    int64_t startMicros = 0;  // on the engine's operation clock
    OpCounters counters;
};

class CurOp {
  public:
    static constexpr size_t kValuePrefixBytes = 16;

    CurOp() = default;
    CurOp(const CurOp&) = delete;
    CurOp& operator=(const CurOp&) = delete;

    // ---- owner thread ----

    /// What an operation is, as begin() takes it. The views must stay
    /// valid until end(): they are the caller's arguments, copied only when
    /// somebody reads the operation. keyEnd is read only when hasRange,
    /// value only when hasValue.
    struct Description {
        Description() = default;
        Description(CurOpType o, std::string_view c, std::string_view n = {},
                    std::string_view k = {})
            : op(o), command(c), ns(n), key(k) {}
        CurOpType op = CurOpType::kNone;
        bool hasRange = false;
        bool hasValue = false;
        std::string_view command;
        std::string_view ns;
        std::string_view key;
        std::string_view keyEnd;
        std::string_view value;
    };

    /// Starts an operation (publishes `d` with one release store) that
    /// began at `startNanos` on the engine's operation clock (OpClock).
    /// `opid` 0: handed out when first asked for.
    [[gnu::always_inline]] void begin(const Description& d, int64_t startNanos, uint64_t opid = 0) {
        // Field by field: a point operation stores neither keyEnd nor value
        // (nobody reads them without their flag).
        d_.op = d.op;
        d_.hasRange = d.hasRange;
        d_.hasValue = d.hasValue;
        d_.command = d.command;
        d_.ns = d.ns;
        d_.key = d.key;
        if (d.hasRange)
            d_.keyEnd = d.keyEnd;
        if (d.hasValue)
            d_.value = d.value;
        startNanos_ = startNanos;
        opid_.store(opid, std::memory_order_relaxed);
        killed_.store(false, std::memory_order_relaxed);
        state_.store(kActive, std::memory_order_release);
    }
    /// Ends the operation: waits for a reader that is copying it, then
    /// clears the counters for the next one (if it counted anything).
    [[gnu::always_inline]] void end() {
        uint32_t expected = kActive;
        if (!state_.compare_exchange_strong(expected, kIdle, std::memory_order_acq_rel))
            [[unlikely]]
            endSlow();
        if (counted_) {
            resetCounters();
            counted_ = false;
        }
    }
    bool active() const { return state_.load(std::memory_order_relaxed) != kIdle; }

    [[gnu::always_inline]] void add(std::atomic<uint64_t>& c, uint64_t n = 1) {
        c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
        counted_ = true;
    }
    /// What a point read (get) found, for counters it adds later
    /// (OpScope::countPointRead).
    enum class PointRead : uint8_t { kNone, kMissed, kFound };
    /// A point read's counters: one key examined and, when it `found` a
    /// value, one document examined and returned.
    [[gnu::always_inline]] void addPointRead(bool found) {
        add(keysExamined);
        if (found) {
            add(docsExamined);
            add(nreturned);
        }
    }
    std::atomic<uint64_t> keysExamined{0};
    std::atomic<uint64_t> docsExamined{0};
    std::atomic<uint64_t> nreturned{0};
    std::atomic<uint64_t> numYields{0};
    std::atomic<uint64_t> writeConflicts{0};
    std::atomic<uint64_t> prepareConflicts{0};
    std::atomic<uint64_t> keysInserted{0};
    std::atomic<uint64_t> keysDeleted{0};
    OpCounters counters() const;

    int64_t startNanos() const { return startNanos_; }
    /// The running operation's namespace (a view of begin()'s argument).
    std::string_view ns() const { return d_.ns; }
    /// The owner's full copy (for the slow-op log and the profiler).
    OpSnapshot ownSnapshot(std::atomic<uint64_t>& opidCounter);

    // ---- any thread ----

    /// A copy of the running operation; nullopt when idle. `whileRunning`
    /// runs while the operation cannot end (for what its owner keeps
    /// elsewhere: its lock counters).
    template <typename F>
    std::optional<OpSnapshot> snapshot(std::atomic<uint64_t>& opidCounter, F&& whileRunning) {
        if (!lockForRead())
            return std::nullopt;
        OpSnapshot s = copy();
        s.opid = ensureOpid(opidCounter);
        whileRunning();
        unlockRead();
        return s;
    }
    std::optional<OpSnapshot> snapshot(std::atomic<uint64_t>& opidCounter) {
        return snapshot(opidCounter, [] {});
    }
    /// If the running operation has opid `opid`: marks it killed and runs
    /// `interrupt` while it cannot end, and returns true.
    template <typename F>
    bool killIf(uint64_t opid, F&& interrupt) {
        if (!lockForRead())
            return false;
        bool match = opid_.load(std::memory_order_acquire) == opid;
        if (match) {
            killed_.store(true, std::memory_order_release);
            interrupt();
        }
        unlockRead();
        return match;
    }
    /// Owner thread: the operation was killed before it began (a killOp of
    /// the opid its session had reserved for it).
    void markKilled() { killed_.store(true, std::memory_order_release); }
    /// The current operation was the target of killOp.
    bool killed() const { return killed_.load(std::memory_order_acquire); }

  private:
    static constexpr uint32_t kIdle = 0, kActive = 1, kReading = 2;
    void endSlow();
    [[gnu::always_inline]] void resetCounters() {
        // Plain stores, no loop: this runs at the end of every operation.
        keysExamined.store(0, std::memory_order_relaxed);
        docsExamined.store(0, std::memory_order_relaxed);
        nreturned.store(0, std::memory_order_relaxed);
        numYields.store(0, std::memory_order_relaxed);
        writeConflicts.store(0, std::memory_order_relaxed);
        prepareConflicts.store(0, std::memory_order_relaxed);
        keysInserted.store(0, std::memory_order_relaxed);
        keysDeleted.store(0, std::memory_order_relaxed);
    }
    bool lockForRead();
    void unlockRead() { state_.store(kActive, std::memory_order_release); }
    uint64_t ensureOpid(std::atomic<uint64_t>& opidCounter);
    OpSnapshot copy() const;

    std::atomic<uint32_t> state_{kIdle};
    std::atomic<uint64_t> opid_{0};
    std::atomic<bool> killed_{false};
    bool counted_ = false;  // owner only: a counter is not zero
    // Written by the owner while idle, read by others only while active.
    Description d_;
    int64_t startNanos_ = 0;
};

}  // namespace mvkv::engine
