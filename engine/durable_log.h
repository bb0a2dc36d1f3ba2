// DurableLog: an engine's data directory — its lock file, its format
// marker, and its oplog (oplog/oplog.h) once recovery has read it. open()
// takes the lock, checks (or writes) the marker, scans the oplog, cuts a
// torn or corrupt tail and returns the surviving records, in log order, for
// the engine to replay; startOplog() then hands the log to a running Oplog
// that appends, indexes, publishes visibility and caps it.
//
// Thread safety: oplog() from any thread once started; the rest from one.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "oplog/log_reader.h"
#include "oplog/oplog.h"
#include "oplog/oplog_entry.h"
#include "util/status.h"

namespace mvkv::engine {

class DurableLog {
  public:
    static constexpr int kFormatVersion = 1;

    struct Record {
        oplog::ExistingRecord where;
        std::vector<oplog::OplogEntry> entries;
    };
    struct Recovered {
        std::vector<Record> records;  // log order
        oplog::LogTail tail;          // where the log was cut, if it was
        uint64_t entries = 0;
    };

    /// Opens (creating when absent) the data directory `dir`. Refuses a
    /// directory that holds other files and no mvkv marker, one of another
    /// format version (InvalidArgument), and one another process (or engine)
    /// has open (IllegalOperation). IOError and Corruption name the file.
    static StatusWith<std::unique_ptr<DurableLog>> open(const std::string& dir, Recovered* out);
    ~DurableLog();  // closes the oplog and releases the lock
    DurableLog(const DurableLog&) = delete;
    DurableLog& operator=(const DurableLog&) = delete;

    /// Starts the running oplog over what open() recovered (`recovered`
    /// may have been moved from; only its positions are used). New records
    /// go to a new segment numbered at least `minNextSegment` (past the
    /// loaded checkpoint's log position, so they count as after it).
    Status startOplog(oplog::OplogOptions options, const Recovered& recovered,
                      uint64_t minNextSegment, std::function<mvcc::Timestamp()> noHolesPoint);
    oplog::Oplog& oplog() { return *oplog_; }
    const std::string& dir() const { return dir_; }

  private:
    DurableLog(std::string dir, int lockFd) : dir_(std::move(dir)), lockFd_(lockFd) {}

    const std::string dir_;
    int lockFd_;
    uint64_t nextSegment_ = 1;
    std::unique_ptr<oplog::Oplog> oplog_;
};

}  // namespace mvkv::engine
