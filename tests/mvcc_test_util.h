// Helpers shared by the mvcc test suites.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "mvcc/timestamp.h"
#include "mvcc/transaction.h"
#include "mvcc/txn_manager.h"
#include "mvcc/update.h"
#include "tests/status_check.h"
#include "util/status.h"

namespace mvkv::mvcc::testing {

/// A stand-in for a collection: one update chain per key, owned by the test.
/// Create every key a test's threads use before the threads start.
class Collection {
  public:
    UpdateChain& create(const std::string& key) {
        auto& chain = chains_[key];
        if (!chain)
            chain = std::make_unique<UpdateChain>();
        return *chain;
    }
    UpdateChain& operator[](const std::string& key) { return create(key); }
    /// Lookup only: safe while other threads use the map.
    UpdateChain& at(const std::string& key) const { return *chains_.at(key); }

  private:
    std::map<std::string, std::unique_ptr<UpdateChain>> chains_;
};

inline bool contains(const std::string& haystack, std::string_view needle) {
    return haystack.find(needle) != std::string::npos;
}

/// What `txn` reads from `chain`: the value, or nullopt when the key is absent
/// for it (no visible version, or a visible tombstone).
inline std::optional<std::string> read(const Transaction& txn, const UpdateChain& chain) {
    const Update* u = txn.findVisible(chain);
    if (!u || u->isTombstone())
        return std::nullopt;
    return std::string(u->value());
}

inline Status put(TransactionManager& mgr, Transaction& txn, UpdateChain& chain,
                  std::string_view value) {
    return mgr.write(txn, chain, WriteKind::kValue, value, 0);
}

inline Status remove(TransactionManager& mgr, Transaction& txn, UpdateChain& chain) {
    return mgr.write(txn, chain, WriteKind::kTombstone, {}, 0);
}

/// Commits one write to `chain` in a transaction of its own, at `ts` (the
/// clock's timestamp when ts is kNoTimestamp); returns the commit timestamp.
inline Timestamp commitWrite(TransactionManager& mgr, UpdateChain& chain, WriteKind kind,
                             std::string_view value, Timestamp ts = kNoTimestamp) {
    Transaction t;
    REQUIRE_OK(mgr.begin(t));
    REQUIRE_OK(mgr.write(t, chain, kind, value, 0));
    if (ts == kNoTimestamp)
        REQUIRE_OK(mgr.commit(t));
    else
        REQUIRE_OK(mgr.commit(t, ts));
    REQUIRE(t.state() == TxnState::kCommitted);
    return t.commitTs();
}

inline Timestamp commitValue(TransactionManager& mgr, UpdateChain& chain, std::string_view value,
                             Timestamp ts = kNoTimestamp) {
    return commitWrite(mgr, chain, WriteKind::kValue, value, ts);
}

inline Timestamp commitTombstone(TransactionManager& mgr, UpdateChain& chain,
                                 Timestamp ts = kNoTimestamp) {
    return commitWrite(mgr, chain, WriteKind::kTombstone, {}, ts);
}

/// Begin options reading at `readTs` (rounded up to oldest when `roundUp`).
inline BeginOptions at(Timestamp readTs, bool roundUp = false) {
    BeginOptions o;
    o.readTs = readTs;
    o.roundUpReadTs = roundUp;
    return o;
}

}  // namespace mvkv::mvcc::testing
