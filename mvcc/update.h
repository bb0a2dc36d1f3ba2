// Update and UpdateChain: the versions of one key, newest first.
//
// An Update is written once by its transaction before it is published with a
// compare-and-swap on the chain head; after that only `state` and `startTs`
// change (at commit or abort), each an atomic, so readers walk a
// chain without any lock. The value bytes live inline after the header: one
// allocation per version.
//
// Where the newest version lives is the caller's choice, behind VersionSlot:
// the engine keeps it in the key's B+tree leaf slot (so a point read goes
// leaf -> newest update, one dependent cache miss fewer than through a chain
// object of its own); UpdateChain is a stand-alone slot for the mvcc tests.
//
// Ownership: whoever owns the slot owns the updates below it and frees them
// with destroyVersions(). Callers must ensure no reader still walks versions
// being freed (the engine frees them with the collection, after its users).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "mvcc/timestamp.h"

namespace mvkv::mvcc {

enum class UpdateState : uint8_t {
    kUncommitted,  // its transaction is still running
    /// Its transaction is prepared (docs/mvcc.md, "Prepared transactions"):
    /// startTs is the prepare timestamp until commit. A reader that would
    /// see it gets a prepare conflict; a writer gets a write conflict.
    kPrepared,
    kCommitted,
    kAborted,  // ignored by readers and by conflict checks
};

class Update {
  public:
    /// Transaction ids an update can carry: 52 bits (the rest of its first
    /// word holds the state and flags). TransactionManager never hands out
    /// a larger one; 2^52 ids last 140 years at a million per second.
    static constexpr TxnId kMaxTxnId = (TxnId(1) << 52) - 1;

    /// Allocates an uncommitted update holding a copy of `value` (ignored for
    /// a tombstone). Free with destroy(). `txnId` <= kMaxTxnId.
    static Update* make(TxnId txnId, bool tombstone, std::string_view value);
    static void destroy(Update* update);

    TxnId txnId() const { return meta_.load(std::memory_order_relaxed) & kIdMask; }
    bool isTombstone() const {
        return (meta_.load(std::memory_order_relaxed) & kTombstoneBit) != 0;
    }
    std::string_view value() const { return {data(), size_}; }

    UpdateState state() const {
        return static_cast<UpdateState>((meta_.load(std::memory_order_acquire) >> kStateShift) &
                                        3);
    }
    /// The commit timestamp once state() is kCommitted; the prepare
    /// timestamp while it is kPrepared.
    Timestamp startTs() const { return startTs_.load(std::memory_order_relaxed); }
    // No durable timestamp: no read, sweep or checkpoint decision uses a
    // version's (all_durable is the transaction manager's), and it cost 8
    // bytes on every version of every key (docs/mvcc.md).

    /// Called by the owning transaction at commit: the timestamp first, then
    /// the state with release order so a reader that sees kCommitted sees it.
    void markCommitted(Timestamp start) {
        startTs_.store(start, std::memory_order_relaxed);
        setState(UpdateState::kCommitted);
    }
    /// Called by the owning transaction at prepare: the prepare timestamp
    /// first, then the state with release order.
    void markPrepared(Timestamp prepareTs) {
        startTs_.store(prepareTs, std::memory_order_relaxed);
        setState(UpdateState::kPrepared);
    }
    void markAborted() { setState(UpdateState::kAborted); }

    /// The next older update. Set before the update is published; after
    /// that only the history sweep changes it, and only to cut the chain
    /// below the newest committed version (truncateBelow).
    Update* next() const { return next_.load(std::memory_order_acquire); }

    /// Versions older than this one were moved to the history store: a
    /// reader that reaches this update without finding a visible version
    /// must look there. Set by the sweep before it cuts the chain below.
    bool olderInHistory() const {
        return (meta_.load(std::memory_order_acquire) & kOlderInHistoryBit) != 0;
    }

    /// How many versions were on the chain from this one down when it was
    /// published (saturating at 255): a cheap trigger for the sweep of long
    /// chains. The sweep resets it to 1 when it cuts below.
    unsigned depth() const {
        return static_cast<unsigned>(meta_.load(std::memory_order_relaxed) >> kDepthShift);
    }

    /// The sweep's correction of depth() after a cut, for this version and
    /// the ones above the cut (a trigger only: a racing writer may publish
    /// with the old figure, which a later sweep corrects again).
    void setDepth(unsigned depth) { update(kDepthMask, depthBits(depth), std::memory_order_relaxed); }

    /// The history sweep's cut: marks olderInHistory when asked (before the
    /// cut, so a reader that sees the shorter chain also sees the mark) and
    /// drops every older version from the chain. Readers still walking the
    /// dropped versions keep them alive through the engine's epochs. One
    /// sweeper per chain at a time.
    void truncateBelow(bool movedToHistory) {
        if (movedToHistory)
            meta_.fetch_or(kOlderInHistoryBit, std::memory_order_release);
        setDepth(1);
        next_.store(nullptr, std::memory_order_release);
    }

    /// Bytes this update holds in memory (header and value).
    size_t footprint() const { return allocationBytes(size_); }

  private:
    friend class VersionSlot;
    // meta_: the id, which never changes, and the fields that do (state,
    // the history mark, depth), one word, so that a version's header is 28
    // bytes: a version of a 100-byte value fits the arena's 128-byte class.
    // The mutable fields change with atomic read-modify-writes, as several
    // threads may change them at once (the owner's commit, the sweep).
    static constexpr uint64_t kIdMask = kMaxTxnId;
    static constexpr int kStateShift = 52;  // 2 bits: UpdateState
    static constexpr uint64_t kStateMask = uint64_t(3) << kStateShift;
    static constexpr uint64_t kTombstoneBit = uint64_t(1) << 54;
    static constexpr uint64_t kOlderInHistoryBit = uint64_t(1) << 55;
    static constexpr int kDepthShift = 56;  // 8 bits
    static constexpr uint64_t kDepthMask = uint64_t(0xff) << kDepthShift;
    // The value bytes start right after size_, inside the object's tail
    // padding (sizeof(Update) is 32, alignment 8): nothing copies an
    // Update, so the padding is ours.
    static constexpr size_t kHeaderBytes = 28;
    static size_t allocationBytes(size_t valueBytes) {
        return kHeaderBytes + valueBytes < sizeof(Update) ? sizeof(Update)
                                                          : kHeaderBytes + valueBytes;
    }

    static uint64_t depthBits(unsigned depth) {
        return uint64_t(depth < 255 ? depth : 255) << kDepthShift;
    }
    void update(uint64_t mask, uint64_t bits, std::memory_order order) {
        uint64_t old = meta_.load(std::memory_order_relaxed);
        while (!meta_.compare_exchange_weak(old, (old & ~mask) | bits, order,
                                            std::memory_order_relaxed)) {
        }
    }
    // Before the update is published nobody else touches meta_.
    void setDepthUnpublished(unsigned depth) {
        meta_.store((meta_.load(std::memory_order_relaxed) & ~kDepthMask) | depthBits(depth),
                    std::memory_order_relaxed);
    }
    void setState(UpdateState s) {
        update(kStateMask, uint64_t(s) << kStateShift, std::memory_order_release);
    }

    Update(TxnId txnId, bool tombstone, uint32_t size)
        : meta_((txnId & kIdMask) | (tombstone ? kTombstoneBit : 0) | depthBits(1)),
          size_(size) {}
    const char* data() const { return reinterpret_cast<const char*>(this) + kHeaderBytes; }
    char* data() { return reinterpret_cast<char*>(this) + kHeaderBytes; }

    std::atomic<Update*> next_{nullptr};
    std::atomic<uint64_t> meta_;
    std::atomic<Timestamp> startTs_{kNoTimestamp};
    const uint32_t size_;
};

/// The newest version below `u` that another transaction wrote and did not
/// abort: the version `u` replaced (null when `u` created the key). Stable
/// while `u` is on the chain: nobody writes under an uncommitted update.
inline const Update* supersededVersion(const Update* u, TxnId self) {
    for (const Update* p = u->next(); p; p = p->next()) {
        if (p->txnId() != self && p->state() != UpdateState::kAborted)
            return p;
    }
    return nullptr;
}

/// Number of versions from `head` down, and the bytes they hold.
size_t chainLength(const Update* head);
size_t chainFootprint(const Update* head);
/// Frees `head` and every version below it.
void destroyVersions(Update* head);

/// Where the versions of one key start: the writer's view of a chain.
/// TransactionManager::write() reads head() and publishes with tryPrepend().
/// An implementation is used by one thread at a time; the head it stands for
/// is shared, and tryPrepend() is its only writer.
class VersionSlot {
  public:
    /// The newest version (null: the key has none), as of this slot's last
    /// look: construction or a failed tryPrepend().
    virtual Update* head() const = 0;

    /// Publishes `update` as the newest version if the head is still
    /// `expected` (head()); false otherwise, nothing changed, and head() now
    /// returns the current one. The caller re-checks for conflicts against
    /// it and tries again.
    virtual bool tryPrepend(Update* expected, Update* update) = 0;

  protected:
    ~VersionSlot() = default;
    static void linkAbove(Update* update, Update* next) {
        update->next_.store(next, std::memory_order_relaxed);  // published by the caller's CAS
        unsigned below = next ? next->depth() : 0;
        update->setDepthUnpublished(below + 1);
    }
};

/// A stand-alone VersionSlot: one atomic head, owning its versions.
class UpdateChain final : public VersionSlot {
  public:
    UpdateChain() = default;
    ~UpdateChain() { destroyVersions(head()); }
    UpdateChain(const UpdateChain&) = delete;
    UpdateChain& operator=(const UpdateChain&) = delete;

    Update* head() const override { return head_.load(std::memory_order_acquire); }

    bool tryPrepend(Update* expected, Update* update) override {
        linkAbove(update, expected);
        return head_.compare_exchange_strong(expected, update, std::memory_order_release,
                                             std::memory_order_acquire);
    }

    size_t length() const { return chainLength(head()); }
    size_t footprint() const { return chainFootprint(head()); }

  private:
    std::atomic<Update*> head_{nullptr};
};

}  // namespace mvkv::mvcc
