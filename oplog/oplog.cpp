#include "oplog/oplog.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "oplog/log_format.h"
#include "util/file_sync.h"
#include "util/spin_then_block.h"

namespace mvkv::oplog {

// Open read handles of segment files. A handle stays valid for a reader
// that holds it even after its segment is dropped (unlinked) meanwhile.
class Oplog::SegmentFiles {
  public:
    explicit SegmentFiles(std::string dir) : dir_(std::move(dir)) {}

    struct Handle {
        int fd = -1;
        ~Handle() {
            if (fd >= 0)
                ::close(fd);
        }
    };

    StatusWith<std::shared_ptr<Handle>> get(uint64_t segment) {
        std::lock_guard lock(mutex_);
        auto it = open_.find(segment);
        if (it != open_.end())
            return it->second;
        std::string path = dir_ + "/" + segmentFileName(segment);
        auto h = std::make_shared<Handle>();
        h->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (h->fd < 0)
            return Status::IOError(
                fmt::format("open log segment {}: {}", path, std::strerror(errno)));
        open_.emplace(segment, h);
        return h;
    }

    void forget(uint64_t segment) {
        std::lock_guard lock(mutex_);
        open_.erase(segment);
    }

    const std::string& dir() const { return dir_; }

  private:
    const std::string dir_;
    std::mutex mutex_;
    std::map<uint64_t, std::shared_ptr<Handle>> open_;
};

Oplog::Oplog(OplogOptions options, std::function<mvcc::Timestamp()> noHolesPoint)
    : options_(std::move(options)),
      files_(std::make_unique<SegmentFiles>(options_.dir)),
      visibility_(std::move(noHolesPoint)) {}

Oplog::~Oplog() {
    if (writer_)
        writer_->close().ignore();
}

StatusWith<std::unique_ptr<Oplog>> Oplog::open(OplogOptions options,
                                               const std::vector<ExistingRecord>& existing,
                                               uint64_t nextSegment,
                                               std::function<mvcc::Timestamp()> noHolesPoint) {
    if (options.capBytes == 0)
        return Status::InvalidArgument("the oplog cap must be at least one byte");
    std::unique_ptr<Oplog> log(new Oplog(std::move(options), std::move(noHolesPoint)));
    const std::string& dir = log->options_.dir;
    // Every segment left from before, with its size on disk.
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        uint64_t number = 0;
        if (!parseSegmentFileName(e.path().filename().string(), &number) || number >= nextSegment)
            continue;
        log->segments_[number].bytes = std::filesystem::file_size(e.path(), ec);
    }
    if (ec)
        return Status::IOError(fmt::format("list {}: {}", dir, ec.message()));
    for (const ExistingRecord& r : existing) {
        log->indexLocked({{r.ts, 0}, r.segment, r.offset, r.length, r.entries});
        Segment& seg = log->segments_[r.segment];
        seg.maxTs = std::max(seg.maxTs, r.ts);
    }
    // Segments (numbered from 1) dropped by capping before this open: a
    // reader positioned before the oldest record left is lost, as it was
    // before the restart.
    if (!log->segments_.empty() && log->segments_.begin()->first > 1) {
        mvcc::Timestamp oldest = log->index_.empty() ? log->visibility_.refreshNow() + 1
                                                     : log->index_.front().key.ts;
        // Conservatively {oldest, 0}: a dropped segment may have held
        // records at the oldest timestamp too (a prepare and its commit at
        // one timestamp), and a reader positioned inside that timestamp
        // (a change stream's resume token counts its entries) would
        // otherwise skip or repeat entries without knowing.
        log->droppedThrough_ = {oldest, 0};
    }
    auto writer = LogWriter::create({dir, log->options_.segmentBytes}, nextSegment);
    if (!writer.ok())
        return writer.status();
    log->writer_ = std::move(writer).value();
    log->segments_[nextSegment].bytes = kSegmentStartBytes;
    log->visibility_.refreshNow();
    return log;
}

StatusWith<std::unique_ptr<Oplog>> Oplog::openInMemory(
    uint64_t capBytes, std::function<mvcc::Timestamp()> noHolesPoint) {
    if (capBytes == 0)
        return Status::InvalidArgument("the oplog cap must be at least one byte");
    OplogOptions options;
    options.mode = SyncMode::kNone;
    options.capBytes = capBytes;
    std::unique_ptr<Oplog> log(new Oplog(std::move(options), std::move(noHolesPoint)));
    log->visibility_.refreshNow();
    return log;
}

void Oplog::capMemoryLocked() {
    // Oldest first, the newest record always kept.
    while (memBytes_ > options_.capBytes && index_.size() > 1) {
        const RecordRef& r = index_.front();
        auto it = memPayloads_.find(r.key.seq);
        memBytes_ -= it->second.size();
        memPayloads_.erase(it);
        droppedThrough_ = std::max(droppedThrough_, r.key);
        entries_ -= r.entries;
        ++recordsDropped_;
        index_.pop_front();
    }
}

void Oplog::indexLocked(RecordRef ref) {
    ref.key.seq = nextSeq_++;
    // Nearly always the newest: search from the back.
    auto pos = index_.end();
    while (pos != index_.begin() && ref.key < std::prev(pos)->key)
        --pos;
    entries_ += ref.entries;
    index_.insert(pos, ref);
}

Status Oplog::append(const std::vector<OplogEntry>& entries) {
    if (entries.empty())
        return Status::OK();
    return append(encodeEntries(entries), entries.front().ts,
                  static_cast<uint32_t>(entries.size()));
}

Status Oplog::flush() {
    if (!writer_)
        return Status::OK();
    // Every record at or below the visible point was appended before that
    // point was published, so the flush below covers them all.
    const mvcc::Timestamp visible = visibleTs();
    Status s = writer_->flush();
    if (s.ok()) {
        mvcc::Timestamp seen = flushedTs_.load(std::memory_order_relaxed);
        while (seen < visible &&
               !flushedTs_.compare_exchange_weak(seen, visible, std::memory_order_release,
                                                 std::memory_order_relaxed)) {
        }
    }
    return s;
}

mvcc::Timestamp Oplog::syncedTs() const {
    if (!writer_ || options_.mode == SyncMode::kFsync)
        return visibleTs();
    return flushedTs_.load(std::memory_order_acquire);
}

Status Oplog::append(std::string_view payload, mvcc::Timestamp ts, uint32_t entries) {
    if (!writer_) {
        std::string copy(payload);  // outside the lock
        std::lock_guard lock(mutex_);  // every committer passes here too (spins first)
        const uint64_t seq = nextSeq_;
        indexLocked({{ts, 0}, 0, 0, static_cast<uint32_t>(copy.size()), entries});
        memBytes_ += copy.size();
        memPayloads_.emplace(seq, std::move(copy));
        capMemoryLocked();
        return Status::OK();
    }
    LogPosition where;
    if (Status s = writer_->append(payload, options_.mode, &where); !s.ok())
        return s;
    RecordRef ref{{ts, 0}, where.segment, where.offset, static_cast<uint32_t>(payload.size()),
                  entries};
    std::lock_guard lock(mutex_);  // every committer passes here (spins first)
    Segment& seg = segments_[where.segment];
    seg.bytes = std::max(seg.bytes, where.offset + kRecordHeaderBytes + payload.size());
    seg.maxTs = std::max(seg.maxTs, ref.key.ts);
    indexLocked(ref);
    return Status::OK();
}

Status Oplog::recordsAfter(RecordKey pos, bool fromStart, mvcc::Timestamp upTo, size_t max,
                           std::vector<RecordRef>* out) const {
    std::lock_guard lock(mutex_);
    if (!fromStart && droppedThrough_ > pos)
        return Status(StatusCode::kCappedPositionLost,
                      fmt::format("the oplog was truncated past this reader's position (timestamp "
                                  "{}): entries up to timestamp {} are gone; restart from the "
                                  "oldest entry (timestamp {}) or resynchronize",
                                  pos.ts, droppedThrough_.ts,
                                  index_.empty() ? 0 : index_.front().key.ts));
    auto it = std::upper_bound(index_.begin(), index_.end(), pos,
                               [](const RecordKey& k, const RecordRef& r) { return k < r.key; });
    for (; it != index_.end() && out->size() < max && it->key.ts <= upTo; ++it)
        out->push_back(*it);
    return Status::OK();
}

Status Oplog::readRecord(const RecordRef& ref, std::string* payload) {
    if (!writer_) {
        std::lock_guard lock(mutex_);
        auto it = memPayloads_.find(ref.key.seq);
        if (it == memPayloads_.end())
            return Status(StatusCode::kCappedPositionLost,
                          fmt::format("the in-memory oplog was capped under this reader (the "
                                      "record at timestamp {} was dropped); restart from the "
                                      "oldest entry or resynchronize",
                                      ref.key.ts));
        payload->assign(it->second);
        return Status::OK();
    }
    auto handle = files_->get(ref.segment);
    if (!handle.ok()) {
        // A new segment still in the writer's buffer (sync mode none).
        if (Status s = writer_->writePending(); !s.ok())
            return s;
        handle = files_->get(ref.segment);
        if (!handle.ok()) {
            std::lock_guard lock(mutex_);
            if (!segments_.count(ref.segment))
                return Status(StatusCode::kCappedPositionLost,
                              fmt::format("the oplog was truncated under this reader (segment {} "
                                          "was dropped); restart from the oldest entry or "
                                          "resynchronize",
                                          ref.segment));
            return handle.status();
        }
    }
    const int fd = handle.value()->fd;
    std::string buf(kRecordHeaderBytes + ref.length, '\0');
    auto readOnce = [&]() -> ssize_t {
        size_t done = 0;
        while (done < buf.size()) {
            ssize_t n = ::pread(fd, buf.data() + done, buf.size() - done,
                                static_cast<off_t>(ref.offset + done));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return n < 0 ? -1 : static_cast<ssize_t>(done);
            done += static_cast<size_t>(n);
        }
        return static_cast<ssize_t>(done);
    };
    ssize_t got = readOnce();
    if (got >= 0 && static_cast<size_t>(got) < buf.size()) {
        // Still in the writer's buffer (sync mode none): write it out.
        if (Status s = writer_->writePending(); !s.ok())
            return s;
        got = readOnce();
    }
    const std::string path = files_->dir() + "/" + segmentFileName(ref.segment);
    if (got < 0)
        return Status::IOError(fmt::format("read log segment {}: {}", path, std::strerror(errno)));
    if (static_cast<size_t>(got) < buf.size() || getU32(buf.data()) != ref.length)
        return Status::Corruption(
            fmt::format("log segment {} offset {}: the record is not there", path, ref.offset));
    std::string_view body(buf.data() + kRecordHeaderBytes, ref.length);
    if (getU64(buf.data() + 4) != recordChecksum(body))
        return Status::Corruption(
            fmt::format("log segment {} offset {}: checksum mismatch", path, ref.offset));
    payload->assign(body);
    return Status::OK();
}

Status Oplog::truncate(LogPosition checkpointEnd, mvcc::Timestamp checkpointTs) {
    if (!writer_)
        return Status::OK();  // capped as it is appended
    std::vector<uint64_t> drop;
    {
        std::lock_guard lock(mutex_);
        const uint64_t current = writer_->end().segment;
        uint64_t total = 0;
        for (const auto& [n, seg] : segments_)
            total += seg.bytes;
        for (const auto& [n, seg] : segments_) {
            if (n >= current || n >= checkpointEnd.segment || seg.maxTs > checkpointTs ||
                total - seg.bytes < options_.capBytes)
                break;
            total -= seg.bytes;
            drop.push_back(n);
        }
        if (drop.empty())
            return Status::OK();
        mvcc::Timestamp droppedMaxTs = 0;
        for (uint64_t n : drop) {
            droppedMaxTs = std::max(droppedMaxTs, segments_[n].maxTs);
            segments_.erase(n);
        }
        // Their records leave the index; the newest of them is where a
        // reader's position becomes lost. The index is in timestamp order,
        // so they all lie in its prefix up to droppedMaxTs: only that is
        // visited. Every committer waits for this lock, so a walk of the
        // whole index here (millions of records) stalled writes for as long.
        auto dropped = [&](const RecordRef& r) {
            return std::binary_search(drop.begin(), drop.end(), r.segment);
        };
        const auto prefixEnd = std::upper_bound(
            index_.begin(), index_.end(), droppedMaxTs,
            [](mvcc::Timestamp ts, const RecordRef& r) { return ts < r.key.ts; });
        for (auto it = index_.begin(); it != prefixEnd; ++it) {
            if (dropped(*it)) {
                droppedThrough_ = std::max(droppedThrough_, it->key);
                entries_ -= it->entries;
            }
        }
        // The few kept records of the prefix move to its front, in order;
        // the deque then shifts them over what is erased.
        auto keptEnd = std::remove_if(index_.begin(), prefixEnd, dropped);
        index_.erase(keptEnd, prefixEnd);
        segmentsDropped_ += drop.size();
    }
    for (uint64_t n : drop) {
        // Unlinked before its handle is forgotten: a reader that opens it
        // after this finds no file instead of caching a handle forever.
        std::string path = options_.dir + "/" + segmentFileName(n);
        Status removed = removeFile(path, "capping");
        files_->forget(n);
        if (!removed.ok())
            return removed;
    }
    return syncDirectory(options_.dir, "capping");
}

OplogStats Oplog::stats() const {
    OplogStats out;
    LogWriter::Stats w = writer_ ? writer_->stats() : LogWriter::Stats{};
    {
        std::lock_guard lock(mutex_);
        out.entries = entries_;
        out.records = index_.size();
        for (const auto& [n, seg] : segments_)
            out.bytes += seg.bytes;
        out.bytes += memBytes_;
        out.recordsDropped = recordsDropped_;
        out.inMemory = !writer_;
        out.segments = segments_.size();
        if (!index_.empty()) {
            out.firstTs = index_.front().key.ts;
            out.lastTs = index_.back().key.ts;
        }
        out.segmentsDropped = segmentsDropped_;
    }
    out.visibleTs = visibility_.visible();
    out.batches = w.batches;
    out.meanBatch = w.batches ? static_cast<double>(w.records) / static_cast<double>(w.batches) : 0;
    out.syncs = w.syncs;
    out.visibilityPublications = visibility_.publications();
    out.capBytes = options_.capBytes;
    return out;
}

}  // namespace mvkv::oplog
