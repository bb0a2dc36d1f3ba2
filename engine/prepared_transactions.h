// PreparedTransactions: the engine's table of prepared transactions
// (docs/mvcc.md, "Prepared transactions") — the ones a session prepared and
// the ones recovery rebuilt from the oplog, which no client session owns
// (the table owns an engine session for each until it is committed or
// aborted by its id) — and the condition implicit readers wait on for a
// prepared transaction to resolve.
//
// Thread safety: every method from any thread (one internal mutex).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "mvcc/timestamp.h"

namespace mvkv::engine {

class Session;

/// One prepared transaction, as currentOp and Engine::preparedTransactions
/// show it.
struct PreparedTxnInfo {
    mvcc::TxnId txnId = mvcc::kNoTxnId;  // the id it was prepared (and logged) with
    mvcc::Timestamp prepareTs = mvcc::kNoTimestamp;
    mvcc::Timestamp readTs = mvcc::kNoTimestamp;
    uint64_t sessionId = 0;  // the session that prepared it; 0: owned by the engine (recovered, or its session closed)
    uint64_t writes = 0;
};

class PreparedTransactions {
  public:
    PreparedTransactions();
    ~PreparedTransactions();
    PreparedTransactions(const PreparedTransactions&) = delete;
    PreparedTransactions& operator=(const PreparedTransactions&) = delete;

    void add(const PreparedTxnInfo& info);
    /// The transaction was committed or aborted: it leaves the table and
    /// every waiter wakes (resolvedCount() moves).
    void resolved(mvcc::TxnId id);
    std::vector<PreparedTxnInfo> list() const;

    /// How many prepared transactions resolved so far: read it before a
    /// read that may meet a prepared version, then waitResolvedAfter().
    uint64_t resolvedCount() const { return resolvedCount_.load(std::memory_order_acquire); }
    /// Waits until resolvedCount() != `seen` (true) or `interrupted` is
    /// set (false); whoever sets it calls wakeAll() afterwards.
    bool waitResolvedAfter(uint64_t seen, const std::atomic<bool>& interrupted);
    /// Wakes every waiter (a killOp: Session::interrupt).
    void wakeAll();

    /// A recovered transaction's session, or the one a closing session
    /// handed its prepared transaction to, owned here until taken.
    void adopt(mvcc::TxnId id, std::unique_ptr<Session> session);
    /// Takes the recovered session of `id` (null when there is none: not
    /// recovered, resolved, or being resolved by another caller).
    std::unique_ptr<Session> take(mvcc::TxnId id);
    /// Gives a taken session back (its commit was refused: still prepared).
    void giveBack(mvcc::TxnId id, std::unique_ptr<Session> session);
    /// Ends the recovered sessions at close: their transactions are rolled
    /// back in memory only (the log keeps them prepared for the next open).
    void dropRecovered();

  private:
    mutable std::mutex mutex_;
    std::condition_variable resolvedCv_;
    // Atomic so that every implicit read can take it without the mutex (it
    // did, and all readers met on one lock); changed under the mutex, so a
    // waiter checking it under the mutex cannot miss the change.
    std::atomic<uint64_t> resolvedCount_{0};
    std::vector<PreparedTxnInfo> entries_;
    std::map<mvcc::TxnId, std::unique_ptr<Session>> recovered_;
};

}  // namespace mvkv::engine
