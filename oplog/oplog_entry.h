// OplogEntry: one write as the oplog records it, MongoDB's shape: {ts, txn
// id, op (i insert, u update, d delete, c command), ns, key, value}. A
// committed transaction's entries share its commit timestamp and travel in
// one log record, so replay applies all of them or none.
//
// Record payload (little-endian): entry count (u32), then per entry: ts
// (u64), txn id (u64), op (one byte: 'i', 'u', 'd' or 'c'), then ns, key and
// value, each a u32 length and the bytes. `value` is the full post-image for
// i and u, empty for d; for c it names the command ("create", "drop",
// "dropDatabase") and ns its target.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mvcc/timestamp.h"
#include "util/status.h"

namespace mvkv::oplog {

enum class OpType : char { kInsert = 'i', kUpdate = 'u', kDelete = 'd', kCommand = 'c' };

struct OplogEntry {
    mvcc::Timestamp ts = mvcc::kNoTimestamp;
    mvcc::TxnId txnId = mvcc::kNoTxnId;
    OpType op = OpType::kInsert;
    std::string ns;
    std::string key;
    std::string value;

    bool operator==(const OplogEntry&) const = default;
};

// Sizes of the payload encoding. They mirror startPayload and addEntry in
// oplog_entry.cpp (change them together): readers bound a count or a length
// with them before reading, so one too large refuses valid records and one
// too small lets garbage pass the bound.
/// startPayload: the entry count (u32).
inline constexpr size_t kPayloadHeaderBytes = 4;
/// addEntry of an entry whose ns, key and value are all empty: ts (u64), txn
/// id (u64), op (1 byte) and the three u32 lengths. The smallest entry.
inline constexpr size_t kMinEntryBytes = 8 + 8 + 1 + 3 * 4;

/// A prepared transaction's records (docs/oplog.md, "Prepared
/// transactions"): its prepare is one record whose first entry is the
/// command kPrepareCommand (ns "admin", the transaction's id, at the
/// prepare timestamp), followed by its writes as i/u/d entries at the
/// prepare timestamp; its abort is one record of the command
/// kAbortPreparedCommand with its id. Its commit is an ordinary record at
/// the commit timestamp with its id, ending with one more entry: the
/// command kCommitPreparedCommand (ns "admin", its id) at its durable
/// timestamp, which may be later than the commit timestamp. Only recovery
/// reads the prepare and abort records and that last entry: oplog cursors
/// skip the first two and drop the entry (takePreparedDurableTs), so no
/// reader applies a prepared write early or sees a command that is not one.
inline constexpr std::string_view kPrepareCommand = "prepareTransaction";
inline constexpr std::string_view kAbortPreparedCommand = "abortPreparedTransaction";
inline constexpr std::string_view kCommitPreparedCommand = "commitPreparedTransaction";
inline constexpr std::string_view kPreparedTxnNs = "admin";
enum class PreparedRecord : uint8_t { kNone, kPrepare, kAbort };
/// Which of the two a record's entries are (kNone: any other record).
inline PreparedRecord preparedRecordKind(const std::vector<OplogEntry>& entries) {
    if (entries.empty() || entries.front().op != OpType::kCommand ||
        entries.front().ns != kPreparedTxnNs)
        return PreparedRecord::kNone;
    if (entries.front().value == kPrepareCommand)
        return PreparedRecord::kPrepare;
    if (entries.front().value == kAbortPreparedCommand)
        return PreparedRecord::kAbort;
    return PreparedRecord::kNone;
}

/// A prepared transaction's commit record ends with its durable timestamp
/// (kCommitPreparedCommand, above): removes that entry from `entries` and
/// returns the timestamp; kNoTimestamp, with `entries` unchanged, for any
/// other record (and for a prepared commit logged before the entry existed,
/// whose durable timestamp is its commit timestamp).
inline mvcc::Timestamp takePreparedDurableTs(std::vector<OplogEntry>* entries) {
    if (entries->size() < 2)
        return mvcc::kNoTimestamp;
    const OplogEntry& last = entries->back();
    if (last.op != OpType::kCommand || last.ns != kPreparedTxnNs ||
        last.value != kCommitPreparedCommand)
        return mvcc::kNoTimestamp;
    const mvcc::Timestamp durable = last.ts;
    entries->pop_back();
    return durable;
}

/// The payload of one log record holding `entries` (one transaction's).
std::string encodeEntries(const std::vector<OplogEntry>& entries);

/// Builds the same payload entry by entry, without OplogEntry copies (the
/// commit path): start(count), then exactly `count` add() calls.
void startPayload(std::string* payload, uint32_t count);
void addEntry(std::string* payload, mvcc::Timestamp ts, mvcc::TxnId txnId, OpType op,
              std::string_view ns, std::string_view key, std::string_view value);

/// The entries of a payload from encodeEntries. Corruption (naming what is
/// wrong and where) for anything else: a truncated payload, an unknown op,
/// lengths past the end, bytes left over. `out` is cleared first and left
/// empty on error.
Status decodeEntries(std::string_view payload, std::vector<OplogEntry>* out);

/// O(1): could `payload` be one encodeEntries wrote? (At least one entry,
/// a count that fits, a valid first op, a first namespace length that
/// fits.) False for nearly every run of other bytes; decodeEntries decides.
bool plausiblePayload(std::string_view payload);

}  // namespace mvkv::oplog
