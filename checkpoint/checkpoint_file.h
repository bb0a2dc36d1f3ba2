// Checkpoint files: every collection of the engine as of one timestamp, in
// one file of the data directory, with where the oplog ended when the
// checkpoint began (recovery loads the newest good checkpoint and replays the
// oplog from there).
//
// File "checkpoint-<16 lowercase hex digits of its number>.mvkvckpt". Every
// part is framed as an oplog record is (oplog/log_format.h):
//   length (u32 LE, payload bytes) | checksum (u64 LE, XXH3-64 of the payload
//   seeded with its length) | payload
// and the parts are, in order:
//   header  : magic "MVKVCKPT", format version (u32), checkpoint number (u64),
//             timestamp (u64), log end segment (u64), log end offset (u64),
//             collection count (u32), per collection: name length (u32), name
//             and, in version 2 and later, its options: capped (u8, 0 or 1),
//             capped size (u64), capped max (u64) and, in version 3, TTL (u8,
//             0 or 1) and expireAfterSeconds (u64; 0 when not TTL)
//             (StoredCollectionOptions below)
//   blocks  : kind 1 (u8), then entries until the payload ends, each:
//             collection index (u32), key length (u32), key, value length
//             (u32), value and, in version 2 and later for a capped
//             collection, the commit timestamp of the entry's version (u64:
//             the capped order, engine/capped_state.h). A block holds
//             ~kBlockBytes (more only when one entry is larger); an empty
//             checkpoint has no block. A TTL collection's values are stored
//             with their TTL header (engine/ttl_value.h), as in memory.
// The oldest version that holds the engine's collections is written: 1 with
// no capped or TTL collection (as before capped collections existed), 2 with
// a capped one and no TTL one, else 3; every version is read.
//   trailer : kind 2 (u8), entries in the file (u64), blocks in the file (u64)
// and nothing after the trailer. All integers little-endian. A part's payload
// is at most kMaxPartBytes; readers take anything larger for damage.
//
// Crash safety: a writer fills "<name>.tmp", fsyncs it, renames it to <name>
// and fsyncs the directory. rename(2) is atomic, so a crash at any point
// leaves under final names only checkpoints that were complete and synced
// before their rename; what it can leave is a .tmp file, which
// pruneCheckpoints removes. A final file that is damaged anyway (a bad disk,
// a copy cut short) fails verifyCheckpoint: every byte is under a checksum,
// the trailer's counts must match, and a missing trailer or bytes after it
// are Corruption.
//
// Thread safety: a CheckpointWriter is used by one thread at a time. The free
// functions keep no state: they may run at once on different files (and
// verify/read at once on the same one), but pruneCheckpoints must not run in
// a directory where a writer is still writing (it removes .tmp files).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mvcc/timestamp.h"
#include "oplog/log_writer.h"
#include "util/status.h"

namespace mvkv::checkpoint {

/// The newest version written (with a TTL collection; 2 with a capped one
/// and no TTL one; 1 with neither).
inline constexpr uint32_t kCheckpointFormatVersion = 3;
/// A data block is closed once adding the next entry would pass this.
inline constexpr size_t kCheckpointBlockBytes = 256 * 1024;
/// Larger parts are refused by the writer and taken for damage by readers.
inline constexpr uint32_t kCheckpointMaxPartBytes = 64u << 20;

/// A collection's options as the header records them (format versions 2
/// and 3). The file format lies below the engine, so it keeps its own record
/// of them: the engine converts its CollectionOptions to and from it
/// (engine/checkpointer.cpp) and checks the values it loads, treating a
/// checkpoint with options it refuses as corrupt. Readers check only what the
/// format fixes: flags 0 or 1, no expireAfterSeconds without TTL, and values
/// that fit an int64.
struct StoredCollectionOptions {
    bool capped = false;
    int64_t cappedSizeBytes = 0;  // capped only
    int64_t cappedMaxDocs = 0;    // capped only
    std::optional<int64_t> expireAfterSeconds;  // set: a TTL collection

    bool operator==(const StoredCollectionOptions&) const = default;
};

struct CheckpointMeta {
    uint64_t number = 0;
    mvcc::Timestamp ts = 0;
    oplog::LogPosition logEnd;             // end of the oplog when the checkpoint began
    std::vector<std::string> collections;  // namespaces, index = collection number in entries
    /// Parallel to collections, or empty (every collection ordinary).
    std::vector<StoredCollectionOptions> options;
    uint64_t entries = 0;                  // filled by verify/read
    uint64_t fileBytes = 0;                // filled by verify/read
};

/// "checkpoint-000000000000002a.mvkvckpt" for checkpoint 42.
std::string checkpointFileName(uint64_t number);

class CheckpointWriter {
  public:
    /// Starts "<dir>/<checkpointFileName(meta.number)>.tmp" (truncating a
    /// leftover one) and writes the header. InvalidArgument when the final
    /// file already exists or the header would pass kCheckpointMaxPartBytes;
    /// IOError (naming the file and errno) when the file cannot be written.
    static StatusWith<std::unique_ptr<CheckpointWriter>> create(const std::string& dir,
                                                                const CheckpointMeta& meta);
    /// Unless finish() succeeded: closes and removes the temp file.
    ~CheckpointWriter();
    CheckpointWriter(const CheckpointWriter&) = delete;
    CheckpointWriter& operator=(const CheckpointWriter&) = delete;

    /// Appends one entry; `ts`, its version's commit timestamp, is kept for
    /// a capped collection only. InvalidArgument when `collection` is not an
    /// index of meta.collections or the entry cannot fit in one part;
    /// IOError from writing a full block (after which every call returns it).
    Status add(uint32_t collection, std::string_view key, std::string_view value,
               mvcc::Timestamp ts = mvcc::kNoTimestamp);
    /// Writes the last block and the trailer, fsyncs the file, renames it to
    /// its final name and fsyncs the directory. IllegalOperation when called
    /// twice or after an error.
    Status finish();

    /// The file's final name in dir (where it is once finish() succeeded).
    const std::string& path() const { return path_; }
    /// The file is complete under its final name (finish() got past the
    /// rename, even if the directory sync after it failed).
    bool renamed() const { return finished_; }
    uint64_t entries() const { return entries_; }

  private:
    CheckpointWriter(std::string dir, std::string path, std::vector<bool> capped, int fd);
    Status writeBlock();
    Status writePart(std::string& framed);  // frames and writes; `framed` starts with 12 free bytes

    const std::string dir_;
    const std::string path_;
    const std::string tmpPath_;
    const std::vector<bool> capped_;  // per collection: entries carry a timestamp
    int fd_;
    std::string block_;  // 12 bytes of room for the frame, kind, entries
    uint64_t entries_ = 0;
    uint64_t blocks_ = 0;
    bool finished_ = false;
    Status error_;  // sticky
};

struct CheckpointFile {
    uint64_t number;
    std::string path;
};

/// Complete checkpoint files in dir (not .tmp), newest (highest number)
/// first. Other files are ignored. IOError when dir cannot be listed.
StatusWith<std::vector<CheckpointFile>> listCheckpoints(const std::string& dir);

/// Reads the whole file checking every checksum, the trailer and counts;
/// fills *meta (may be null) on success. Corruption, naming the file, the
/// offset and what is wrong, for any damage, truncation, a wrong magic or
/// version, a number that disagrees with the file's name, or bytes after
/// the trailer. IOError when the file cannot be read.
Status verifyCheckpoint(const std::string& path, CheckpointMeta* meta);

/// Calls fn for every entry in file order; stops and returns fn's error if
/// it returns one. Checks as verifyCheckpoint does, a block's checksum
/// before passing on any of its entries; but a Corruption found later in
/// the file comes after fn has seen the blocks before it, so a caller
/// loading a checkpoint discards what it loaded when this fails (or runs
/// verifyCheckpoint first). *meta (may be null) gets the header's fields
/// before the first call to fn, and entries and fileBytes at the end.
Status readCheckpoint(const std::string& path, CheckpointMeta* meta,
                      const std::function<Status(uint32_t collection, std::string_view key,
                                                 std::string_view value)>& fn);
/// The same, with each entry's timestamp (kNoTimestamp but in a capped
/// collection).
Status readCheckpointEntries(const std::string& path, CheckpointMeta* meta,
                             const std::function<Status(uint32_t collection, std::string_view key,
                                                        std::string_view value,
                                                        mvcc::Timestamp ts)>& fn);

/// Removes leftover "*.mvkvckpt.tmp" files (a crash mid-write) and all but
/// the `keep` newest complete checkpoints (keep 0 removes them all), then
/// fsyncs the directory if it removed anything. IOError names the file.
Status pruneCheckpoints(const std::string& dir, size_t keep);

}  // namespace mvkv::checkpoint
