// readVisibleValue: what a transaction reads for one key — the newest
// version it can see in the key's chain or, when the chain has none and its
// older versions were moved out, in the history store. The one read rule of
// point reads and cursors.
#pragma once

#include <string_view>

#include "historystore/history_store.h"
#include "mvcc/transaction.h"
#include "mvcc/update.h"

namespace mvkv::engine {

/// True and `*value` set when `txn` sees a live value of the key whose chain
/// starts at `head` (null: the key is not in the tree); false when it sees
/// nothing or a deletion. The caller pins the engine's EpochManager for as
/// long as it uses `*value`.
/// `reader()` returns the caller's HistoryStore::Reader; it is called only
/// when the history store must be read. `*startTs` (may be null) gets the
/// version's commit timestamp (kNoTimestamp for the reader's own write).
/// `*prepared` is set (and false returned) when the version the reader
/// would see is prepared (docs/mvcc.md, "Prepared transactions"): the
/// caller returns PrepareConflict or waits; it is left alone otherwise.
template <class ReaderFn>
inline bool readVisibleValue(const mvcc::Update* head, const mvcc::Transaction& txn,
                             const historystore::HistoryStore& history, ReaderFn&& reader,
                             uint32_t collection, std::string_view key, std::string_view* value,
                             const mvcc::Update** prepared, mvcc::Timestamp* startTs = nullptr) {
    bool lookInHistory = false;
    if (const mvcc::Update* u = txn.findVisible(head, &lookInHistory, prepared)) {
        if (u->isTombstone())
            return false;
        *value = u->value();
        if (startTs)
            *startTs = u->state() == mvcc::UpdateState::kCommitted ? u->startTs()
                                                                  : mvcc::kNoTimestamp;
        return true;
    }
    if (!lookInHistory)
        return false;
    const historystore::HistoryEntry* e = history.findVisible(reader(), collection, key, txn);
    if (!e || e->tombstone)
        return false;
    *value = e->value();
    if (startTs)
        *startTs = e->startTs;
    return true;
}

}  // namespace mvkv::engine
