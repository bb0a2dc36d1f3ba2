// Oplog: the running oplog of a data directory — the LogWriter that appends
// records, an index of every record in the live segments by (timestamp,
// sequence), the visible timestamp (visibility_publisher.h), and capping.
// Readers (oplog_cursor.h) find records through the index and read them back
// from the segment files.
//
// Order: records are written in append order, which is not quite timestamp
// order (a transaction can fix an early commit timestamp and log late). The
// index orders them by timestamp, and the visible timestamp guarantees that
// no record at or below it is still to come.
//
// Capping: whole segments only, oldest first, and only a segment that
//   - is not the segment being written,
//   - lies wholly before the oldest retained checkpoint's log position, and
//     holds no entry newer than that checkpoint's timestamp (recovery never
//     needs it), and
//   - is older than the cap: the segments after it already hold capBytes.
// A reader whose position a dropped record was after gets CappedPositionLost.
//
// In memory (openInMemory: an in-memory engine's oplog, as MongoDB's
// in-memory engine keeps one for replication): no files and no writer; each
// record's payload is kept in memory, and append() caps at once: the oldest
// records (in timestamp order) go while the payloads held pass capBytes
// (always keeping the newest one). There is no checkpoint to protect.
//
// Thread safety: every method from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "mvcc/timestamp.h"
#include "oplog/log_writer.h"
#include "oplog/oplog_entry.h"
#include "oplog/visibility_publisher.h"
#include "util/block_pool.h"
#include "util/spin_then_block.h"
#include "util/status.h"

namespace mvkv::oplog {

struct OplogOptions {
    std::string dir;  // empty in memory
    SyncMode mode = SyncMode::kFsync;
    uint64_t segmentBytes = 64ull << 20;
    uint64_t capBytes = 1ull << 30;  // see "Capping" above
};

/// A record's place in timestamp order: equal timestamps (two transactions
/// may share one) are ordered by the sequence the index gave them.
struct RecordKey {
    mvcc::Timestamp ts = mvcc::kNoTimestamp;
    uint64_t seq = 0;
    auto operator<=>(const RecordKey&) const = default;
};

/// One record of the index.
struct RecordRef {
    RecordKey key;
    uint64_t segment = 0;
    uint64_t offset = 0;   // of the record header
    uint32_t length = 0;   // payload bytes
    uint32_t entries = 0;  // oplog entries in it
};

/// A record recovery found in the segments (log order).
struct ExistingRecord {
    mvcc::Timestamp ts = mvcc::kNoTimestamp;
    uint64_t segment = 0;
    uint64_t offset = 0;
    uint32_t length = 0;
    uint32_t entries = 0;
};

struct OplogStats {
    uint64_t entries = 0;  // in the live segments
    uint64_t records = 0;
    uint64_t bytes = 0;  // of the live segment files
    mvcc::Timestamp firstTs = mvcc::kNoTimestamp;
    mvcc::Timestamp lastTs = mvcc::kNoTimestamp;
    mvcc::Timestamp visibleTs = mvcc::kNoTimestamp;
    uint64_t segments = 0;
    uint64_t segmentsDropped = 0;
    uint64_t recordsDropped = 0;  // by capping since open
    bool inMemory = false;
    uint64_t batches = 0;  // group-commit writes since open
    double meanBatch = 0;  // records per batch
    uint64_t syncs = 0;
    uint64_t visibilityPublications = 0;
    uint64_t capBytes = 0;
};

class Oplog {
  public:
    /// Takes over `dir`'s log: `existing` are the records recovery found
    /// (after the tail was cut); new records go to segment `nextSegment`.
    /// `noHolesPoint` is the engine's all_durable.
    static StatusWith<std::unique_ptr<Oplog>> open(OplogOptions options,
                                                   const std::vector<ExistingRecord>& existing,
                                                   uint64_t nextSegment,
                                                   std::function<mvcc::Timestamp()> noHolesPoint);
    /// An oplog without files, capped at `capBytes` of payload (>= 1,
    /// else InvalidArgument).
    static StatusWith<std::unique_ptr<Oplog>> openInMemory(
        uint64_t capBytes, std::function<mvcc::Timestamp()> noHolesPoint);
    ~Oplog();  // closes the writer (written and synced)
    Oplog(const Oplog&) = delete;
    Oplog& operator=(const Oplog&) = delete;

    /// One transaction's (or one command's) entries, which share a
    /// timestamp, as one record; returns once it is as durable as the sync
    /// mode promises, and indexed. The caller's transaction must still hold
    /// all_durable below the timestamp (TransactionManager::prepareCommit).
    Status append(const std::vector<OplogEntry>& entries);
    /// The same for a payload already encoded (startPayload/addEntry) with
    /// `entries` entries at timestamp `ts`.
    Status append(std::string_view payload, mvcc::Timestamp ts, uint32_t entries);
    /// Where the next record will start ({0, 0} in memory).
    LogPosition end() const { return writer_ ? writer_->end() : LogPosition{}; }
    /// Writes and syncs every record appended so far (OK in memory); on
    /// success syncedTs() reaches what was visible when it began.
    Status flush();
    /// The newest timestamp at or below which every record is on disk,
    /// synced: visibleTs() with SyncMode::kFsync (a commit is synced before
    /// it finishes) and in memory (nothing to sync); with kWrite or kNone,
    /// the visible point the last successful flush() began at. A replica
    /// set counts it as the primary's durable point (docs/replication.md).
    mvcc::Timestamp syncedTs() const;
    /// Writes, syncs and closes the log (no append after it); the first
    /// write or sync error the log met, if any. Idempotent. OK in memory.
    Status close() { return writer_ ? writer_->close() : Status::OK(); }
    /// kNone in memory.
    SyncMode syncMode() const { return options_.mode; }
    bool inMemory() const { return !writer_; }
    const OplogOptions& options() const { return options_; }

    // --- visibility ---
    /// A transaction ended: publishes all_durable as it is now.
    void notifyCommit() { visibility_.notify(); }
    /// A commit ended, and all_durable was `noHolesPoint` just after
    /// (TransactionManager::completeCommit): publishes it without asking again.
    void publishVisible(mvcc::Timestamp noHolesPoint) { visibility_.publish(noHolesPoint); }
    mvcc::Timestamp visibleTs() const { return visibility_.visible(); }
    mvcc::Timestamp refreshVisibility() { return visibility_.refreshNow(); }
    mvcc::Timestamp waitVisibleAfter(mvcc::Timestamp after,
                                     std::chrono::steady_clock::time_point deadline) {
        return visibility_.waitAfter(after, deadline);
    }

    // --- reading (oplog_cursor.h) ---
    /// Up to `max` records after `pos` with a timestamp <= `upTo`, in order.
    /// CappedPositionLost when a dropped record came after `pos`, unless
    /// `fromStart` (a reader that starts at whatever is oldest).
    Status recordsAfter(RecordKey pos, bool fromStart, mvcc::Timestamp upTo, size_t max,
                        std::vector<RecordRef>* out) const;
    /// The record's payload, read back from its segment (checksum checked);
    /// in memory a copy of it, CappedPositionLost once capping dropped it.
    Status readRecord(const RecordRef& ref, std::string* payload);

    // --- capping ---
    /// Drops what the rules above allow, for a checkpoint at `checkpointTs`
    /// that began at log position `checkpointEnd` (the oldest one kept).
    Status truncate(LogPosition checkpointEnd, mvcc::Timestamp checkpointTs);

    OplogStats stats() const;

  private:
    struct Segment {
        uint64_t bytes = 0;
        mvcc::Timestamp maxTs = mvcc::kNoTimestamp;
    };
    class SegmentFiles;  // read handles, kept open while in use

    explicit Oplog(OplogOptions options, std::function<mvcc::Timestamp()> noHolesPoint);
    void indexLocked(RecordRef ref);
    void capMemoryLocked();

    const OplogOptions options_;
    std::unique_ptr<LogWriter> writer_;
    std::unique_ptr<SegmentFiles> files_;
    // Guards everything below. Exclusive for readers too (they copy a batch
    // of the index and go): every commit takes it, and unlike glibc's
    // reader-writer lock it makes no futex call while nobody sleeps on it.
    mutable SpinThenBlockMutex mutex_;
    // The index's nodes (libstdc++'s deque allocates 480 bytes at a time
    // for these) come from 2 MiB chunks, not the heap (util/block_pool.h).
    BlockPool indexNodes_{512};
    std::deque<RecordRef, BlockPoolAllocator<RecordRef>> index_{
        BlockPoolAllocator<RecordRef>(indexNodes_)};  // by key
    std::map<uint64_t, Segment> segments_;
    uint64_t nextSeq_ = 1;
    uint64_t entries_ = 0;
    RecordKey droppedThrough_;  // the newest key of a dropped record
    uint64_t segmentsDropped_ = 0;
    uint64_t recordsDropped_ = 0;
    // In memory: each record's payload by its sequence, and their bytes.
    std::unordered_map<uint64_t, std::string> memPayloads_;
    uint64_t memBytes_ = 0;
    // kWrite / kNone: what flush() last made durable (syncedTs()).
    std::atomic<mvcc::Timestamp> flushedTs_{mvcc::kNoTimestamp};
    VisibilityPublisher visibility_;  // last: destroyed first, waking its waiters
};

}  // namespace mvkv::oplog
