#include "engine/checkpoint_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include "oplog/log_format.h"

namespace mvkv::engine {

using oplog::getU32;
using oplog::getU64;
using oplog::putU32;
using oplog::putU64;

namespace {

constexpr char kMagic[8] = {'M', 'V', 'K', 'V', 'C', 'K', 'P', 'T'};
constexpr size_t kFrameBytes = oplog::kRecordHeaderBytes;  // length u32 + checksum u64
constexpr size_t kHeaderFixedBytes = 8 + 4 + 8 * 4 + 4;    // magic .. collection count
constexpr size_t kTrailerBytes = 1 + 8 + 8;
constexpr char kBlockKind = 1;
constexpr char kTrailerKind = 2;
constexpr std::string_view kSuffix = ".mvkvckpt";
constexpr std::string_view kTmpSuffix = ".tmp";

Status ioError(std::string_view what, const std::string& path) {
    return Status::IOError(fmt::format("{} {}: {}", what, path, std::strerror(errno)));
}

Status syncDirectory(const std::string& dir) {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return ioError("open directory", dir);
    int rc = ::fsync(fd);
    ::close(fd);
    return rc == 0 ? Status::OK() : ioError("fsync directory", dir);
}

// The number in "checkpoint-<16 lowercase hex>.mvkvckpt"; false for any other name.
bool parseCheckpointFileName(std::string_view name, uint64_t* number) {
    constexpr std::string_view kPrefix = "checkpoint-";
    const std::string_view hex = name.substr(std::min(name.size(), kPrefix.size()), 16);
    return name.size() == kPrefix.size() + 16 + kSuffix.size() && name.starts_with(kPrefix) &&
           name.ends_with(kSuffix) && hex.find_first_not_of("0123456789abcdef") == hex.npos &&
           std::from_chars(hex.data(), hex.data() + 16, *number, 16).ec == std::errc();
}

// Puts the frame (length, checksum) in the first kFrameBytes of `part`.
void frame(std::string& part) {
    std::string_view payload(part.data() + kFrameBytes, part.size() - kFrameBytes);
    putU32(part.data(), static_cast<uint32_t>(payload.size()));
    putU64(part.data() + 4, oplog::recordChecksum(payload));
}

// Appends v little-endian (u32 or u64).
template <typename T>
void append(std::string& out, T v) {
    char b[sizeof(T)];
    if constexpr (sizeof(T) == 4)
        putU32(b, v);
    else
        putU64(b, v);
    out.append(b, sizeof b);
}

}  // namespace

std::string checkpointFileName(uint64_t number) {
    return fmt::format("checkpoint-{:016x}.mvkvckpt", number);
}

CheckpointWriter::CheckpointWriter(std::string dir, std::string path, size_t collections, int fd)
    : dir_(std::move(dir)),
      path_(std::move(path)),
      tmpPath_(path_ + std::string(kTmpSuffix)),
      collections_(collections),
      fd_(fd) {}

StatusWith<std::unique_ptr<CheckpointWriter>> CheckpointWriter::create(const std::string& dir,
                                                                       const CheckpointMeta& meta) {
    std::string header(kFrameBytes, '\0');
    header.append(kMagic, sizeof kMagic);
    append<uint32_t>(header, kCheckpointFormatVersion);
    for (uint64_t v : {meta.number, meta.ts, meta.logEnd.segment, meta.logEnd.offset})
        append<uint64_t>(header, v);
    append<uint32_t>(header, static_cast<uint32_t>(meta.collections.size()));
    for (const std::string& name : meta.collections) {
        if (header.size() + 4 + name.size() > kFrameBytes + kCheckpointMaxPartBytes)
            return Status::InvalidArgument(
                fmt::format("checkpoint {}: the header (collection names) is over {} bytes",
                            meta.number, kCheckpointMaxPartBytes));
        append<uint32_t>(header, static_cast<uint32_t>(name.size()));
        header.append(name);
    }
    const std::string path = dir + "/" + checkpointFileName(meta.number);
    if (::access(path.c_str(), F_OK) == 0)
        return Status::InvalidArgument(fmt::format("checkpoint {} already exists", path));
    const std::string tmp = path + std::string(kTmpSuffix);
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return ioError("create checkpoint", tmp);
    std::unique_ptr<CheckpointWriter> w(
        new CheckpointWriter(dir, path, meta.collections.size(), fd));
    if (Status s = w->writePart(header); !s.ok())
        return s;  // the destructor removes the temp file
    w->block_.assign(kFrameBytes, '\0');
    w->block_.push_back(kBlockKind);
    return w;
}

CheckpointWriter::~CheckpointWriter() {
    if (fd_ >= 0)
        ::close(fd_);
    if (!finished_)
        ::unlink(tmpPath_.c_str());
}

Status CheckpointWriter::writePart(std::string& part) {
    frame(part);
    const char* p = part.data();
    size_t left = part.size();
    while (left > 0) {
        ssize_t n = ::write(fd_, p, left);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return error_ = ioError("write checkpoint", tmpPath_);
        }
        p += n;
        left -= static_cast<size_t>(n);
    }
    return Status::OK();
}

Status CheckpointWriter::writeBlock() {
    if (Status s = writePart(block_); !s.ok())
        return s;
    ++blocks_;
    block_.resize(kFrameBytes + 1);
    return Status::OK();
}

Status CheckpointWriter::add(uint32_t collection, std::string_view key, std::string_view value) {
    if (!error_.ok())
        return error_;
    if (finished_)
        return Status::IllegalOperation(fmt::format("checkpoint {} is finished", path_));
    if (collection >= collections_)
        return Status::InvalidArgument(
            fmt::format("collection index {} is out of range: checkpoint {} has {} collections",
                        collection, path_, collections_));
    const size_t entryBytes = 12 + key.size() + value.size();
    if (entryBytes > kCheckpointMaxPartBytes - 1)
        return Status::InvalidArgument(
            fmt::format("an entry of {} bytes cannot fit in a checkpoint block (at most {})",
                        entryBytes, kCheckpointMaxPartBytes - 1));
    const size_t payload = block_.size() - kFrameBytes;
    if (payload > 1 && payload + entryBytes > kCheckpointBlockBytes)
        if (Status s = writeBlock(); !s.ok())
            return s;
    append<uint32_t>(block_, collection);
    append<uint32_t>(block_, static_cast<uint32_t>(key.size()));
    block_.append(key);
    append<uint32_t>(block_, static_cast<uint32_t>(value.size()));
    block_.append(value);
    ++entries_;
    return Status::OK();
}

Status CheckpointWriter::finish() {
    if (!error_.ok())
        return error_;
    if (finished_)
        return Status::IllegalOperation(fmt::format("checkpoint {} is already finished", path_));
    if (block_.size() > kFrameBytes + 1)
        if (Status s = writeBlock(); !s.ok())
            return s;
    std::string trailer(kFrameBytes, '\0');
    trailer.push_back(kTrailerKind);
    append<uint64_t>(trailer, entries_);
    append<uint64_t>(trailer, blocks_);
    if (Status s = writePart(trailer); !s.ok())
        return s;
    if (::fsync(fd_) != 0)
        return error_ = ioError("fsync checkpoint", tmpPath_);
    ::close(fd_);
    fd_ = -1;
    if (::rename(tmpPath_.c_str(), path_.c_str()) != 0)
        return error_ = ioError(fmt::format("rename {} to", tmpPath_), path_);
    finished_ = true;  // the file is complete under its final name
    if (Status s = syncDirectory(dir_); !s.ok())
        return error_ = s;
    return Status::OK();
}

namespace {

// Takes little-endian fields off the front of a payload; false when it is short.
struct Cursor {
    std::string_view rest;
    bool skip(size_t n) { return rest.size() >= n && (rest.remove_prefix(n), true); }
    bool u32(uint32_t* v) { return rest.size() >= 4 && (*v = getU32(rest.data()), skip(4)); }
    bool u64(uint64_t* v) { return rest.size() >= 8 && (*v = getU64(rest.data()), skip(8)); }
    bool bytes(size_t n, std::string_view* v) {
        return rest.size() >= n && (*v = rest.substr(0, n), skip(n));
    }
};

// Reads a checkpoint part by part (one pread for a part's frame, one for its
// payload) and checks each frame. Errors name the file and the offset.
struct PartReader {
    PartReader(const std::string& p, int f, uint64_t n) : path(p), fd(f), size(n) {}
    const std::string& path;
    int fd;
    uint64_t size;
    uint64_t at = 0;  // where the next part starts
    std::string buf;  // the last part's payload

    Status corrupt(uint64_t offset, std::string_view what) const {
        return Status::Corruption(
            fmt::format("checkpoint {}: at offset {}: {}", path, offset, what));
    }
    // n bytes at `offset` (inside the file) into buf.
    Status readAt(uint64_t offset, size_t n) {
        buf.resize(n);
        for (size_t done = 0; done < n;) {
            ssize_t r = ::pread(fd, buf.data() + done, n - done, static_cast<off_t>(offset + done));
            if (r < 0 && errno != EINTR)
                return ioError("read checkpoint", path);
            if (r == 0)
                return corrupt(offset + done, "the file ends early (truncated while read?)");
            done += r > 0 ? static_cast<size_t>(r) : 0;
        }
        return Status::OK();
    }
    // The next part's payload (in buf); its frame starts at *start.
    Status next(std::string_view* payload, uint64_t* start) {
        *start = at;
        if (size - at < kFrameBytes)
            return corrupt(at, at == size ? "the file ends without a trailer (truncated)"
                                          : "a part's frame is cut short (truncated)");
        if (Status s = readAt(at, kFrameBytes); !s.ok())
            return s;
        const uint32_t len = getU32(buf.data());
        const uint64_t sum = getU64(buf.data() + 4);
        if (len > kCheckpointMaxPartBytes)
            return corrupt(at, fmt::format("part length {} is over the limit", len));
        if (len > size - at - kFrameBytes)
            return corrupt(at, fmt::format("a part of {} bytes runs past the end of the file "
                                           "({} bytes: truncated?)",
                                           len, size));
        if (Status s = readAt(at + kFrameBytes, len); !s.ok())
            return s;
        *payload = buf;
        if (oplog::recordChecksum(*payload) != sum)
            return corrupt(at, "checksum mismatch");
        at += kFrameBytes + len;
        return Status::OK();
    }
};

using EntryFn = std::function<Status(uint32_t, std::string_view, std::string_view)>;

Status scanCheckpoint(const std::string& path, CheckpointMeta* out, const EntryFn* fn) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ioError("open checkpoint", path);
    std::unique_ptr<int, void (*)(int*)> closer(&fd, [](int* f) { ::close(*f); });
    struct stat st;
    if (::fstat(fd, &st) != 0)
        return ioError("stat checkpoint", path);
    PartReader in(path, fd, static_cast<uint64_t>(st.st_size));
    if (in.size < kFrameBytes + kHeaderFixedBytes)
        return in.corrupt(0, fmt::format("{} bytes is too short for a checkpoint", in.size));
    // Magic and version before the checksum: a foreign file or another
    // format version gets a message that says so.
    if (Status s = in.readAt(kFrameBytes, sizeof kMagic + 4); !s.ok())
        return s;
    if (std::memcmp(in.buf.data(), kMagic, sizeof kMagic) != 0)
        return in.corrupt(kFrameBytes, "bad magic: not an mvkv checkpoint file");
    if (uint32_t v = getU32(in.buf.data() + sizeof kMagic); v != kCheckpointFormatVersion)
        return in.corrupt(kFrameBytes + sizeof kMagic,
                          fmt::format("format version {}; this build reads version {}", v,
                                      kCheckpointFormatVersion));
    std::string_view part;
    uint64_t start;
    if (Status s = in.next(&part, &start); !s.ok())
        return s;
    CheckpointMeta meta;
    Cursor c{part};
    uint32_t count;
    bool good = c.skip(sizeof kMagic + 4) && c.u64(&meta.number) && c.u64(&meta.ts) &&
                c.u64(&meta.logEnd.segment) && c.u64(&meta.logEnd.offset) && c.u32(&count) &&
                count <= c.rest.size() / 4;  // each name takes at least its length
    for (uint32_t i = 0, len; good && i < count; ++i) {
        std::string_view name;
        good = c.u32(&len) && c.bytes(len, &name);
        meta.collections.emplace_back(name);
    }
    if (!good || !c.rest.empty())
        return in.corrupt(start, "malformed header");
    uint64_t named;
    if (parseCheckpointFileName(std::filesystem::path(path).filename().string(), &named) &&
        named != meta.number)
        return in.corrupt(start, fmt::format("the header says checkpoint {}, the file name {}",
                                             meta.number, named));
    if (out && fn)
        *out = meta;  // the callback may want the collections
    uint64_t blocks = 0;
    while (true) {
        if (Status s = in.next(&part, &start); !s.ok())
            return s;
        if (part.empty() || (part[0] != kBlockKind && part[0] != kTrailerKind))
            return in.corrupt(start, "unknown part kind");
        if (part[0] == kTrailerKind)
            break;
        if (part.size() == 1)
            return in.corrupt(start, "empty data block");
        ++blocks;
        for (c.rest = part.substr(1); !c.rest.empty();) {
            const uint64_t entryAt = start + kFrameBytes + (part.size() - c.rest.size());
            uint32_t coll, klen, vlen;
            std::string_view key, value;
            if (!c.u32(&coll) || !c.u32(&klen) || !c.bytes(klen, &key) || !c.u32(&vlen) ||
                !c.bytes(vlen, &value))
                return in.corrupt(entryAt, "an entry runs past the end of its block");
            if (coll >= meta.collections.size())
                return in.corrupt(entryAt, fmt::format("collection index {} of {} collections",
                                                       coll, meta.collections.size()));
            ++meta.entries;
            if (fn)
                if (Status s = (*fn)(coll, key, value); !s.ok())
                    return s;
        }
    }
    uint64_t entries, blockCount;
    c.rest = part.substr(1);
    if (part.size() != kTrailerBytes || !c.u64(&entries) || !c.u64(&blockCount))
        return in.corrupt(start, "malformed trailer");
    if (entries != meta.entries || blockCount != blocks)
        return in.corrupt(start, fmt::format("the trailer counts {} entries in {} blocks; the "
                                             "file holds {} in {}",
                                             entries, blockCount, meta.entries, blocks));
    if (in.at != in.size)
        return in.corrupt(in.at, fmt::format("{} bytes after the trailer", in.size - in.at));
    meta.fileBytes = in.size;
    if (out)
        *out = std::move(meta);
    return Status::OK();
}

}  // namespace

Status verifyCheckpoint(const std::string& path, CheckpointMeta* meta) {
    return scanCheckpoint(path, meta, nullptr);
}

Status readCheckpoint(const std::string& path, CheckpointMeta* meta, const EntryFn& fn) {
    return scanCheckpoint(path, meta, &fn);
}

StatusWith<std::vector<CheckpointFile>> listCheckpoints(const std::string& dir) {
    std::error_code ec;
    std::vector<CheckpointFile> out;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        uint64_t n;
        if (e.is_regular_file(ec) && parseCheckpointFileName(e.path().filename().string(), &n))
            out.push_back({n, e.path().string()});
    }
    if (ec)
        return Status::IOError(fmt::format("list {}: {}", dir, ec.message()));
    std::sort(out.begin(), out.end(),
              [](const CheckpointFile& a, const CheckpointFile& b) { return a.number > b.number; });
    return out;
}

Status pruneCheckpoints(const std::string& dir, size_t keep) {
    auto listed = listCheckpoints(dir);
    if (!listed.ok())
        return listed.status();
    std::vector<std::string> doomed;
    for (size_t i = keep; i < listed.value().size(); ++i)
        doomed.push_back(listed.value()[i].path);
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        const std::string_view stem(name.data(),
                                    name.size() - std::min(name.size(), kTmpSuffix.size()));
        uint64_t n;
        if (name.ends_with(kTmpSuffix) && parseCheckpointFileName(stem, &n))
            doomed.push_back(e.path().string());
    }
    if (ec)
        return Status::IOError(fmt::format("list {}: {}", dir, ec.message()));
    for (const std::string& path : doomed)
        if (::unlink(path.c_str()) != 0 && errno != ENOENT)
            return ioError("remove checkpoint", path);
    return doomed.empty() ? Status::OK() : syncDirectory(dir);
}

}  // namespace mvkv::engine
