// DurableLog: an engine's data directory — its lock file, its format
// marker, its clean-shutdown note, and its oplog (oplog/oplog.h) once
// recovery has read it. open() takes the lock, checks (or writes) the
// marker, scans the oplog and returns the good records, in log order, for
// the engine to replay, with any damage described and the records found
// past it; it changes nothing on disk. The engine judges the damage
// (recovery/log_repair.h) and cuts it with cut() only when it is a torn tail
// or a repair was asked for; startOplog() then hands the log to a running
// Oplog that appends, indexes, publishes visibility and caps it. The
// destructor closes the log and, when every record reached the disk,
// writes the clean-shutdown note: where the log ended, so that the next
// open can tell a log cut short from a torn write.
//
// Thread safety: oplog() from any thread once started; the rest from one.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mvcc/timestamp.h"
#include "oplog/log_reader.h"
#include "oplog/oplog.h"
#include "oplog/oplog_entry.h"
#include "util/status.h"

namespace mvkv::recovery {

class DurableLog {
  public:
    static constexpr int kFormatVersion = 1;

    struct Record {
        oplog::ExistingRecord where;  // its entry count includes a durable marker
        std::vector<oplog::OplogEntry> entries;
        /// A prepared transaction's commit record: its durable timestamp
        /// (the record's last entry, taken off `entries`;
        /// oplog::takePreparedDurableTs). kNoTimestamp for any other.
        mvcc::Timestamp preparedDurableTs = mvcc::kNoTimestamp;
    };
    struct Recovered {
        std::vector<Record> records;  // log order, up to any damage
        oplog::LogTail tail;          // the damage, if any
        uint64_t entries = 0;
        /// Good records found past the damage (what a repair loses), and
        /// how many of those did not decode.
        std::vector<Record> after;
        uint64_t afterUndecodable = 0;
        /// Where the log ended when it was last closed cleanly (none after
        /// a crash, or for a directory of an older build).
        std::optional<oplog::LogPosition> cleanEnd;
    };

    /// Opens (creating when absent) the data directory `dir`. Refuses a
    /// directory that holds other files and no mvkv marker, one of another
    /// format version (InvalidArgument), and one another process (or engine)
    /// has open (IllegalOperation). IOError and Corruption name the file.
    static StatusWith<std::unique_ptr<DurableLog>> open(const std::string& dir, Recovered* out);
    ~DurableLog();  // closes the oplog and releases the lock
    DurableLog(const DurableLog&) = delete;
    DurableLog& operator=(const DurableLog&) = delete;

    /// Cuts the log at `tail`'s damage (oplog::cutLogTail).
    Status cut(const oplog::LogTail& tail);
    /// Removes the clean-shutdown note (durably), before anything shortens
    /// or lengthens the log.
    Status forgetCleanShutdown();

    /// Starts the running oplog over what open() recovered (`recovered`
    /// may have been moved from; only its positions are used). Forgets the
    /// clean-shutdown note first (a crash from here on is not clean). New
    /// records go to a new segment numbered past every segment on disk and
    /// at least `minNextSegment` (past the loaded checkpoint's log
    /// position, so they count as after it).
    Status startOplog(oplog::OplogOptions options, const Recovered& recovered,
                      uint64_t minNextSegment, std::function<mvcc::Timestamp()> noHolesPoint);
    oplog::Oplog& oplog() { return *oplog_; }
    const std::string& dir() const { return dir_; }

  private:
    DurableLog(std::string dir, int lockFd) : dir_(std::move(dir)), lockFd_(lockFd) {}

    const std::string dir_;
    int lockFd_;
    std::unique_ptr<oplog::Oplog> oplog_;
};

}  // namespace mvkv::recovery
