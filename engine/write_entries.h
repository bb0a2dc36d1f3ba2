// addWriteEntries: the oplog entries of a transaction's writes, in write
// order (docs/oplog.md, "A commit"; a prepare record holds the same).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "mvcc/transaction.h"
#include "oplog/oplog_entry.h"

namespace mvkv::engine {

/// Appends one entry per write to `payload` (begun with
/// oplog::startPayload), at `ts` with transaction id `txnId`. `pending[i]`
/// is write i's collection, key and oplog op (Session's PendingWrite).
template <class Pending>
void addWriteEntries(std::string* payload, mvcc::Timestamp ts, mvcc::TxnId txnId,
                     const std::vector<mvcc::WriteRecord>& writes,
                     const std::vector<Pending>& pending) {
    for (size_t i = 0; i < writes.size(); ++i) {
        const mvcc::Update* u = writes[i].update;
        const bool tombstone = u->isTombstone();
        oplog::addEntry(payload, ts, txnId,
                        tombstone ? oplog::OpType::kDelete
                                  : static_cast<oplog::OpType>(pending[i].op),
                        pending[i].collection->ns().ns(), pending[i].key,
                        tombstone ? std::string_view() : u->value());
    }
}

}  // namespace mvkv::engine
