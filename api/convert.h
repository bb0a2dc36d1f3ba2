// Between the public option types (include/mvkv/options.h) and the
// engine's own.
#pragma once

#include "engine/engine_options.h"
#include "engine/session.h"
#include "engine/write_concern.h"
#include "mvkv/options.h"

namespace mvkv::api {

inline oplog::SyncMode toEngine(SyncMode m) {
    switch (m) {
        case SyncMode::kNone:
            return oplog::SyncMode::kNone;
        case SyncMode::kWrite:
            return oplog::SyncMode::kWrite;
        case SyncMode::kFsync:
            break;
    }
    return oplog::SyncMode::kFsync;
}

inline engine::EngineOptions toEngine(const EngineOptions& o) {
    engine::EngineOptions e;
    e.path = o.path;
    e.inMemory = o.path.empty();
    e.syncMode = toEngine(o.syncMode);
    e.repair = o.repair;
    e.oplogCapBytes = o.oplogCapBytes;
    e.inMemoryOplogCapBytes = o.inMemoryOplogCapBytes;
    e.checkpointInterval = o.checkpointInterval;
    e.maxKeyBytes = o.maxKeyBytes;
    e.maxValueBytes = o.maxValueBytes;
    e.writeConflictRetryTimeout = o.writeConflictRetryTimeout;
    e.lockTimeout = o.lockTimeout;
    e.historySweepInterval = o.historySweepInterval;
    e.slowOpThreshold = o.slowOpThreshold;
    return e;
}

inline engine::ReadConcern toEngine(ReadConcern rc) {
    switch (rc) {
        case ReadConcern::kLocal:
            return engine::ReadConcern::kLocal;
        case ReadConcern::kSnapshot:
            return engine::ReadConcern::kSnapshot;
        case ReadConcern::kMajority:
            break;
    }
    return engine::ReadConcern::kMajority;
}

inline engine::TxnOptions toEngine(const TxnOptions& o) {
    engine::TxnOptions e;
    e.readTs = o.readTs;
    e.roundUpReadTs = o.roundUpReadTs;
    e.readConcern = toEngine(o.readConcern);
    e.ignorePrepare = o.ignorePrepare;
    return e;
}

inline engine::WriteConcern toEngine(const WriteConcern& wc) {
    return engine::WriteConcern{wc.w, wc.majority, wc.wtimeout};
}

}  // namespace mvkv::api
