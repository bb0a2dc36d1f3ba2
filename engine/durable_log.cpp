#include "engine/durable_log.h"

#include "oplog/log_format.h"
#include "util/file_sync.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace mvkv::engine {

namespace {

constexpr const char* kMarkerName = "MVKV";
constexpr const char* kLockName = "mvkv.lock";

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
    const std::string tmp = marker.string() + ".tmp";
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return Status::IOError(fmt::format("create {}: {}", tmp, std::strerror(errno)));
    std::string text = markerText(DurableLog::kFormatVersion);
    bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
              ::fsync(fd) == 0;
    ::close(fd);
    if (!ok || ::rename(tmp.c_str(), marker.c_str()) != 0)
        return Status::IOError(fmt::format("write {}: {}", marker.string(), std::strerror(errno)));
    return syncDirectory(dir);
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
    // Every good record, then the cut of whatever follows the first bad one.
    Status decodeError;
    Status scanned = oplog::scanLog(
        dir,
        [&](uint64_t segment, uint64_t offset, std::string_view payload) {
            if (!decodeError.ok())
                return;
            Record r;
            Status d = oplog::decodeEntries(payload, &r.entries);
            if (!d.ok() || r.entries.empty()) {
                decodeError = Status::Corruption(
                    fmt::format("{}: segment {} offset {}: {}", dir, segment, offset,
                                d.ok() ? "a record with no entries" : d.message()));
                return;
            }
            r.where = {r.entries.front().ts, segment, offset,
                       static_cast<uint32_t>(payload.size()),
                       static_cast<uint32_t>(r.entries.size())};
            out->entries += r.entries.size();
            out->records.push_back(std::move(r));
        },
        &out->tail);
    if (!scanned.ok())
        return scanned;
    if (!decodeError.ok())
        return decodeError;
    if (Status s = oplog::cutLogTail(dir, out->tail); !s.ok())
        return s;
    // Above every segment left after the cut, so the numbers stay
    // contiguous (a gap reads as a missing segment and cuts the log there).
    log->nextSegment_ = 1;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        uint64_t n = 0;
        if (oplog::parseSegmentFileName(e.path().filename().string(), &n))
            log->nextSegment_ = std::max(log->nextSegment_, n + 1);
    }
    if (ec)
        return Status::IOError(fmt::format("list {}: {}", dir, ec.message()));
    return log;
}

Status DurableLog::startOplog(oplog::OplogOptions options, const Recovered& recovered,
                              uint64_t minNextSegment,
                              std::function<mvcc::Timestamp()> noHolesPoint) {
    options.dir = dir_;
    nextSegment_ = std::max(nextSegment_, minNextSegment);
    std::vector<oplog::ExistingRecord> existing;
    existing.reserve(recovered.records.size());
    for (const Record& r : recovered.records)
        existing.push_back(r.where);
    auto started =
        oplog::Oplog::open(std::move(options), existing, nextSegment_, std::move(noHolesPoint));
    if (!started.ok())
        return started.status();
    oplog_ = std::move(started).value();
    return Status::OK();
}

DurableLog::~DurableLog() {
    oplog_.reset();
    if (lockFd_ >= 0) {
        ::flock(lockFd_, LOCK_UN);
        ::close(lockFd_);
    }
}

}  // namespace mvkv::engine
