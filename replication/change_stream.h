// ChangeStream: MongoDB's change streams over the oplog (docs/replication.md,
// "Change streams"). openChangeStream opens one; next() returns the change
// events (insert, update, delete, drop, dropDatabase) of the namespaces and
// operation types asked for, in oplog order.
//
// The majority bound: a stream reads only entries at or below
// Engine::majorityCommitTs() (and the oplog's visible point), so an event it
// shows is on a majority of a replica set's members and never disappears
// when a primary loses a write. Standalone that point is the engine's own
// durable (or, in memory, visible) oplog point.
//
// A transaction's entries are one oplog record: its events are read
// together and next() returns them one after another, in the
// transaction's order, with no other event between them.
//
// Resume tokens: each event's token is opaque hex text encoding its oplog
// position as (commit timestamp, index of the entry among every entry the
// oplog holds at that timestamp, in log order). Recovery rebuilds a durable
// oplog in the same log order, so a token keeps its meaning across a
// restart. resumeAfter starts just after the token's event;
// ChangeStreamHistoryLost when capping dropped anything at or after the
// token's timestamp (the events after it can no longer all be shown).
//
// Values: the caller's bytes (a TTL collection's stored header is
// stripped, engine/ttl_value.h); none for delete, drop and dropDatabase.
// Internal namespaces are never shown: the `local` database and
// `<db>.system.*` collections (the profiler's).
//
// Thread safety: one thread per stream at a time; any number of streams.
// A stream must be destroyed before its Engine.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mvcc/timestamp.h"
#include "oplog/oplog.h"
#include "util/status.h"

namespace mvkv::engine {
class Engine;
}

namespace mvkv::replication {

enum class ChangeOp : uint8_t { kInsert, kUpdate, kDelete, kDrop, kDropDatabase };

/// MongoDB's operationType names: "insert", "update", "delete", "drop",
/// "dropDatabase".
std::string_view changeOpName(ChangeOp op);
/// The operation type of a name above; InvalidArgument (listing them) else.
StatusWith<ChangeOp> parseChangeOp(std::string_view name);

struct ChangeStreamOptions {
    /// "" (every database), a database ("app": its collections and its
    /// dropDatabase) or a collection ("app.users": its events and the
    /// dropDatabase of "app").
    std::string ns;
    /// The operation types to show; empty: all of them.
    std::vector<ChangeOp> operationTypes;
    /// Start after this token's event (ChangeEvent::resumeToken).
    std::string resumeAfter;
    /// Start at the first event with clusterTime >= it. With neither this
    /// nor resumeAfter the stream starts after the current majority point.
    mvcc::Timestamp startAtTimestamp = mvcc::kNoTimestamp;
};

struct ChangeEvent {
    ChangeOp op = ChangeOp::kInsert;
    std::string ns;   // "db.coll"; the database for dropDatabase
    std::string key;  // empty for drop and dropDatabase
    /// The value written, for insert and update.
    std::optional<std::string> value;
    mvcc::Timestamp clusterTime = mvcc::kNoTimestamp;  // the commit timestamp
    /// The transaction that wrote it (0 for drop and dropDatabase, which
    /// the oplog records with none).
    mvcc::TxnId txnId = mvcc::kNoTxnId;
    std::string resumeToken;
};

/// A position in the oplog, as a resume token holds it.
struct ResumePosition {
    mvcc::Timestamp ts = mvcc::kNoTimestamp;
    uint32_t index = 0;  // of the entry among those at `ts`
    bool operator==(const ResumePosition&) const = default;
};
std::string encodeResumeToken(ResumePosition pos);
/// InvalidArgument (saying what a token looks like) for anything
/// encodeResumeToken did not make.
StatusWith<ResumePosition> decodeResumeToken(std::string_view token);

class ChangeStream;

/// Opens a change stream on `engine` (MongoDB's watch). InvalidArgument for
/// a bad namespace or resume token, or both resumeAfter and
/// startAtTimestamp; IllegalOperation for an engine without an oplog. (A
/// resume point capping dropped is reported by the stream's first next():
/// ChangeStreamHistoryLost.)
StatusWith<std::unique_ptr<ChangeStream>> openChangeStream(engine::Engine& engine,
                                                          ChangeStreamOptions options);

class ChangeStream {
  public:
    /// openChangeStream is the way to open one (it checks the options).
    ChangeStream(engine::Engine& engine, oplog::Oplog& oplog, ChangeStreamOptions options,
                 oplog::RecordKey start, std::optional<ResumePosition> skipThrough);

    /// The next event: waits up to `wait` for one; nullopt when none came.
    /// ChangeStreamHistoryLost when capping dropped events the stream has
    /// not read yet (it stays lost: open a new stream); Corruption or
    /// IOError from reading the oplog.
    StatusWith<std::optional<ChangeEvent>> next(
        std::chrono::milliseconds wait = std::chrono::milliseconds(0));

    /// The token of the last event next() returned ("" before the first):
    /// where a new stream resumes.
    const std::string& resumeToken() const { return lastToken_; }

  private:
    Status readMore(bool* readAny);
    bool nsMatches(std::string_view ns, bool isDatabase) const;
    bool opMatches(ChangeOp op) const;
    bool isTtl(const std::string& ns);

    engine::Engine& engine_;
    oplog::Oplog& oplog_;
    const ChangeStreamOptions options_;
    oplog::RecordKey position_;  // the last record read
    std::optional<ResumePosition> skipThrough_;
    mvcc::Timestamp lastTs_ = mvcc::kNoTimestamp;  // the last record's timestamp
    uint32_t entriesAtLastTs_ = 0;                 // entries read at lastTs_
    Status lost_;
    std::deque<ChangeEvent> ready_;
    std::string lastToken_;
    std::unordered_map<std::string, bool> ttl_;  // by collection
    std::vector<oplog::RecordRef> refs_;
    std::string payload_;
    std::vector<oplog::OplogEntry> decoded_;
};

}  // namespace mvkv::replication
