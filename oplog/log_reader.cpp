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
#include <optional>
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

std::string_view logDamageName(LogDamage d) {
    switch (d) {
        case LogDamage::kNone:
            return "none";
        case LogDamage::kTornTail:
            return "torn tail";
        case LogDamage::kCorruption:
            return "corruption";
    }
    return "?";
}

namespace {

// A whole record at `at` of `data`: its length is one a writer writes, its
// payload is in the file, it looks like a payload (start records always
// do) and its checksum holds. Sets *next past it.
bool goodRecordAt(std::string_view data, uint64_t at, const PlausibleFn& plausible,
                  uint64_t* next) {
    if (data.size() < at || data.size() - at < kRecordHeaderBytes)
        return false;
    const uint32_t len = getU32(data.data() + at);
    if (len > kMaxRecordBytes || data.size() - at - kRecordHeaderBytes < len)
        return false;
    const std::string_view payload = data.substr(at + kRecordHeaderBytes, len);
    uint64_t prevNumber, prevBytes;
    if (plausible && !plausible(payload) && !decodeSegmentStart(payload, &prevNumber, &prevBytes))
        return false;
    if (recordChecksum(data.substr(at + kRecordHeaderBytes, len)) != getU64(data.data() + at + 4))
        return false;
    *next = at + kRecordHeaderBytes + len;
    return true;
}

// After a power loss some file systems keep a file's new size but not the
// data written into it: the unsynced end reads back as zero blocks. Where
// the zero bytes that end `data` (the newest segment) begin, and where their
// first whole 512-byte block begins (both data.size() when there are fewer
// than 16). A damaged record that starts in the zeros, or reaches into a
// whole zero block, is a torn write, not damage (a writer never writes an
// empty record, and a flipped byte is not zero blocks).
struct ZeroedTail {
    uint64_t from;
    uint64_t block;
};
ZeroedTail zeroedTail(std::string_view data) {
    uint64_t z = data.size();
    while (z > 0 && data[z - 1] == '\0')
        --z;
    if (data.size() - z < 16)
        return {data.size(), data.size()};
    const uint64_t block = (z + 511) / 512 * 512;
    return {z, block < data.size() ? block : data.size()};
}

// Good records of `data` from `from` on, found by trying every byte as a
// record start until one holds, then record by record. Counts them and hands
// each to `after` (when given); start records are not oplog records.
uint64_t findRecordsFrom(std::string_view data, uint64_t number, uint64_t from,
                         const RecordFn& after, const PlausibleFn& plausible) {
    uint64_t found = 0;
    uint64_t at = std::max<uint64_t>(from, kSegmentHeaderBytes);
    while (at + kRecordHeaderBytes <= data.size()) {
        uint64_t next;
        if (!goodRecordAt(data, at, plausible, &next)) {
            ++at;
            continue;
        }
        const std::string_view payload =
            data.substr(at + kRecordHeaderBytes, next - at - kRecordHeaderBytes);
        uint64_t prevNumber, prevBytes;
        if (!decodeSegmentStart(payload, &prevNumber, &prevBytes)) {
            ++found;
            if (after)
                after(number, at, payload);
        }
        at = next;
    }
    return found;
}

// The size `next` says the segment before it had when `next` began (its
// start record), or none when it has no start record that reads (format 1,
// or damage that the scan of `next` itself reports).
std::optional<uint64_t> sizeDeclaredBy(const Segment& next) {
    std::ifstream in(next.path, std::ios::binary);
    std::string head(kSegmentStartBytes, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    if (static_cast<size_t>(in.gcount()) != head.size())
        return std::nullopt;
    uint64_t number, end, prevNumber, prevBytes;
    uint32_t version;
    if (!decodeSegmentHeader(head, &number, &version) || version < 2 ||
        !goodRecordAt(head, kSegmentHeaderBytes, nullptr, &end) ||
        !decodeSegmentStart(std::string_view(head).substr(kSegmentHeaderBytes + kRecordHeaderBytes),
                            &prevNumber, &prevBytes) ||
        prevNumber + 1 != number)
        return std::nullopt;
    return prevBytes;
}

}  // namespace

Status scanLog(const std::string& dir, const RecordFn& fn, LogTail* tail, const RecordFn& after,
               const PlausibleFn& plausible) {
    *tail = LogTail{};
    auto listed = listSegments(dir);
    if (!listed.ok())
        return listed.status();
    const std::vector<Segment>& segments = listed.value();
    tail->segments = segments.size();
    if (!segments.empty()) {
        tail->firstSegment = segments.front().number;
        tail->lastSegment = segments.back().number;
        tail->end = {segments.back().number, segments.back().size};
    }
    // The damage, once found: in segments[damagedIndex] at tail->offset, or
    // (damagedIndex == npos) a missing segment before segments[laterFrom].
    constexpr size_t npos = SIZE_MAX;
    size_t damagedIndex = npos;
    size_t laterFrom = segments.size();
    bool damaged = false;
    auto damageAt = [&](size_t index, uint64_t offset, LogDamage kind, std::string reason) {
        damaged = true;
        damagedIndex = index;
        laterFrom = index + 1;
        tail->damage = kind;
        tail->segment = segments[index].number;
        tail->offset = offset;
        tail->file = segments[index].path;
        tail->reason = std::move(reason);
    };
    for (size_t index = 0; index < segments.size() && !damaged; ++index) {
        const Segment& seg = segments[index];
        const bool newest = index + 1 == segments.size();
        if (index > 0 && seg.number != segments[index - 1].number + 1) {
            damaged = true;
            laterFrom = index;
            tail->damage = LogDamage::kCorruption;
            tail->segment = segments[index - 1].number + 1;
            tail->offset = 0;
            tail->file = dir + "/" + segmentFileName(tail->segment);
            tail->reason = fmt::format("segment {} is missing (segments {} and {} are there)",
                                       tail->segment, segments[index - 1].number, seg.number);
            break;
        }
        auto read = readFile(seg.path);
        if (!read.ok())
            return read.status();
        const std::string data = std::move(read).value();
        uint64_t number;
        uint32_t version;
        if (!decodeSegmentHeader(data, &number, &version) || number != seg.number) {
            // A new segment's header goes out with its first records, in
            // one write: only the newest segment can hold a short one.
            if (newest && data.size() < kSegmentHeaderBytes)
                damageAt(index, 0, LogDamage::kTornTail, "torn segment header");
            else  // torn only if no good record follows (below)
                damageAt(index, 0, newest ? LogDamage::kTornTail : LogDamage::kCorruption,
                         "damaged segment header");
            break;
        }
        if (version < kOldestLogFormatVersion || version > kLogFormatVersion)
            return Status::Corruption(fmt::format(
                "{} has log format version {}; this build reads versions {} to {}", seg.path,
                version, kOldestLogFormatVersion, kLogFormatVersion));
        bool needStart = version >= 2;
        // Where this segment ended when the next one began (the next one's
        // start record): records past that are not read, and one that ends
        // sooner lost its end, even when it was cut at a record boundary.
        std::optional<uint64_t> declared;
        if (!newest && segments[index + 1].number == seg.number + 1)
            declared = sizeDeclaredBy(segments[index + 1]);
        const std::string_view view = std::string_view(data).substr(
            0, declared ? std::min<uint64_t>(*declared, data.size()) : data.size());
        const ZeroedTail zeros =
            newest ? zeroedTail(view) : ZeroedTail{view.size(), view.size()};
        uint64_t at = kSegmentHeaderBytes;
        // The bounds mirror the writer: a header of kRecordHeaderBytes
        // (appendRecord) and a payload of at most kMaxRecordBytes
        // (LogWriter::append refuses larger).
        while (at < view.size()) {
            const uint64_t left = view.size() - at;
            // Short: torn in the newest segment, damage in any other.
            auto endsInside = [&](const char* tornReason, const char* what) {
                if (newest)
                    damageAt(index, at, LogDamage::kTornTail, tornReason);
                else
                    damageAt(index, at, LogDamage::kCorruption,
                             fmt::format("the segment ends inside {}, and it is not the newest "
                                         "one (an older segment was synced whole before the next "
                                         "began)",
                                         what));
            };
            if (left < kRecordHeaderBytes) {
                endsInside("torn record header", "a record header");
                break;
            }
            const uint32_t len = getU32(view.data() + at);
            const uint64_t sum = getU64(view.data() + at + 4);
            const uint64_t inFile = std::min<uint64_t>(len, left - kRecordHeaderBytes);
            if ((zeros.from <= at || zeros.block < at + kRecordHeaderBytes + inFile) &&
                (len > inFile ||
                 recordChecksum(view.substr(at + kRecordHeaderBytes, len)) != sum)) {
                damageAt(index, at, LogDamage::kTornTail,
                         "zeroed tail (blocks kept without their data after a power loss)");
                break;
            }
            if (len > kMaxRecordBytes) {
                damageAt(index, at, LogDamage::kCorruption,
                         fmt::format("record length {} is over the limit {}: no writer wrote it",
                                     len, kMaxRecordBytes));
                break;
            }
            if (left - kRecordHeaderBytes < len) {
                const std::string_view rest = view.substr(at + kRecordHeaderBytes);
                if (recordChecksum(rest) == sum)
                    damageAt(index, at, LogDamage::kCorruption,
                             fmt::format("record length {} is damaged: the {} bytes after it are "
                                         "the whole record",
                                         len, rest.size()));
                else
                    endsInside("torn record", "a record");
                break;
            }
            std::string_view payload = view.substr(at + kRecordHeaderBytes, len);
            if (recordChecksum(payload) != sum) {
                // The whole record is there, so no torn write made it.
                damageAt(index, at, LogDamage::kCorruption, "checksum mismatch");
                break;
            }
            if (needStart) {
                needStart = false;
                uint64_t prevNumber, prevBytes;
                if (!decodeSegmentStart(payload, &prevNumber, &prevBytes) ||
                    prevNumber + 1 != seg.number) {
                    damageAt(index, at, LogDamage::kCorruption,
                             "the segment's first record is not its start record");
                    break;
                }
                at += kRecordHeaderBytes + len;
                continue;
            }
            fn(seg.number, at, payload);
            ++tail->records;
            at += kRecordHeaderBytes + len;
        }
        if (!damaged && declared && data.size() != *declared)
            damageAt(index, view.size(), LogDamage::kCorruption,
                     fmt::format("segment {} is {} bytes, but it was {} bytes when segment {} "
                                 "began after it: {}",
                                 seg.number, data.size(), *declared, seg.number + 1,
                                 data.size() < *declared ? "its end is missing"
                                                         : "bytes were added to it"));
    }
    if (!damaged)
        return Status::OK();
    tail->cut = true;
    tail->end = {tail->segment, tail->offset};
    // Bytes from the damage on, and the good records found past it.
    uint64_t bytes = 0;
    if (damagedIndex != npos) {
        const Segment& seg = segments[damagedIndex];
        bytes = seg.size - std::min(seg.size, tail->offset);
        auto read = readFile(seg.path);
        if (!read.ok())
            return read.status();
        // From the damage itself: a bad record there fails the check; bytes
        // added past where the next segment says this one ended do not.
        tail->recordsAfter += findRecordsFrom(read.value(), seg.number, tail->offset, after,
                                              plausible);
    }
    for (size_t j = laterFrom; j < segments.size(); ++j) {
        bytes += segments[j].size;
        auto read = readFile(segments[j].path);
        if (!read.ok())
            return read.status();
        tail->recordsAfter += findRecordsFrom(read.value(), segments[j].number, 0, after, plausible);
    }
    tail->bytesCut = bytes;
    if (tail->damage == LogDamage::kTornTail && tail->recordsAfter > 0) {
        tail->damage = LogDamage::kCorruption;
        tail->reason += fmt::format(", with {} good record{} after it: not a torn write",
                                    tail->recordsAfter, tail->recordsAfter == 1 ? "" : "s");
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
    return syncDirectory(dir, "logCut");
}

}  // namespace mvkv::oplog
