// Reading the oplog's segment files back (recovery), telling a torn tail
// from corruption, and cutting the log. Format in log_format.h.
//
// The writer's discipline is what lets a reader tell the two apart: a record
// is appended whole by one write(2), and before a new segment is written the
// old one is fdatasynced and the directory fsynced. So a crash can leave
// only the newest segment short: its bytes end inside a record (a prefix of
// what was being written). Anything else — a complete record whose checksum
// fails, a length no writer writes, a good record after a bad one, damage in
// an older segment, a segment missing between two others — is not a torn
// write but damage, and reading past it would throw away commits that were
// acknowledged. docs/oplog.md, "Recovery", has the table.
//
// Thread safety: free functions over a directory that no LogWriter is
// writing. Errors: IOError (the message names the file), Corruption for a
// segment of another format version. Damage is not an error of scanLog: it
// is described in LogTail for the caller to decide on.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "oplog/log_writer.h"
#include "util/status.h"

namespace mvkv::oplog {

enum class LogDamage : uint8_t {
    kNone,       // every segment read to its end
    kTornTail,   // the newest segment ends inside a record: a write cut by a crash
    kCorruption  // anything else (see above)
};

/// "none", "torn tail", "corruption".
std::string_view logDamageName(LogDamage d);

/// What a scan found: the good records' count and, when the log does not
/// read cleanly to its end, where and why it stops.
struct LogTail {
    bool cut = false;  // damage was found (a torn tail or corruption)
    LogDamage damage = LogDamage::kNone;
    uint64_t segment = 0;  // where: the segment and the offset of the bad record
    uint64_t offset = 0;   // (0: the segment header, or the segment is missing)
    std::string file;      // that segment's path
    uint64_t bytesCut = 0; // bytes from there to the end of the log (later segments too)
    std::string reason;    // "torn record", "checksum mismatch", ...
    uint64_t recordsAfter = 0;  // good records found after the damage
    uint64_t records = 0;       // good records before it (all of them when no damage)
    uint64_t segments = 0;      // segment files seen
    uint64_t firstSegment = 0;  // the oldest segment number seen (0: none)
    uint64_t lastSegment = 0;   // the newest segment number seen (0: none)
    LogPosition end;            // where the good log ends: the damage, or the last byte
};

using RecordFn =
    std::function<void(uint64_t segment, uint64_t offset, std::string_view payload)>;
/// A cheap look at a candidate payload (its first bytes) before its checksum
/// is computed, for the search past damage: false when it cannot be one the
/// writer wrote. Keeps that search linear: without it, each byte whose u32
/// fits the rest of the segment hashes up to the rest of the segment.
using PlausibleFn = std::function<bool(std::string_view payload)>;

/// Calls `fn(segment, offset, payload)` for every good record in log order
/// up to the first damage, which `tail` then describes; then, when `after`
/// is given, calls it for every good record found past the damage (each
/// later byte is tried as a record start, so records are found again after
/// a damaged one; `plausible`, when given, filters candidates first). Files
/// that are not segments are ignored. Changes nothing on disk.
Status scanLog(const std::string& dir, const RecordFn& fn, LogTail* tail,
               const RecordFn& after = nullptr, const PlausibleFn& plausible = nullptr);

/// Cuts the log where `tail` says (truncates that segment at the bad
/// record, or removes it when nothing good is left in it, and removes every
/// later segment), then fsyncs the directory. No-op when !tail.cut.
Status cutLogTail(const std::string& dir, const LogTail& tail);

}  // namespace mvkv::oplog
