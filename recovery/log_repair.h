// Judging the oplog's damage at open, and repairing it only when asked
// (docs/oplog.md, "Recovery": the table of outcomes).
//
// oplog::scanLog tells a torn tail from corruption by the log alone. Two
// more facts can show that what looks torn is not: the clean-shutdown note
// (the log ended at a known position when it was last closed, so a log
// shorter than that was cut short by something other than a crash), and
// the loaded checkpoint's log position (everything before it was synced
// before the checkpoint was written). judgeDamage applies both.
//
// A torn tail is cut and reported. Corruption refuses the open with a
// Corruption status that names the file, the offset and what follows the
// damage, and changes nothing on disk — unless the engine was opened with
// EngineOptions::repair, when repairLog copies every segment it will cut
// into DIR/salvage/<time>/, appends to the repair record DIR/repair.json
// (what was damaged, where the copies are, and exactly which commits were
// lost: timestamps, namespaces, keys), then cuts. Every later open reports
// the repair record until clearRepairRecord removes it.
//
// Thread safety: free functions, called by Engine::open (and
// clearRepairRecord by Engine) with the data directory's lock held.
#pragma once

#include <string>

#include "checkpoint/loaded_checkpoint.h"
#include "recovery/durable_log.h"
#include "util/status.h"

namespace mvkv::recovery {

/// The repair record's file in the data directory.
inline constexpr const char* kRepairRecordName = "repair.json";

/// Upgrades a torn tail, or a log that reads cleanly, to corruption when the
/// clean-shutdown note or the checkpoint's log position lies past where the
/// log ends.
void judgeDamage(const std::string& dir, DurableLog::Recovered* recovered,
                 const checkpoint::LoadedCheckpoint& checkpoint);

/// The error for corruption left unrepaired: Corruption naming the file, the
/// offset, the reason, the good records and bytes that follow, and how to
/// repair.
Status damageError(const std::string& dir, const DurableLog::Recovered& recovered);

struct RepairOutcome {
    std::string salvageDir;     // where the cut segments were copied
    uint64_t lostCommits = 0;   // good records past the damage the checkpoint does not hold
    uint64_t heldByCheckpoint = 0;
};

/// Repairs the corruption `recovered` describes (see above). IOError when a
/// copy, the record or the cut fails; the log is cut only after the copies
/// and the record are durable.
Status repairLog(DurableLog& log, const DurableLog::Recovered& recovered,
                 const checkpoint::LoadedCheckpoint& checkpoint, RepairOutcome* out);

/// The repair record as JSON (an array of repairs, oldest first); "[]" when
/// there is none. Corruption when the file does not parse.
StatusWith<std::string> readRepairRecord(const std::string& dir);
/// Removes the repair record (the salvage copies stay).
Status clearRepairRecord(const std::string& dir);

}  // namespace mvkv::recovery
