#include "recovery/durable_log.h"

#include "oplog/log_format.h"
#include "util/file_sync.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <xxhash.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace mvkv::recovery {

namespace {

constexpr const char* kMarkerName = "MVKV";
constexpr const char* kLockName = "mvkv.lock";
constexpr const char* kCleanShutdownName = "clean-shutdown";

// Checksummed, so that a damaged note is ignored rather than believed.
std::string cleanShutdownText(oplog::LogPosition end) {
    std::string body = fmt::format("mvkv clean shutdown\nlog end {} {}\n", end.segment, end.offset);
    return body + fmt::format("checksum {:016x}\n", XXH3_64bits(body.data(), body.size()));
}

// The clean-shutdown note, if there is one that reads.
std::optional<oplog::LogPosition> readCleanShutdown(const std::string& dir) {
    std::ifstream in(dir + "/" + kCleanShutdownName);
    if (!in)
        return std::nullopt;
    std::stringstream text;
    text << in.rdbuf();
    unsigned long long segment = 0, offset = 0;
    if (std::sscanf(text.str().c_str(), "mvkv clean shutdown\nlog end %llu %llu", &segment,
                    &offset) != 2)
        return std::nullopt;
    if (text.str() != cleanShutdownText({segment, offset}))
        return std::nullopt;
    return oplog::LogPosition{segment, offset};
}

std::string markerText(int version) {
    return fmt::format("mvkv data directory\nformat {}\n", version);
}

Status checkOrWriteMarker(const std::string& dir) {
    namespace fs = std::filesystem;
    const fs::path marker = fs::path(dir) / kMarkerName;
    std::error_code ec;
    if (fs::exists(marker, ec)) {
        std::ifstream in(marker);
        std::stringstream text;
        text << in.rdbuf();
        int version = 0;
        std::string body = text.str();
        if (std::sscanf(body.c_str(), "mvkv data directory\nformat %d", &version) != 1)
            return Status::InvalidArgument(
                fmt::format("{} is not an mvkv marker file; is {} an mvkv data directory?",
                            marker.string(), dir));
        if (version != DurableLog::kFormatVersion)
            return Status::InvalidArgument(fmt::format(
                "{} holds mvkv data of format {}; this build reads format {}", dir, version,
                DurableLog::kFormatVersion));
        return Status::OK();
    }
    // A new data directory must be empty (but for a lock file of ours).
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        if (e.path().filename() != kLockName)
            return Status::InvalidArgument(fmt::format(
                "{} is not an mvkv data directory (no {} file) and is not empty; use an empty "
                "or new directory",
                dir, kMarkerName));
    }
    if (ec)
        return Status::IOError(fmt::format("list {}: {}", dir, ec.message()));
    return writeFileAtomically(dir, kMarkerName, markerText(DurableLog::kFormatVersion), "marker");
}

}  // namespace

StatusWith<std::unique_ptr<DurableLog>> DurableLog::open(const std::string& dir,
                                                         Recovered* out) {
    *out = Recovered{};
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
        return Status::IOError(fmt::format("create data directory {}: {}", dir, ec.message()));
    const std::string lockPath = dir + "/" + kLockName;
    int lockFd = ::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lockFd < 0)
        return Status::IOError(fmt::format("open {}: {}", lockPath, std::strerror(errno)));
    if (::flock(lockFd, LOCK_EX | LOCK_NB) != 0) {
        int err = errno;
        ::close(lockFd);
        if (err == EWOULDBLOCK)
            return Status::IllegalOperation(fmt::format(
                "{} is in use by another mvkv engine (its lock file {} is held)", dir, lockPath));
        return Status::IOError(fmt::format("lock {}: {}", lockPath, std::strerror(err)));
    }
    std::unique_ptr<DurableLog> log(new DurableLog(dir, lockFd));
    if (Status s = checkOrWriteMarker(dir); !s.ok())
        return s;
    out->cleanEnd = readCleanShutdown(dir);
    // Every good record up to the first damage, then those found past it.
    Status decodeError;
    auto decode = [&](uint64_t segment, uint64_t offset, std::string_view payload, Record* r) {
        Status d = oplog::decodeEntries(payload, &r->entries);
        if (!d.ok() || r->entries.empty())
            return Status::Corruption(fmt::format("{}: segment {} offset {}: {}", dir, segment,
                                                  offset,
                                                  d.ok() ? "a record with no entries" : d.message()));
        r->where = {r->entries.front().ts, segment, offset, static_cast<uint32_t>(payload.size()),
                    static_cast<uint32_t>(r->entries.size())};
        r->preparedDurableTs = oplog::takePreparedDurableTs(&r->entries);
        return Status::OK();
    };
    Status scanned = oplog::scanLog(
        dir,
        [&](uint64_t segment, uint64_t offset, std::string_view payload) {
            if (!decodeError.ok())
                return;
            Record r;
            decodeError = decode(segment, offset, payload, &r);
            if (!decodeError.ok())
                return;
            out->entries += r.entries.size();
            out->records.push_back(std::move(r));
        },
        &out->tail,
        [&](uint64_t segment, uint64_t offset, std::string_view payload) {
            Record r;
            if (decode(segment, offset, payload, &r).ok())
                out->after.push_back(std::move(r));
            else
                ++out->afterUndecodable;
        },
        oplog::plausiblePayload);
    if (!scanned.ok())
        return scanned;
    if (!decodeError.ok())
        return decodeError;
    return log;
}

Status DurableLog::cut(const oplog::LogTail& tail) {
    return oplog::cutLogTail(dir_, tail);
}

Status DurableLog::forgetCleanShutdown() {
    return removeFileDurably(dir_, kCleanShutdownName, "cleanShutdown");
}

Status DurableLog::startOplog(oplog::OplogOptions options, const Recovered& recovered,
                              uint64_t minNextSegment,
                              std::function<mvcc::Timestamp()> noHolesPoint) {
    options.dir = dir_;
    // Past every segment on disk, so the numbers stay contiguous (a gap
    // reads as a missing segment).
    uint64_t nextSegment = 1;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir_, ec)) {
        uint64_t n = 0;
        if (oplog::parseSegmentFileName(e.path().filename().string(), &n))
            nextSegment = std::max(nextSegment, n + 1);
    }
    if (ec)
        return Status::IOError(fmt::format("list {}: {}", dir_, ec.message()));
    // New records count as after the loaded checkpoint's position only in a
    // later segment; when a cut removed segments up to it, header-only
    // segments fill the numbers between (a gap reads as a missing segment),
    // and the log keeps a segment at the checkpoint's (the next open checks
    // that the log reaches back to it).
    if (nextSegment == 1 && minNextSegment > 1)
        nextSegment = minNextSegment - 1;
    if (nextSegment > 1 || minNextSegment > 1)
        for (; nextSegment < minNextSegment; ++nextSegment) {
            std::error_code sizeEc;
            const uint64_t prevBytes = std::filesystem::file_size(
                dir_ + "/" + oplog::segmentFileName(nextSegment - 1), sizeEc);
            if (Status s = writeFileAtomically(dir_, oplog::segmentFileName(nextSegment),
                                               oplog::encodeSegmentStart(nextSegment, sizeEc ? 0 : prevBytes),
                                               "segmentSwitch");
                !s.ok())
                return s;
        }
    nextSegment = std::max(nextSegment, minNextSegment);
    if (Status s = forgetCleanShutdown(); !s.ok())
        return s;
    std::vector<oplog::ExistingRecord> existing;
    existing.reserve(recovered.records.size());
    for (const Record& r : recovered.records)
        existing.push_back(r.where);
    auto started =
        oplog::Oplog::open(std::move(options), existing, nextSegment, std::move(noHolesPoint));
    if (!started.ok())
        return started.status();
    oplog_ = std::move(started).value();
    return Status::OK();
}

DurableLog::~DurableLog() {
    if (oplog_) {
        // Clean only when every record reached the disk.
        Status closed = oplog_->close();
        const oplog::LogPosition end = oplog_->end();
        oplog_.reset();
        if (closed.ok())
            writeFileAtomically(dir_, kCleanShutdownName, cleanShutdownText(end), "cleanShutdown")
                .ignore();
    }
    if (lockFd_ >= 0) {
        ::flock(lockFd_, LOCK_UN);
        ::close(lockFd_);
    }
}

}  // namespace mvkv::recovery
