// mvkv/change_stream.h: MongoDB's change streams over the oplog
// (docs/replication.md, "Change streams").
// Part of the public API (include/mvkv/); no stable ABI is promised yet.
//
// Engine::watch opens one; next() returns the change events (insert,
// update, delete, drop, dropDatabase) of the namespaces and operation types
// asked for, in oplog order, each only once it is majority-committed
// (Engine::majorityCommitTs(): on a majority of a replica set's members;
// standalone, durable). A transaction's events come one after another with
// no other event between them. Internal namespaces (`local`,
// `<db>.system.*`) are never shown.
//
// Resume tokens are opaque text naming an event's oplog position; they
// keep their meaning across a restart of a durable engine.
//
// Ownership and lifetime: the caller owns the stream; destroy it before
// its Engine.
//
// Thread safety: one thread per stream at a time; any number of streams.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mvkv/status.h"
#include "mvkv/timestamp.h"

namespace mvkv {

enum class ChangeOp : uint8_t { kInsert, kUpdate, kDelete, kDrop, kDropDatabase };

/// MongoDB's operationType: "insert", "update", "delete", "drop", "dropDatabase".
std::string_view changeOpName(ChangeOp op);

struct ChangeStreamOptions {
    /// "" (every database), a database ("app": its collections and its
    /// dropDatabase) or a collection ("app.users": its events and the
    /// dropDatabase of "app").
    std::string ns;
    /// The operation types to show; empty: all of them.
    std::vector<ChangeOp> operationTypes;
    /// Start just after this token's event (ChangeEvent::resumeToken).
    std::string resumeAfter;
    /// Start at the first event with clusterTime >= it. With neither this
    /// nor resumeAfter the stream starts after the current majority point.
    Timestamp startAtTimestamp = kNoTimestamp;
};

struct ChangeEvent {
    ChangeOp op = ChangeOp::kInsert;
    std::string ns;   // "db.coll"; the database for dropDatabase
    std::string key;  // empty for drop and dropDatabase
    std::optional<std::string> value;  // the value written, for insert and update
    Timestamp clusterTime = kNoTimestamp;  // the commit timestamp
    TxnId txnId = kNoTxnId;                // 0 for drop and dropDatabase
    std::string resumeToken;
};

class ChangeStream {
  public:
    ~ChangeStream();
    ChangeStream(const ChangeStream&) = delete;
    ChangeStream& operator=(const ChangeStream&) = delete;

    /// The next event, waiting up to `wait` for one; nullopt when none came.
    /// ChangeStreamHistoryLost when capping dropped events the stream has
    /// not read (it stays lost: open a new stream); Corruption or IOError
    /// from reading the oplog.
    StatusWith<std::optional<ChangeEvent>> next(
        std::chrono::milliseconds wait = std::chrono::milliseconds(0));
    /// The token of the last event next() returned ("" before the first).
    std::string resumeToken() const;

    struct Impl;  // the engine's side (opaque)
    explicit ChangeStream(std::unique_ptr<Impl> impl);

  private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace mvkv
