// What the public handles (include/mvkv/) hold: the engine's own objects.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "replication/change_stream.h"
#include "engine/cursor.h"
#include "engine/document_locks.h"
#include "engine/engine.h"
#include "replication/replica_set.h"
#include "engine/session.h"
#include "mvkv/change_stream.h"
#include "mvkv/cursor.h"
#include "mvkv/document_locks.h"
#include "mvkv/engine.h"
#include "mvkv/oplog.h"
#include "mvkv/replica_set.h"
#include "mvkv/session.h"
#include "oplog/oplog_cursor.h"

namespace mvkv {

struct Engine::Impl {
    std::unique_ptr<engine::Engine> engine;  // null once closed
    std::mutex closeMutex;                   // orders openSession with close
    std::atomic<int64_t> sessions{0};        // open public Sessions

    static Status closedError() {
        return Status::IllegalOperation("the engine is closed: open it again");
    }
};

struct Session::Impl {
    std::unique_ptr<engine::Session> session;
    Engine::Impl* owner = nullptr;
    Timestamp allDurableAtBegin = kNoTimestamp;  // readTimestamp() without a read ts
};

struct Cursor::Impl {
    std::unique_ptr<engine::Cursor> cursor;
    bool missed = false;  // find() did not find its key: not positioned
};

struct OplogCursor::Impl {
    std::unique_ptr<oplog::OplogCursor> cursor;
    std::vector<oplog::OplogEntry> entries;  // reused between next() calls
};

struct ChangeStream::Impl {
    std::unique_ptr<replication::ChangeStream> stream;
};

struct ReplicaSet::Impl {
    std::unique_ptr<replication::ReplicaSet> set;
};

struct DocumentLocks::Impl {
    explicit Impl(engine::Session& session) : locks(session) {}
    engine::DocumentLocks locks;
};

}  // namespace mvkv
