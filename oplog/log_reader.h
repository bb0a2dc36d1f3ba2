// Reading the oplog's segment files back (recovery), and cutting a torn or
// corrupt tail. Format in log_format.h.
//
// Thread safety: free functions over a directory that no LogWriter is
// writing. Errors: IOError (the message names the file), Corruption for a
// segment of another format version.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "util/status.h"

namespace mvkv::oplog {

/// Where a scan stopped early, and why.
struct LogTail {
    bool cut = false;         // a torn or corrupt record was found
    uint64_t segment = 0;     // where: the segment and the offset of the bad record
    uint64_t offset = 0;
    uint64_t bytesCut = 0;    // bytes from there to the end of the log (later segments too)
    std::string reason;       // "torn record header", "checksum mismatch", ...
    uint64_t records = 0;     // good records read
    uint64_t segments = 0;    // segment files seen
    uint64_t lastSegment = 0; // the newest segment number seen (0: none)
};

/// Calls `fn(segment, offset, payload)` for every good record in log order
/// and stops at the first bad one, which `tail` then describes. Files that
/// are not segments are ignored. Changes nothing on disk.
Status scanLog(const std::string& dir,
               const std::function<void(uint64_t segment, uint64_t offset,
                                        std::string_view payload)>& fn,
               LogTail* tail);

/// Cuts the log where `tail` says (truncates that segment at the bad
/// record, or removes it when nothing good is left in it, and removes every
/// later segment), then fsyncs the directory. No-op when !tail.cut.
Status cutLogTail(const std::string& dir, const LogTail& tail);

}  // namespace mvkv::oplog
