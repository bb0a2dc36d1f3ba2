// DurableLog: an engine's data directory and its oplog, for Engine::open
// with a path. Takes the directory's lock file, checks (or writes) its
// format marker, scans the oplog, cuts a torn or corrupt tail, hands the
// surviving entries to the engine for replay, and then appends each commit's
// entries as one record.
//
// What is durable so far (the rest of the oplog issue adds checkpoints,
// capping and oplog visibility): every committed transaction's writes and
// every create/drop, appended after the commit and before it is
// acknowledged, as durable as the sync mode promises. Recovery replays the
// whole log, in timestamp order. A commit is visible to other sessions a
// moment before it is in the log: a crash then loses a transaction that was
// never acknowledged to its caller but that another session may have read.
//
// Thread safety: append() from any thread; the rest from one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "oplog/log_reader.h"
#include "oplog/log_writer.h"
#include "oplog/oplog_entry.h"
#include "util/status.h"

namespace mvkv::engine {

class DurableLog {
  public:
    static constexpr int kFormatVersion = 1;

    struct Recovered {
        std::vector<oplog::OplogEntry> entries;  // in timestamp order (log order within one)
        oplog::LogTail tail;                     // where the log was cut, if it was
        uint64_t records = 0;
    };

    /// Opens (creating when absent) the data directory `dir`. Refuses a
    /// directory that holds other files and no mvkv marker, one of another
    /// format version (InvalidArgument), and one another process (or engine)
    /// has open (IllegalOperation). IOError and Corruption name the file.
    static StatusWith<std::unique_ptr<DurableLog>> open(const std::string& dir,
                                                        oplog::SyncMode mode, Recovered* out);
    ~DurableLog();  // closes the log and releases the lock
    DurableLog(const DurableLog&) = delete;
    DurableLog& operator=(const DurableLog&) = delete;

    /// One transaction's (or one command's) entries as one record.
    Status append(const std::vector<oplog::OplogEntry>& entries);

    oplog::SyncMode syncMode() const { return mode_; }
    oplog::LogWriter::Stats stats() const { return writer_->stats(); }

  private:
    DurableLog(int lockFd, oplog::SyncMode mode) : lockFd_(lockFd), mode_(mode) {}

    int lockFd_;
    oplog::SyncMode mode_;
    std::unique_ptr<oplog::LogWriter> writer_;
};

}  // namespace mvkv::engine
