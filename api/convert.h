// Between the public option types (include/mvkv/options.h) and the
// engine's own.
#pragma once

#include "replication/change_stream.h"
#include "engine/collection_options.h"
#include "engine/engine_options.h"
#include "engine/session.h"
#include "engine/write_concern.h"
#include "engine/write_options.h"
#include "mvkv/change_stream.h"
#include "mvkv/options.h"
#include "mvkv/session.h"

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

inline ReadConcern fromEngine(engine::ReadConcern rc) {
    switch (rc) {
        case engine::ReadConcern::kLocal:
            return ReadConcern::kLocal;
        case engine::ReadConcern::kSnapshot:
            return ReadConcern::kSnapshot;
        case engine::ReadConcern::kMajority:
            break;
    }
    return ReadConcern::kMajority;
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

inline engine::CollectionOptions toEngine(const CollectionOptions& o) {
    engine::CollectionOptions e;
    e.capped = o.capped;
    e.cappedSizeBytes = o.cappedSizeBytes;
    e.cappedMaxDocs = o.cappedMaxDocs;
    e.expireAfterSeconds = o.expireAfterSeconds;
    return e;
}

inline engine::WriteOptions toEngine(const WriteOptions& o) {
    engine::WriteOptions e;
    e.expireAtMs = o.expireAtMs;
    if (o.fence)
        e.fence = engine::WriteFence{o.fence->owner, o.fence->token};
    return e;
}

inline engine::KeyRange toEngine(const KeyRange& r) {
    return engine::KeyRange{r.from, r.to};
}

inline engine::ScanOptions toEngine(const ScanOptions& o) {
    engine::ScanOptions e;
    e.range = toEngine(o.range);
    e.limit = o.limit;
    e.reverse = o.reverse;
    return e;
}

// The two enums list the same operations in the same order.
static_assert(
    static_cast<int>(ChangeOp::kInsert) == static_cast<int>(replication::ChangeOp::kInsert) &&
    static_cast<int>(ChangeOp::kUpdate) == static_cast<int>(replication::ChangeOp::kUpdate) &&
    static_cast<int>(ChangeOp::kDelete) == static_cast<int>(replication::ChangeOp::kDelete) &&
    static_cast<int>(ChangeOp::kDrop) == static_cast<int>(replication::ChangeOp::kDrop) &&
    static_cast<int>(ChangeOp::kDropDatabase) ==
        static_cast<int>(replication::ChangeOp::kDropDatabase));
inline replication::ChangeOp toEngine(ChangeOp op) {
    return static_cast<replication::ChangeOp>(op);
}
inline ChangeOp fromEngine(replication::ChangeOp op) {
    return static_cast<ChangeOp>(op);
}

// The same four states in the same order.
static_assert(
    static_cast<int>(KeyVersion::State::kCommitted) ==
        static_cast<int>(engine::KeyVersion::State::kCommitted) &&
    static_cast<int>(KeyVersion::State::kUncommitted) ==
        static_cast<int>(engine::KeyVersion::State::kUncommitted) &&
    static_cast<int>(KeyVersion::State::kAborted) ==
        static_cast<int>(engine::KeyVersion::State::kAborted) &&
    static_cast<int>(KeyVersion::State::kPrepared) ==
        static_cast<int>(engine::KeyVersion::State::kPrepared));
inline KeyVersion::State fromEngine(engine::KeyVersion::State s) {
    return static_cast<KeyVersion::State>(s);
}

}  // namespace mvkv::api
