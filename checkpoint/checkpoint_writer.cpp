// CheckpointWriter (checkpoint_file.h): header, blocks, trailer, then fsync, rename and directory fsync.
#include "checkpoint/checkpoint_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "checkpoint/checkpoint_format.h"
#include "failpoint/failpoints.h"
#include "oplog/oplog_entry.h"

namespace mvkv::checkpoint {

using namespace checkpoint_format;

std::string checkpointFileName(uint64_t number) {
    return fmt::format("checkpoint-{:016x}.mvkvckpt", number);
}

CheckpointWriter::CheckpointWriter(std::string dir, std::string path, std::vector<bool> capped,
                                   int fd)
    : dir_(std::move(dir)),
      path_(std::move(path)),
      tmpPath_(path_ + std::string(kTmpSuffix)),
      capped_(std::move(capped)),
      fd_(fd) {}

StatusWith<std::unique_ptr<CheckpointWriter>> CheckpointWriter::create(const std::string& dir,
                                                                       const CheckpointMeta& meta) {
    std::vector<bool> capped(meta.collections.size(), false);
    if (!meta.options.empty() && meta.options.size() != meta.collections.size())
        return Status::InvalidArgument(
            fmt::format("checkpoint {}: {} collections but {} sets of options", meta.number,
                        meta.collections.size(), meta.options.size()));
    bool anyTtl = false;
    for (size_t i = 0; i < meta.options.size(); ++i) {
        capped[i] = meta.options[i].capped;
        anyTtl = anyTtl || meta.options[i].expireAfterSeconds.has_value();
    }
    // The oldest version that holds these options: the bytes older builds
    // wrote (and read) while no collection needs more.
    const bool anyCapped = std::find(capped.begin(), capped.end(), true) != capped.end();
    const uint32_t version = anyTtl ? 3 : anyCapped ? 2 : 1;
    static_assert(kCheckpointFormatVersion == 3);
    const size_t optionsBytes =
        (version >= 2 ? kOptionsBytes : 0) + (version >= 3 ? kTtlOptionsBytes : 0);
    std::string header(kFrameBytes, '\0');
    header.append(kMagic, sizeof kMagic);
    append<uint32_t>(header, version);
    for (uint64_t v : {meta.number, meta.ts, meta.logEnd.segment, meta.logEnd.offset})
        append<uint64_t>(header, v);
    append<uint32_t>(header, static_cast<uint32_t>(meta.collections.size()));
    for (size_t i = 0; i < meta.collections.size(); ++i) {
        const std::string& name = meta.collections[i];
        if (header.size() + kNameFixedBytes + name.size() + optionsBytes >
            kFrameBytes + kCheckpointMaxPartBytes)
            return Status::InvalidArgument(
                fmt::format("checkpoint {}: the header (collection names) is over {} bytes",
                            meta.number, kCheckpointMaxPartBytes));
        append<uint32_t>(header, static_cast<uint32_t>(name.size()));
        header.append(name);
        const StoredCollectionOptions o =
            meta.options.empty() ? StoredCollectionOptions{} : meta.options[i];
        if (version >= 2) {
            header.push_back(o.capped ? 1 : 0);
            append<uint64_t>(header, static_cast<uint64_t>(o.capped ? o.cappedSizeBytes : 0));
            append<uint64_t>(header, static_cast<uint64_t>(o.capped ? o.cappedMaxDocs : 0));
        }
        if (version >= 3) {
            header.push_back(o.expireAfterSeconds ? 1 : 0);
            append<uint64_t>(header, static_cast<uint64_t>(o.expireAfterSeconds.value_or(0)));
        }
    }
    assert(header.size() >= kFrameBytes + kHeaderFixedBytes);
    const std::string path = dir + "/" + checkpointFileName(meta.number);
    if (::access(path.c_str(), F_OK) == 0)
        return Status::InvalidArgument(fmt::format("checkpoint {} already exists", path));
    const std::string tmp = path + std::string(kTmpSuffix);
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return ioError("create checkpoint", tmp);
    std::unique_ptr<CheckpointWriter> w(
        new CheckpointWriter(dir, path, std::move(capped), fd));
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
    if (failpoint::failCheckpointWrite.check()) {
        errno = EIO;
        return error_ = ioError("write checkpoint (failpoint failCheckpointWrite)", tmpPath_);
    }
    if (Status s = writeFully(fd_, part, "checkpoint", "write checkpoint", tmpPath_); !s.ok())
        return error_ = s;
    return Status::OK();
}

Status CheckpointWriter::writeBlock() {
    if (Status s = writePart(block_); !s.ok())
        return s;
    ++blocks_;
    block_.resize(kFrameBytes + 1);
    return Status::OK();
}

// Every key and value the oplog can hold (one entry alone in a record of at
// most kMaxRecordBytes) fits in one checkpoint block: a committed write never
// makes every later checkpoint fail.
static_assert(oplog::kMaxRecordBytes - oplog::kPayloadHeaderBytes - oplog::kMinEntryBytes <=
              kCheckpointMaxPartBytes - 1 - kEntryFixedBytes - kEntryTsBytes);

Status CheckpointWriter::add(uint32_t collection, std::string_view key, std::string_view value,
                             mvcc::Timestamp ts) {
    if (!error_.ok())
        return error_;
    if (finished_)
        return Status::IllegalOperation(fmt::format("checkpoint {} is finished", path_));
    if (collection >= capped_.size())
        return Status::InvalidArgument(
            fmt::format("collection index {} is out of range: checkpoint {} has {} collections",
                        collection, path_, capped_.size()));
    const bool withTs = capped_[collection];
    const size_t entryBytes =
        kEntryFixedBytes + (withTs ? kEntryTsBytes : 0) + key.size() + value.size();
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
    if (withTs)
        append<uint64_t>(block_, ts);
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
    if (Status s = syncFile(fd_, false, "checkpoint", tmpPath_); !s.ok())
        return error_ = s;
    ::close(fd_);
    fd_ = -1;
    failpoint::hangBeforeCheckpointRename.pauseIfFires();
    failpoint::crashPoint("beforeCheckpointRename");
    if (Status s = renameFile(tmpPath_, path_, "checkpoint"); !s.ok())
        return error_ = s;
    finished_ = true;  // the file is complete under its final name
    if (Status s = syncDirectory(dir_, "checkpoint"); !s.ok())
        return error_ = s;
    failpoint::crashPoint("afterCheckpointRename");
    return Status::OK();
}

}  // namespace mvkv::checkpoint
