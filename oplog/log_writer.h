// LogWriter: appends checksummed records to the oplog's segment files, with
// group commit: committers that arrive while one of them is writing share
// the next write(2) and the next fdatasync. Format in log_format.h.
//
// Durability per record (SyncMode):
//   kNone   buffered in the process; written when the buffer passes
//           kNoneFlushBytes, by the next kWrite/kFsync record, by flush()
//           or by close(). A crash of the process may lose it.
//   kWrite  write(2) done before append() returns: survives the process,
//           not the machine.
//   kFsync  fdatasync done before append() returns (and the directory
//           fsynced when a segment was created): survives the machine.
// Records are written in append order; a record is on disk only after every
// record appended before it.
//
// Thread safety: append() may be called from any number of threads at once;
// everything else from one thread when no append runs. Errors: IOError (the
// message names the file and errno) and, after one, the writer refuses every
// later append with the same status; InvalidArgument for a record over
// kMaxRecordBytes.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "util/spin_then_block.h"
#include "util/status.h"

namespace mvkv::oplog {

enum class SyncMode : uint8_t { kNone, kWrite, kFsync };

/// "none", "write", "fsync".
std::string_view syncModeName(SyncMode mode);

struct LogWriterOptions {
    std::string dir;                      // must exist
    uint64_t segmentBytes = 64ull << 20;  // a new segment once a write would pass it
};

/// Where a record starts: its segment and byte offset there.
struct LogPosition {
    uint64_t segment = 0;
    uint64_t offset = 0;
};

class LogWriter {
  public:
    static constexpr size_t kNoneFlushBytes = 256 * 1024;

    /// Starts segment `firstSegment` in options.dir (a new file: never an
    /// existing one), its header written and synced with the directory.
    static StatusWith<std::unique_ptr<LogWriter>> create(LogWriterOptions options,
                                                         uint64_t firstSegment);
    /// Writes and syncs what is buffered, then closes. Errors are lost here:
    /// call close() to see them.
    ~LogWriter();
    LogWriter(const LogWriter&) = delete;
    LogWriter& operator=(const LogWriter&) = delete;

    /// Appends one record; returns once it is as durable as `mode` promises.
    /// `where`, when given, receives the record's position.
    Status append(std::string_view payload, SyncMode mode, LogPosition* where = nullptr);
    /// Writes and fdatasyncs everything appended so far.
    Status flush();
    /// Writes (no sync) everything appended so far: what a reader of the
    /// segment files needs from a kNone writer.
    Status writePending();
    /// Where the next record will start (a record that does not fit the
    /// segment starts the next one, at its header's end).
    LogPosition end() const;
    /// flush(), then closes the segment. Idempotent.
    Status close();

    struct Stats {
        uint64_t records = 0;
        uint64_t bytes = 0;     // framed record bytes appended
        uint64_t batches = 0;   // write(2) calls of group commit
        uint64_t syncs = 0;     // fdatasync calls
        uint64_t segments = 0;  // segments started
        uint64_t currentSegment = 0;
    };
    Stats stats() const;

  private:
    explicit LogWriter(LogWriterOptions options);
    // Bytes bound for one segment file, in order.
    struct Chunk {
        uint64_t segment;
        std::string bytes;
    };
    // Becomes the leader: writes (and syncs) one batch. Called with mutex_
    // held through `lock`; releases it for the I/O.
    void leadOneBatch(std::unique_lock<SpinThenBlockMutex>& lock, bool sync);
    // Leader only, no lock: the I/O of one batch.
    // A failed batch is cut from the log (cutFailedBatch): the message gains
    // what was done.
    Status writeChunks(std::vector<Chunk>& chunks, bool sync);
    Status writeChunksOnce(std::vector<Chunk>& chunks, bool sync, uint64_t startSegment);
    // Truncates the batch that began at (startSegment, startOffset) away and
    // removes the segments it created; says how it went, for the error message.
    std::string cutFailedBatch(uint64_t startSegment, off_t startOffset);
    Status openSegmentFile(uint64_t number);
    // `site`: the I/O fault point (util/file_sync.h).
    Status writeAll(std::string_view bytes, std::string_view site);
    Status syncFile(std::string_view site);

    const LogWriterOptions options_;
    // Every committer takes it, for a copy (util/spin_then_block.h).
    mutable SpinThenBlockMutex mutex_;
    std::condition_variable_any done_;
    std::condition_variable_any arrived_;  // a record was appended (for a leader's commit delay)
    // Leaders in their commit delay, waiting on arrived_: an append notifies
    // only when there is one (std::condition_variable_any's notify takes a
    // lock of its own every time).
    int arrivalWaiters_ = 0;
    uint64_t lastSyncMicros_ = 0;      // how long the newest batch's write + sync took
    uint64_t lastBatchRecords_ = 0;    // records the newest synced batch carried
    std::vector<Chunk> pending_;  // framed records (and new segments' headers) not yet written
    // A written batch's buffer, emptied, for the next chunk: the buffer
    // keeps its capacity, so appenders do not regrow (and fault in) a fresh
    // one from nothing under mutex_ after every batch.
    std::string spare_;
    size_t pendingBytes_ = 0;
    uint64_t appended_ = 0;    // sequence of the newest appended record
    uint64_t written_ = 0;     // records up to this one are written
    uint64_t synced_ = 0;      // ... and fdatasynced
    uint64_t syncWanted_ = 0;  // newest kFsync record
    bool leading_ = false;     // a thread is writing a batch
    Status error_;             // sticky
    bool closed_ = false;
    // The file the leader writes (leader only).
    int fd_ = -1;
    uint64_t fdSegment_ = 0;
    // Where the next record goes (under mutex_).
    uint64_t segment_ = 0;
    uint64_t segmentSize_ = 0;  // bytes of the segment, written or pending
    Stats stats_;
};

}  // namespace mvkv::oplog
