#include "engine/prepared_transactions.h"

#include <algorithm>

#include "engine/session.h"

namespace mvkv::engine {

PreparedTransactions::PreparedTransactions() = default;

PreparedTransactions::~PreparedTransactions() {
    dropRecovered();
}

void PreparedTransactions::add(const PreparedTxnInfo& info) {
    std::lock_guard lock(mutex_);
    entries_.push_back(info);
}

void PreparedTransactions::resolved(mvcc::TxnId id) {
    {
        std::lock_guard lock(mutex_);
        std::erase_if(entries_, [&](const PreparedTxnInfo& e) { return e.txnId == id; });
        // Release: a reader that sees the new count sees the transaction's
        // versions resolved (they were marked before this call).
        resolvedCount_.fetch_add(1, std::memory_order_release);
    }
    resolvedCv_.notify_all();
}

std::vector<PreparedTxnInfo> PreparedTransactions::list() const {
    std::lock_guard lock(mutex_);
    return entries_;
}

bool PreparedTransactions::waitResolvedAfter(uint64_t seen, const std::atomic<bool>& interrupted) {
    std::unique_lock lock(mutex_);
    resolvedCv_.wait(lock, [&] {
        return resolvedCount_.load(std::memory_order_relaxed) != seen ||
               interrupted.load(std::memory_order_acquire);
    });
    return resolvedCount_.load(std::memory_order_relaxed) != seen;
}

void PreparedTransactions::wakeAll() {
    // Under the mutex: a waiter between its check and its sleep cannot miss it.
    { std::lock_guard lock(mutex_); }
    resolvedCv_.notify_all();
}

void PreparedTransactions::adopt(mvcc::TxnId id, std::unique_ptr<Session> session) {
    std::lock_guard lock(mutex_);
    recovered_[id] = std::move(session);
    for (PreparedTxnInfo& e : entries_) {
        if (e.txnId == id)
            e.sessionId = 0;  // its session closed: the engine owns it now
    }
}

std::unique_ptr<Session> PreparedTransactions::take(mvcc::TxnId id) {
    std::lock_guard lock(mutex_);
    auto it = recovered_.find(id);
    if (it == recovered_.end())
        return nullptr;
    std::unique_ptr<Session> s = std::move(it->second);
    recovered_.erase(it);
    return s;
}

void PreparedTransactions::giveBack(mvcc::TxnId id, std::unique_ptr<Session> session) {
    adopt(id, std::move(session));
}

void PreparedTransactions::dropRecovered() {
    std::map<mvcc::TxnId, std::unique_ptr<Session>> sessions;
    {
        std::lock_guard lock(mutex_);
        sessions.swap(recovered_);
    }
    for (auto& [id, session] : sessions)
        session->abandonPrepared();
    sessions.clear();
}

}  // namespace mvkv::engine
