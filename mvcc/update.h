// Update and UpdateChain: the versions of one key, newest first.
//
// An Update is written once by its transaction before it is published with a
// compare-and-swap on the chain head; after that only `state`, `startTs` and
// `durableTs` change (at commit or abort), each an atomic, so readers walk a
// chain without any lock. The value bytes live inline after the header: one
// allocation per version.
//
// Ownership: a chain owns its updates; destroying the chain frees them all.
// Callers must ensure no reader still walks a chain being destroyed (the
// engine retires chains through its EpochManager).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "mvcc/timestamp.h"

namespace mvkv::mvcc {

enum class UpdateState : uint8_t {
    kUncommitted,  // its transaction is still running
    kCommitted,
    kAborted,  // ignored by readers and by conflict checks
};

class Update {
  public:
    /// Allocates an uncommitted update holding a copy of `value` (ignored for
    /// a tombstone). Free with destroy().
    static Update* make(TxnId txnId, bool tombstone, std::string_view value);
    static void destroy(Update* update);

    TxnId txnId() const { return txnId_; }
    bool isTombstone() const { return tombstone_; }
    std::string_view value() const { return {data(), size_}; }

    UpdateState state() const { return state_.load(std::memory_order_acquire); }
    /// The commit timestamp; meaningful once state() is kCommitted.
    Timestamp startTs() const { return startTs_.load(std::memory_order_relaxed); }
    Timestamp durableTs() const { return durableTs_.load(std::memory_order_relaxed); }

    /// Called by the owning transaction at commit: timestamps first, then the
    /// state with release order so a reader that sees kCommitted sees them.
    void markCommitted(Timestamp start, Timestamp durable) {
        startTs_.store(start, std::memory_order_relaxed);
        durableTs_.store(durable, std::memory_order_relaxed);
        state_.store(UpdateState::kCommitted, std::memory_order_release);
    }
    void markAborted() { state_.store(UpdateState::kAborted, std::memory_order_release); }

    /// The next older update; immutable once published.
    Update* next() const { return next_; }

    /// Bytes this update holds in memory (header and value).
    size_t footprint() const { return sizeof(Update) + size_; }

  private:
    friend class UpdateChain;
    Update(TxnId txnId, bool tombstone, uint32_t size)
        : txnId_(txnId), size_(size), tombstone_(tombstone) {}
    const char* data() const { return reinterpret_cast<const char*>(this + 1); }
    char* data() { return reinterpret_cast<char*>(this + 1); }

    Update* next_ = nullptr;
    const TxnId txnId_;
    std::atomic<Timestamp> startTs_{kNoTimestamp};
    std::atomic<Timestamp> durableTs_{kNoTimestamp};
    const uint32_t size_;
    std::atomic<UpdateState> state_{UpdateState::kUncommitted};
    const bool tombstone_;
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

/// The versions of one key. Readers call head() and follow next(); writers
/// call tryPrepend().
class UpdateChain {
  public:
    UpdateChain() = default;
    ~UpdateChain();
    UpdateChain(const UpdateChain&) = delete;
    UpdateChain& operator=(const UpdateChain&) = delete;

    Update* head() const { return head_.load(std::memory_order_acquire); }

    /// Publishes `update` as the newest version if the head is still
    /// `expected`; false (and nothing changed) otherwise. The caller re-checks
    /// for conflicts against the new head and tries again.
    bool tryPrepend(Update* expected, Update* update) {
        update->next_ = expected;
        return head_.compare_exchange_strong(expected, update, std::memory_order_release,
                                             std::memory_order_acquire);
    }

    /// Number of updates and bytes held, by walking the chain.
    size_t length() const;
    size_t footprint() const;

  private:
    std::atomic<Update*> head_{nullptr};
};

}  // namespace mvkv::mvcc
