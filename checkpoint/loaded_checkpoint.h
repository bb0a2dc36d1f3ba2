// LoadedCheckpoint: the checkpoint an open started from, as the engine's
// Checkpointer loaded it (engine/checkpointer.h). Recovery judges the log
// against its position (recovery/log_repair.h) and replays what it does not
// hold (engine/replay.cpp).
//
// Thread safety: a plain value.
#pragma once

#include <cstdint>
#include <string>

#include "mvcc/timestamp.h"
#include "oplog/log_writer.h"

namespace mvkv::checkpoint {

struct LoadedCheckpoint {
    bool loaded = false;
    uint64_t number = 0;
    mvcc::Timestamp ts = mvcc::kNoTimestamp;
    oplog::LogPosition logEnd;
    uint64_t entries = 0;
    uint64_t skipped = 0;  // newer checkpoints that were corrupt
    std::string skippedReason;
};

}  // namespace mvkv::checkpoint
