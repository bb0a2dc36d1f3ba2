#include "engine/checkpointer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>

#include "checkpoint/checkpoint_file.h"
#include "engine/collection_options.h"
#include "engine/cursor.h"
#include "engine/engine.h"
#include "engine/session.h"
#include "oplog/log_format.h"
#include "recovery/durable_log.h"
#include "util/file_sync.h"

namespace mvkv::engine {

using checkpoint::CheckpointFile;
using checkpoint::CheckpointMeta;
using checkpoint::CheckpointWriter;
using checkpoint::StoredCollectionOptions;

namespace {

// Checkpoint entries loaded per transaction at open.
constexpr size_t kLoadBatch = 4096;

uint64_t microsSince(std::chrono::steady_clock::time_point start) {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                     std::chrono::steady_clock::now() - start)
                                     .count());
}

// The lowest log segment number in `dir` (0: none).
uint64_t firstLogSegment(const std::string& dir) {
    uint64_t first = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        uint64_t n = 0;
        if (oplog::parseSegmentFileName(e.path().filename().string(), &n) && (first == 0 || n < first))
            first = n;
    }
    return first;
}

struct CappedEntry {
    mvcc::Timestamp ts;
    uint32_t coll;
    std::string key;
    std::string value;
};

// Capped collections' entries, each committed at its own timestamp (older
// than the checkpoint's, which nothing has committed at or above yet), so
// that their order (engine/capped_state.h) is what it was.
Status loadCapped(Session& session, const CheckpointMeta& meta, std::vector<CappedEntry>* entries) {
    std::sort(entries->begin(), entries->end(),
              [](const CappedEntry& a, const CappedEntry& b) { return a.ts < b.ts; });
    for (size_t i = 0; i < entries->size();) {
        const mvcc::Timestamp ts = (*entries)[i].ts;
        if (Status s = session.begin(); !s.ok())
            return s;
        for (; i < entries->size() && (*entries)[i].ts == ts; ++i) {
            const CappedEntry& e = (*entries)[i];
            if (Status s = session.put(meta.collections[e.coll], e.key, e.value); !s.ok())
                return s;
        }
        if (Status s = session.commit(ts); !s.ok())
            return s;
    }
    return Status::OK();
}

// The checkpoint file keeps its own record of a collection's options
// (checkpoint/checkpoint_file.h): field for field the engine's.
StoredCollectionOptions toStored(const CollectionOptions& o) {
    return {o.capped, o.cappedSizeBytes, o.cappedMaxDocs, o.expireAfterSeconds};
}

// The engine's options of every collection `meta` holds; Corruption naming
// the file and the collection for options the engine refuses (the file's
// checksums hold, so a writer put them there: the checkpoint is not loaded).
Status collectionOptionsOf(const std::string& path, const CheckpointMeta& meta,
                           std::vector<CollectionOptions>* out) {
    out->clear();
    for (size_t i = 0; i < meta.collections.size(); ++i) {
        const StoredCollectionOptions& o =
            meta.options.empty() ? StoredCollectionOptions{} : meta.options[i];
        CollectionOptions options{o.capped, o.cappedSizeBytes, o.cappedMaxDocs,
                                  o.expireAfterSeconds};
        if (Status s = validateCollectionOptions(options); !s.ok())
            return Status::Corruption(fmt::format("checkpoint {}: collection {}: {}", path,
                                                  meta.collections[i], s.message()));
        out->push_back(options);
    }
    return Status::OK();
}

}  // namespace

Status Checkpointer::load(LoadedCheckpoint* out) {
    *out = LoadedCheckpoint{};
    const std::string& dir = engine_.options_.path;
    auto listed = checkpoint::listCheckpoints(dir);
    if (!listed.ok())
        return listed.status();
    CheckpointMeta meta;
    std::vector<CollectionOptions> options;  // meta's, the engine's own
    const CheckpointFile* chosen = nullptr;
    for (const CheckpointFile& f : listed.value()) {
        Status v = checkpoint::verifyCheckpoint(f.path, &meta);
        if (v.ok())
            v = collectionOptionsOf(f.path, meta, &options);
        if (v.ok()) {
            chosen = &f;
            break;
        }
        ++out->skipped;
        out->skippedReason = v.message();
        fmt::print(stderr, "mvkv: {}: skipping a corrupt checkpoint: {}\n", dir, v.message());
    }
    if (!listed.value().empty()) {
        std::lock_guard lock(statsMutex_);
        stats_.lastNumber = listed.value().front().number;  // new ones go after every old one
    }
    if (!chosen) {
        // Without a checkpoint the whole log is replayed: it must all be there.
        uint64_t first = firstLogSegment(dir);
        if (!listed.value().empty() && first > 1)
            return Status::Corruption(fmt::format(
                "{}: no checkpoint is valid ({}) and the oplog starts at segment {}: what came "
                "before it is gone, so the data cannot be recovered from this directory",
                dir, out->skippedReason, first));
        return Status::OK();
    }
    auto session = engine_.openSession();
    session->setApplyingOplog(true);  // capped collections as they were, no evictions
    for (size_t i = 0; i < meta.collections.size(); ++i)
        if (Status s = session->createCollection(meta.collections[i], options[i]); !s.ok())
            return s;
    size_t inBatch = 0;
    std::vector<CappedEntry> capped;
    Status loaded = checkpoint::readCheckpointEntries(
        chosen->path, &meta,
        [&](uint32_t coll, std::string_view key, std::string_view value,
            mvcc::Timestamp ts) -> Status {
            if (options[coll].capped) {
                capped.push_back({ts, coll, std::string(key), std::string(value)});
                return Status::OK();
            }
            if (inBatch == 0)
                if (Status s = session->begin(); !s.ok())
                    return s;
            if (Status s = session->put(meta.collections[coll], key, value); !s.ok())
                return s;
            if (++inBatch == kLoadBatch) {
                inBatch = 0;
                return session->commit(meta.ts);
            }
            return Status::OK();
        });
    if (loaded.ok() && inBatch > 0)
        loaded = session->commit(meta.ts);
    if (loaded.ok())
        loaded = loadCapped(*session, meta, &capped);
    if (!loaded.ok()) {
        if (session->inTransaction())
            session->abort().ignore();
        return Status(loaded.code(), fmt::format("loading checkpoint {}: {}", chosen->path,
                                                 loaded.message()));
    }
    // History before the checkpoint is gone (oldest), and no commit may
    // land at or below it (the log's replay takes only what is newer).
    // Stable stays unset, as a new engine's is: the next checkpoints follow
    // all_durable until the application sets stable again (set at the
    // checkpoint's timestamp, it never moved for a user who never set it,
    // and every later checkpoint rewrote the same one).
    if (meta.ts != mvcc::kNoTimestamp) {
        engine_.txns_.raiseCheckpointFloor(meta.ts);
        if (Status s = engine_.txns_.setOldest(meta.ts); !s.ok())
            return s;
    }
    kept_.push_back({meta.number, meta.ts, meta.logEnd});
    out->loaded = true;
    out->number = meta.number;
    out->ts = meta.ts;
    out->logEnd = meta.logEnd;
    out->entries = meta.entries;
    std::lock_guard lock(statsMutex_);
    stats_.lastTs = meta.ts;
    stats_.lastEntries = meta.entries;
    stats_.lastBytes = meta.fileBytes;
    return Status::OK();
}

Status Checkpointer::checkpoint() {
    std::lock_guard one(runMutex_);
    const auto start = std::chrono::steady_clock::now();
    {
        std::lock_guard lock(statsMutex_);
        ++stats_.started;
    }
    const std::string& dir = engine_.options_.path;
    oplog::Oplog& oplog = engine_.log_->oplog();
    // The log position first, the timestamp second: a record logged before
    // the position is finished or newer than the timestamp (docs/oplog.md).
    CheckpointMeta meta;
    std::vector<std::shared_ptr<Collection>> collections;
    // C, held from the moment it is chosen until the read at C ends: oldest
    // may move past it meanwhile, and no sweep discards what the read needs.
    mvcc::TimestampPin pin;
    {
        // The catalog as of the log's end: every catalog change and its
        // record happen under this mutex (Session::changeCatalog).
        std::lock_guard catalogLog(engine_.catalogLogMutex_);
        meta.logEnd = oplog.end();
        if (positionTestHook_)
            positionTestHook_();
        pin = engine_.txns_.chooseCheckpointTimestamp();
        meta.ts = pin.ts();
        collections = engine_.catalog_.all();
    }
    uint64_t number;
    {
        std::lock_guard lock(statsMutex_);
        number = stats_.lastNumber + 1;
        stats_.lastAttemptTs = meta.ts;
    }
    meta.number = number;
    auto fail = [&](Status s) {
        std::lock_guard lock(statsMutex_);
        ++stats_.failures;
        ++stats_.failuresByReason[std::string(statusCodeName(s.code()))];
        stats_.lastError = s.message();
        stats_.lastFailure = s.toString();
        stats_.lastFailureTs = meta.ts;
        return s;
    };
    if (meta.ts == mvcc::kNoTimestamp && engine_.txns_.timestamps().oldest != mvcc::kNoTimestamp)
        return fail(Status::Busy(
            "no checkpoint timestamp: a running transaction holds a commit timestamp at or "
            "below oldest; commit or abort it and retry"));
    for (const auto& c : collections) {
        meta.collections.push_back(c->ns().ns());
        meta.options.push_back(toStored(c->options()));
    }
    auto writer = CheckpointWriter::create(dir, meta);
    if (!writer.ok())
        return fail(writer.status());
    if (testHook_)
        testHook_(meta.ts);
    if (meta.ts != mvcc::kNoTimestamp) {
        auto session = engine_.openSession();
        session->setMonitored(false);  // the engine's own reads: never profiled
        TxnOptions atC;
        atC.readTs = meta.ts;
        atC.pin = &pin;
        if (Status s = session->begin(atC); !s.ok())
            return fail(s);
        for (uint32_t i = 0; i < meta.collections.size(); ++i) {
            auto cursor = session->openCursor(meta.collections[i]);
            if (cursor.status().code() == StatusCode::kNamespaceNotFound)
                continue;  // dropped meanwhile: its drop is in the log after logEnd
            if (!cursor.ok())
                return fail(cursor.status());
            Cursor& c = *cursor.value();
            Status s = c.first();
            for (; s.ok() && c.valid(); s = c.next()) {
                // A capped collection's entries keep their timestamps: its order.
                // Stored values: a TTL collection's keep their times.
                if (Status a = writer.value()->add(i, c.key(), c.storedValue(), c.timestamp());
                    !a.ok())
                    return fail(a);
            }
            // A step that fails leaves the cursor invalid: the error, not the
            // end of the collection (a checkpoint missing the rest of it
            // would lose those keys once the log behind it is capped).
            if (!s.ok())
                return fail(s);
        }
        session->commit().ignore();
    }
    pin.release();  // the read at C has ended: its history may go
    // Everything before logEnd durable before the checkpoint is: recovery
    // replays only what comes after it (and what is newer than its timestamp).
    if (Status s = oplog.flush(); !s.ok())
        return fail(s);
    if (Status s = writer.value()->finish(); !s.ok()) {
        // Renamed before the directory sync failed: the file stands (whole,
        // synced; a crash may or may not keep it, and either is a valid
        // state), so its number is taken and the next checkpoint goes after it.
        if (writer.value()->renamed()) {
            std::lock_guard lock(statsMutex_);
            stats_.lastNumber = number;
        }
        return fail(s);
    }
    {
        std::lock_guard lock(statsMutex_);
        stats_.lastNumber = number;  // taken, whatever happens below
    }
    const uint64_t entries = writer.value()->entries();
    std::error_code ec;
    const uint64_t bytes = std::filesystem::file_size(writer.value()->path(), ec);
    // Keep the newest checkpointsKept that this process knows valid (a
    // corrupt one found at open does not count, so it never pushes out the
    // valid fallback), and cap the oplog behind all of them: a corrupt
    // newest one falls back to it, and its replay must find every record it needs.
    kept_.push_back({number, meta.ts, meta.logEnd});
    const size_t keep = engine_.options_.checkpointsKept;
    while (kept_.size() > keep)
        kept_.pop_front();
    if (Status s = removeCheckpointsBefore(kept_.front().number); !s.ok())
        return fail(s);
    if (kept_.size() == keep) {
        // Below the oldest's position, only what every kept checkpoint
        // holds may go: a newer checkpoint can have a lower timestamp
        // (stable set below the all_durable an earlier one followed), and
        // it needs every record above its own.
        mvcc::Timestamp heldByAll = kept_.front().ts;
        for (const Kept& k : kept_)
            heldByAll = std::min(heldByAll, k.ts);
        if (Status t = oplog.truncate(kept_.front().logEnd, heldByAll); !t.ok())
            return fail(t);
    }
    std::lock_guard lock(statsMutex_);
    ++stats_.count;
    stats_.lastTs = meta.ts;
    stats_.lastEntries = entries;
    stats_.lastBytes = bytes;
    stats_.lastMicros = microsSince(start);
    stats_.lastError.clear();
    return Status::OK();
}

Status Checkpointer::removeCheckpointsBefore(uint64_t number) {
    const std::string& dir = engine_.options_.path;
    // Leftover temp files of a crash first (no other checkpoint is running).
    if (Status s = checkpoint::pruneCheckpoints(dir, SIZE_MAX); !s.ok())
        return s;
    auto listed = checkpoint::listCheckpoints(dir);
    if (!listed.ok())
        return listed.status();
    bool removed = false;
    for (const CheckpointFile& f : listed.value()) {
        if (f.number >= number)
            continue;
        if (Status s = removeFile(f.path, "checkpointRemove"); !s.ok())
            return s;
        removed = true;
    }
    return removed ? syncDirectory(dir, "checkpointRemove") : Status::OK();
}

void Checkpointer::start(std::chrono::milliseconds interval) {
    if (interval.count() <= 0)
        return;
    thread_ = std::thread([this, interval] { run(interval); });
}

void Checkpointer::stop() {
    {
        std::lock_guard lock(threadMutex_);
        stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable())
        thread_.join();
}

void Checkpointer::run(std::chrono::milliseconds interval) {
    std::unique_lock lock(threadMutex_);
    while (!wake_.wait_for(lock, interval, [&] { return stop_; })) {
        lock.unlock();
        checkpoint().ignore();  // counted in stats (failures, lastError)
        lock.lock();
    }
}

void Checkpointer::setTestHook(std::function<void(mvcc::Timestamp)> hook) {
    std::lock_guard one(runMutex_);
    testHook_ = std::move(hook);
}

void Checkpointer::setPositionTestHook(std::function<void()> hook) {
    std::lock_guard one(runMutex_);
    positionTestHook_ = std::move(hook);
}

CheckpointStats Checkpointer::stats() const {
    std::lock_guard lock(statsMutex_);
    return stats_;
}

}  // namespace mvkv::engine
