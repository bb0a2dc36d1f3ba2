#include "oplog/log_reader.h"

#include "util/file_sync.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "oplog/log_format.h"

namespace mvkv::oplog {

namespace {

struct Segment {
    uint64_t number;
    std::string path;
    uint64_t size;
};

StatusWith<std::vector<Segment>> listSegments(const std::string& dir) {
    std::error_code ec;
    std::vector<Segment> out;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        uint64_t n;
        if (!e.is_regular_file(ec) || !parseSegmentFileName(e.path().filename().string(), &n))
            continue;
        out.push_back({n, e.path().string(), static_cast<uint64_t>(e.file_size(ec))});
    }
    if (ec)
        return Status::IOError(fmt::format("list {}: {}", dir, ec.message()));
    std::sort(out.begin(), out.end(),
              [](const Segment& a, const Segment& b) { return a.number < b.number; });
    return out;
}

StatusWith<std::string> readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return Status::IOError(fmt::format("open {}: {}", path, std::strerror(errno)));
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad())
        return Status::IOError(fmt::format("read {}", path));
    return bytes;
}

}  // namespace

Status scanLog(const std::string& dir,
               const std::function<void(uint64_t, uint64_t, std::string_view)>& fn,
               LogTail* tail) {
    *tail = LogTail{};
    auto listed = listSegments(dir);
    if (!listed.ok())
        return listed.status();
    const std::vector<Segment>& segments = listed.value();
    tail->segments = segments.size();
    if (!segments.empty())
        tail->lastSegment = segments.back().number;
    auto cutAt = [&](size_t index, uint64_t offset, std::string reason) {
        tail->cut = true;
        tail->segment = segments[index].number;
        tail->offset = offset;
        tail->reason = std::move(reason);
        uint64_t bytes = segments[index].size - offset;
        for (size_t j = index + 1; j < segments.size(); ++j)
            bytes += segments[j].size;
        tail->bytesCut = bytes;
    };
    for (size_t i = 0; i < segments.size(); ++i) {
        auto read = readFile(segments[i].path);
        if (!read.ok())
            return read.status();
        std::string_view data = read.value();
        uint64_t number;
        uint32_t version;
        if (!decodeSegmentHeader(data, &number, &version) || number != segments[i].number) {
            cutAt(i, 0, "torn or corrupt segment header");
            return Status::OK();
        }
        if (version != kLogFormatVersion)
            return Status::Corruption(fmt::format(
                "{} has log format version {}; this build reads version {}", segments[i].path,
                version, kLogFormatVersion));
        if (i > 0 && number != segments[i - 1].number + 1) {
            cutAt(i, 0, fmt::format("segment {} missing", segments[i - 1].number + 1));
            return Status::OK();
        }
        // The bounds mirror the writer: a header of kRecordHeaderBytes
        // (appendRecord) and a payload of at most kMaxRecordBytes
        // (LogWriter::append refuses larger).
        size_t at = kSegmentHeaderBytes;
        while (at < data.size()) {
            if (data.size() - at < kRecordHeaderBytes) {
                cutAt(i, at, "torn record header");
                return Status::OK();
            }
            uint32_t len = getU32(data.data() + at);
            uint64_t sum = getU64(data.data() + at + 4);
            if (len > kMaxRecordBytes) {
                cutAt(i, at, fmt::format("record length {} over the limit", len));
                return Status::OK();
            }
            if (data.size() - at - kRecordHeaderBytes < len) {
                cutAt(i, at, "torn record");
                return Status::OK();
            }
            std::string_view payload = data.substr(at + kRecordHeaderBytes, len);
            if (recordChecksum(payload) != sum) {
                cutAt(i, at, "checksum mismatch");
                return Status::OK();
            }
            fn(segments[i].number, at, payload);
            ++tail->records;
            at += kRecordHeaderBytes + len;
        }
    }
    return Status::OK();
}

Status cutLogTail(const std::string& dir, const LogTail& tail) {
    if (!tail.cut)
        return Status::OK();
    auto listed = listSegments(dir);
    if (!listed.ok())
        return listed.status();
    for (const Segment& s : listed.value()) {
        if (s.number < tail.segment)
            continue;
        if (s.number == tail.segment && tail.offset > kSegmentHeaderBytes) {
            if (::truncate(s.path.c_str(), static_cast<off_t>(tail.offset)) != 0)
                return Status::IOError(
                    fmt::format("truncate {}: {}", s.path, std::strerror(errno)));
            int fd = ::open(s.path.c_str(), O_WRONLY);
            if (fd >= 0) {
                ::fdatasync(fd);
                ::close(fd);
            }
            continue;
        }
        std::error_code ec;
        std::filesystem::remove(s.path, ec);
        if (ec)
            return Status::IOError(fmt::format("remove {}: {}", s.path, ec.message()));
    }
    return syncDirectory(dir);
}

}  // namespace mvkv::oplog
