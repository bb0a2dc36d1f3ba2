// Reading checkpoint files back (checkpoint_file.h): verify, read, list, prune.
#include "checkpoint/checkpoint_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "checkpoint/checkpoint_format.h"

namespace mvkv::checkpoint {

using namespace checkpoint_format;

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

using EntryFn =
    std::function<Status(uint32_t, std::string_view, std::string_view, mvcc::Timestamp)>;

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
    const uint32_t version = getU32(in.buf.data() + sizeof kMagic);
    if (version < 1 || version > kCheckpointFormatVersion)
        return in.corrupt(kFrameBytes + sizeof kMagic,
                          fmt::format("format version {}; this build reads versions 1 to {}",
                                      version, kCheckpointFormatVersion));
    std::string_view part;
    uint64_t start;
    if (Status s = in.next(&part, &start); !s.ok())
        return s;
    CheckpointMeta meta;
    Cursor c{part};
    uint32_t count;
    bool good = c.skip(sizeof kMagic + 4) && c.u64(&meta.number) && c.u64(&meta.ts) &&
                c.u64(&meta.logEnd.segment) && c.u64(&meta.logEnd.offset) && c.u32(&count) &&
                // Each name takes at least its length (kNameFixedBytes, as
                // CheckpointWriter::create writes an empty one).
                count <= c.rest.size() / kNameFixedBytes;
    std::vector<bool> capped;
    for (uint32_t i = 0, len; good && i < count; ++i) {
        std::string_view name;
        good = c.u32(&len) && c.bytes(len, &name);
        meta.collections.emplace_back(name);
        StoredCollectionOptions o;
        if (good && version >= 2) {
            std::string_view flag;
            uint64_t size = 0, max = 0;
            good = c.bytes(1, &flag) && c.u64(&size) && c.u64(&max) &&
                   (flag[0] == 0 || flag[0] == 1) && size <= kMaxStoredValue &&
                   max <= kMaxStoredValue;
            o.capped = good && flag[0] == 1;
            o.cappedSizeBytes = static_cast<int64_t>(size);
            o.cappedMaxDocs = static_cast<int64_t>(max);
        }
        if (good && version >= 3) {
            std::string_view flag;
            uint64_t seconds = 0;
            good = c.bytes(1, &flag) && c.u64(&seconds) && (flag[0] == 0 || flag[0] == 1) &&
                   (flag[0] == 1 || seconds == 0) && seconds <= kMaxStoredValue;
            if (good && flag[0] == 1)
                o.expireAfterSeconds = static_cast<int64_t>(seconds);
        }
        meta.options.push_back(o);
        capped.push_back(o.capped);
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
        // Entries as CheckpointWriter::add writes them (kEntryFixedBytes and
        // the bytes): each field is checked against what is left of the block.
        for (c.rest = part.substr(1); !c.rest.empty();) {
            const uint64_t entryAt = start + kFrameBytes + (part.size() - c.rest.size());
            uint32_t coll, klen, vlen;
            std::string_view key, value;
            uint64_t ts = mvcc::kNoTimestamp;
            if (!c.u32(&coll))
                return in.corrupt(entryAt, "an entry runs past the end of its block");
            if (coll >= meta.collections.size())
                return in.corrupt(entryAt, fmt::format("collection index {} of {} collections",
                                                       coll, meta.collections.size()));
            if (!c.u32(&klen) || !c.bytes(klen, &key) || !c.u32(&vlen) ||
                !c.bytes(vlen, &value) || (capped[coll] && !c.u64(&ts)))
                return in.corrupt(entryAt, "an entry runs past the end of its block");
            ++meta.entries;
            if (fn)
                if (Status s = (*fn)(coll, key, value, ts); !s.ok())
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

Status readCheckpoint(
    const std::string& path, CheckpointMeta* meta,
    const std::function<Status(uint32_t, std::string_view, std::string_view)>& fn) {
    EntryFn withTs = [&](uint32_t coll, std::string_view key, std::string_view value,
                         mvcc::Timestamp) { return fn(coll, key, value); };
    return scanCheckpoint(path, meta, &withTs);
}

Status readCheckpointEntries(const std::string& path, CheckpointMeta* meta, const EntryFn& fn) {
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
    return doomed.empty() ? Status::OK() : syncDirectory(dir, "checkpointCleanup");
}

}  // namespace mvkv::checkpoint
