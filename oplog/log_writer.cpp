#include "oplog/log_writer.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <thread>
#include <utility>

#include "failpoint/failpoints.h"
#include "oplog/log_format.h"
#include "util/file_sync.h"
#include "util/spin_then_block.h"

namespace mvkv::oplog {

std::string_view syncModeName(SyncMode mode) {
    switch (mode) {
        case SyncMode::kNone:
            return "none";
        case SyncMode::kWrite:
            return "write";
        case SyncMode::kFsync:
            return "fsync";
    }
    return "?";
}

LogWriter::LogWriter(LogWriterOptions options) : options_(std::move(options)) {}

StatusWith<std::unique_ptr<LogWriter>> LogWriter::create(LogWriterOptions options,
                                                         uint64_t firstSegment) {
    if (options.segmentBytes < kSegmentStartBytes + kRecordHeaderBytes)
        return Status::InvalidArgument(
            fmt::format("segmentBytes {} is too small", options.segmentBytes));
    std::unique_ptr<LogWriter> w(new LogWriter(std::move(options)));
    // The start record names the previous segment's size as it is now.
    uint64_t prevBytes = 0;
    if (firstSegment > 1) {
        std::error_code ec;
        const auto size = std::filesystem::file_size(
            w->options_.dir + "/" + segmentFileName(firstSegment - 1), ec);
        if (!ec)
            prevBytes = size;
    }
    if (Status s = w->openSegmentFile(firstSegment); !s.ok())
        return s;
    std::string header = encodeSegmentStart(firstSegment, prevBytes);
    if (Status s = w->writeAll(header, "oplogOpen"); !s.ok())
        return s;
    if (Status s = w->syncFile("oplogOpen"); !s.ok())
        return s;
    if (Status s = syncDirectory(w->options_.dir, "oplogOpen"); !s.ok())
        return s;
    w->segment_ = firstSegment;
    w->segmentSize_ = header.size();
    w->stats_.segments = 1;
    w->stats_.currentSegment = firstSegment;
    return w;
}

LogWriter::~LogWriter() {
    close().ignore();
}

Status LogWriter::openSegmentFile(uint64_t number) {
    std::string path = options_.dir + "/" + segmentFileName(number);
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return ioError("create log segment", path);
    fd_ = fd;
    fdSegment_ = number;
    return Status::OK();
}

Status LogWriter::writeAll(std::string_view bytes, std::string_view site) {
    const std::string path = options_.dir + "/" + segmentFileName(fdSegment_);
    if (failpoint::failOplogWrite.check()) {
        errno = EIO;
        return ioError("write log segment (failpoint failOplogWrite)", path);
    }
    return writeFully(fd_, bytes, site, "write log segment", path);
}

Status LogWriter::syncFile(std::string_view site) {
    const std::string path = options_.dir + "/" + segmentFileName(fdSegment_);
    if (failpoint::failOplogFsync.check()) {
        errno = EIO;
        return ioError("fdatasync log segment (failpoint failOplogFsync)", path);
    }
    return mvkv::syncFile(fd_, true, site, path);
}

Status LogWriter::writeChunks(std::vector<Chunk>& chunks, bool sync) {
    const uint64_t startSegment = fdSegment_;
    const off_t startOffset = ::lseek(fd_, 0, SEEK_CUR);
    Status s = writeChunksOnce(chunks, sync, startSegment);
    if (!s.ok() && startOffset >= 0)
        return Status(s.code(), s.message() + cutFailedBatch(startSegment, startOffset));
    if (!s.ok())
        return Status(s.code(), s.message() +
                                    "; the failed batch's records were not acknowledged, but they "
                                    "may come back after a restart (its start was not known)");
    return s;
}

Status LogWriter::writeChunksOnce(std::vector<Chunk>& chunks, bool sync, uint64_t startSegment) {
    for (Chunk& c : chunks) {
        if (c.segment != fdSegment_) {
            // Everything in the old segment comes before what follows: make
            // it durable first, so recovery never finds a hole behind a
            // synced record.
            if (Status s = syncFile("segmentSwitch"); !s.ok())
                return s;
            ::close(fd_);
            fd_ = -1;
            if (Status s = openSegmentFile(c.segment); !s.ok())
                return s;
            if (Status s = syncDirectory(options_.dir, "segmentSwitch"); !s.ok())
                return s;
        }
        if (Status s = writeAll(c.bytes, c.segment != startSegment ? "segmentSwitch" : "oplogAppend");
            !s.ok())
            return s;
    }
    failpoint::crashPoint("afterOplogWrite");
    if (sync)
        return syncFile("oplogAppend");
    return Status::OK();
}

std::string LogWriter::cutFailedBatch(uint64_t startSegment, off_t startOffset) {
    // None of the batch's records was acknowledged (a commit waits for its
    // batch), so none may come back after a restart: the bytes the batch
    // wrote, whole or torn, are cut from the log. The writer keeps the
    // error and never writes again, so the file it holds does not matter
    // after this; the cut's own sync is not a retry of a failed one (it
    // makes a truncation durable, not the lost pages).
    // The segments the batch created go first, durably: a later segment
    // left behind a shortened one would read as a log whose middle is
    // missing (a refused open), worse than records that come back.
    std::string failed;
    for (uint64_t n = startSegment + 1; n <= fdSegment_ && n > startSegment; ++n) {
        const std::string path = options_.dir + "/" + segmentFileName(n);
        if (::unlink(path.c_str()) != 0 && errno != ENOENT)
            failed += fmt::format("; could not remove {}: {}", path, std::strerror(errno));
    }
    if (fdSegment_ != startSegment && failed.empty()) {
        if (Status d = syncDirectory(options_.dir, "logCut"); !d.ok())
            failed += "; " + d.message();
    }
    const std::string path = options_.dir + "/" + segmentFileName(startSegment);
    if (failed.empty()) {
        if (fdSegment_ != startSegment || fd_ < 0) {
            if (fd_ >= 0)
                ::close(fd_);
            fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
            fdSegment_ = startSegment;
        }
        if (fd_ < 0 || ::ftruncate(fd_, startOffset) != 0 || ::fdatasync(fd_) != 0)
            failed += fmt::format("; could not cut {} back to {} bytes: {}", path,
                                  static_cast<int64_t>(startOffset), std::strerror(errno));
    }
    if (!failed.empty())
        return "; the failed batch's records were not acknowledged, but they may come back after "
               "a restart" + failed;
    return fmt::format("; the failed batch was cut from {} (back to {} bytes): its records were "
                       "not acknowledged and do not come back after a restart",
                       path, static_cast<int64_t>(startOffset));
}

void LogWriter::leadOneBatch(std::unique_lock<SpinThenBlockMutex>& lock, bool sync) {
    leading_ = true;
    std::vector<Chunk> batch;
    batch.swap(pending_);
    pendingBytes_ = 0;
    uint64_t batchEnd = appended_;
    lock.unlock();
    const auto start = std::chrono::steady_clock::now();
    Status s = writeChunks(batch, sync);
    const auto took = std::chrono::steady_clock::now() - start;
    lock.lock();
    // The largest buffer of the batch is kept for the next chunk (not one
    // a huge record grew: that memory goes back).
    for (Chunk& c : batch) {
        if (c.bytes.capacity() > spare_.capacity() && c.bytes.capacity() <= 4 * kNoneFlushBytes) {
            c.bytes.clear();
            spare_.swap(c.bytes);
        }
    }
    if (sync)
        lastSyncMicros_ = static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(took).count());
    leading_ = false;
    if (!s.ok() && error_.ok())
        error_ = s;
    if (s.ok()) {
        if (sync)
            lastBatchRecords_ = batchEnd - synced_;
        written_ = batchEnd;
        ++stats_.batches;
        if (sync) {
            synced_ = batchEnd;
            ++stats_.syncs;
        }
    }
    done_.notify_all();
}

Status LogWriter::append(std::string_view payload, SyncMode mode, LogPosition* where) {
    if (payload.size() > kMaxRecordBytes)
        return Status::InvalidArgument(fmt::format(
            "an oplog record of {} bytes is over the limit of {}", payload.size(), kMaxRecordBytes));
    // Framed (checksummed) before the lock: committers share mutex_.
    const auto framing = recordHeader(payload);
    std::unique_lock lock(mutex_);  // held for a copy: worth waiting out (spins first)
    if (!error_.ok())
        return error_;
    if (closed_)
        return Status::IllegalOperation("the log writer is closed");
    const uint64_t framed = kRecordHeaderBytes + payload.size();
    // A record that would pass the segment's size starts the next segment
    // (a segment holds at least one record, however large).
    if (segmentSize_ > kSegmentStartBytes && segmentSize_ + framed > options_.segmentBytes) {
        const uint64_t prevBytes = segmentSize_;
        ++segment_;
        std::string header = encodeSegmentStart(segment_, prevBytes);
        segmentSize_ = header.size();
        pending_.push_back({segment_, std::move(header)});
        ++stats_.segments;
        stats_.currentSegment = segment_;
    }
    if (pending_.empty() || pending_.back().segment != segment_)
        pending_.push_back({segment_, std::exchange(spare_, {})});
    if (where)
        *where = {segment_, segmentSize_};
    std::string& bytes = pending_.back().bytes;
    bytes.append(framing.data(), framing.size());
    bytes.append(payload.data(), payload.size());
    segmentSize_ += framed;
    pendingBytes_ += framed;
    const uint64_t seq = ++appended_;
    if (arrivalWaiters_ > 0)
        arrived_.notify_one();  // a leader is waiting to carry it
    ++stats_.records;
    stats_.bytes += framed;
    if (mode == SyncMode::kFsync)
        syncWanted_ = seq;
    if (mode == SyncMode::kNone) {
        if (pendingBytes_ >= kNoneFlushBytes && !leading_)
            leadOneBatch(lock, false);
        return error_;
    }
    // Group commit: whoever finds no leader writes everything pending (and
    // syncs if any record up to there asked for it); the others wait for a
    // batch that covers them.
    bool waited = false;
    bool delayed = false;
    while (true) {
        if (!error_.ok())
            return error_;
        if (written_ >= seq && (mode != SyncMode::kFsync || synced_ >= seq))
            return Status::OK();
        if (!leading_) {
            bool sync = syncWanted_ > synced_;
            if (written_ >= seq && sync && pending_.empty()) {
                // Written by an earlier batch but not synced: sync alone.
                leading_ = true;
                uint64_t end = written_;
                lock.unlock();
                Status s = syncFile("oplogAppend");
                lock.lock();
                leading_ = false;
                if (!s.ok() && error_.ok())
                    error_ = s;
                if (s.ok()) {
                    synced_ = std::max(synced_, end);
                    ++stats_.syncs;
                }
                done_.notify_all();
                continue;
            }
            if (sync && !delayed && (waited || lastBatchRecords_ >= 2)) {
                // About to lead a sync while others are committing too
                // (this thread waited for a batch, or the last sync carried
                // several records): wait a little (a fraction of a sync, at
                // most 200 us) for the committers the last batch released
                // to append, so this sync carries their records too;
                // otherwise two threads take turns syncing one record each
                // (PostgreSQL's commit_delay, made adaptive). One thread
                // alone never waits.
                waited = false;
                delayed = true;
                const uint64_t before = appended_;
                const auto delay =
                    std::chrono::microseconds(std::min<uint64_t>(200, lastSyncMicros_ / 2));
                ++arrivalWaiters_;
                arrived_.wait_for(lock, delay,
                                  [&] { return appended_ != before || !error_.ok(); });
                --arrivalWaiters_;
                continue;
            }
            leadOneBatch(lock, sync);
            continue;
        }
        done_.wait(lock);
        waited = true;
    }
}

Status LogWriter::flush() {
    std::unique_lock lock(mutex_);
    while (true) {
        if (!error_.ok())
            return error_;
        if (fd_ < 0 && closed_)
            return Status::OK();
        if (written_ >= appended_ && synced_ >= appended_)
            return Status::OK();
        if (!leading_) {
            syncWanted_ = appended_;
            leadOneBatch(lock, true);
            continue;
        }
        done_.wait(lock);
    }
}

Status LogWriter::writePending() {
    std::unique_lock lock(mutex_);
    while (true) {
        if (!error_.ok())
            return error_;
        if (written_ >= appended_)
            return Status::OK();
        if (!leading_) {
            leadOneBatch(lock, false);
            continue;
        }
        done_.wait(lock);
    }
}

LogPosition LogWriter::end() const {
    std::lock_guard lock(mutex_);
    return {segment_, segmentSize_};
}

Status LogWriter::close() {
    Status s = flush();
    std::lock_guard lock(mutex_);
    closed_ = true;
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
    return s;
}

LogWriter::Stats LogWriter::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

}  // namespace mvkv::oplog
