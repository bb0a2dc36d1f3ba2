// The checkpoint file format's constants and helpers, shared by
// checkpoint_writer.cpp and checkpoint_reader.cpp. Not part of the API: the
// format and the crash-safety argument are described in checkpoint_file.h.
#pragma once

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "checkpoint/checkpoint_file.h"
#include "oplog/log_format.h"
#include "util/file_sync.h"
#include "util/status.h"

namespace mvkv::checkpoint::checkpoint_format {

using oplog::getU32;
using oplog::getU64;
using oplog::putU32;
using oplog::putU64;

constexpr char kMagic[8] = {'M', 'V', 'K', 'V', 'C', 'K', 'P', 'T'};
// Sizes mirroring what checkpoint_writer.cpp writes (change them together);
// the reader bounds counts and lengths with them.
constexpr size_t kFrameBytes = oplog::kRecordHeaderBytes;  // length u32 + checksum u64 (frame())
/// CheckpointWriter::create: magic, version (u32), number, timestamp, log
/// end segment and offset (u64 each), collection count (u32).
constexpr size_t kHeaderFixedBytes = sizeof kMagic + 4 + 8 * 4 + 4;
/// CheckpointWriter::create, per collection: the name's length (u32); an
/// empty name takes this alone.
constexpr size_t kNameFixedBytes = 4;
/// Version 2, per collection after its name: capped (u8), size, max (u64).
constexpr size_t kOptionsBytes = 1 + 8 + 8;
/// Version 3, per collection after the version 2 options: TTL (u8), its
/// expireAfterSeconds (u64).
constexpr size_t kTtlOptionsBytes = 1 + 8;
/// The options' u64 fields hold int64 values (StoredCollectionOptions):
/// readers take a larger one for damage.
constexpr uint64_t kMaxStoredValue = uint64_t{INT64_MAX};
/// Version 2, per entry of a capped collection: its timestamp (u64).
constexpr size_t kEntryTsBytes = 8;
/// CheckpointWriter::add: collection index, key length, value length (u32
/// each); an entry with an empty key and value takes this alone.
constexpr size_t kEntryFixedBytes = 4 + 4 + 4;
/// CheckpointWriter::finish: kind (u8), entries (u64), blocks (u64).
constexpr size_t kTrailerBytes = 1 + 8 + 8;
constexpr char kBlockKind = 1;
constexpr char kTrailerKind = 2;
constexpr std::string_view kSuffix = ".mvkvckpt";
constexpr std::string_view kTmpSuffix = ".tmp";

// The number in "checkpoint-<16 lowercase hex>.mvkvckpt"; false for any other name.
inline bool parseCheckpointFileName(std::string_view name, uint64_t* number) {
    constexpr std::string_view kPrefix = "checkpoint-";
    const std::string_view hex = name.substr(std::min(name.size(), kPrefix.size()), 16);
    return name.size() == kPrefix.size() + 16 + kSuffix.size() && name.starts_with(kPrefix) &&
           name.ends_with(kSuffix) && hex.find_first_not_of("0123456789abcdef") == hex.npos &&
           std::from_chars(hex.data(), hex.data() + 16, *number, 16).ec == std::errc();
}

// Puts the frame (length, checksum) in the first kFrameBytes of `part`.
inline void frame(std::string& part) {
    std::string_view payload(part.data() + kFrameBytes, part.size() - kFrameBytes);
    putU32(part.data(), static_cast<uint32_t>(payload.size()));
    putU64(part.data() + 4, oplog::recordChecksum(payload));
}

// Appends v little-endian (u32 or u64).
template <typename T>
inline void append(std::string& out, T v) {
    char b[sizeof(T)];
    if constexpr (sizeof(T) == 4)
        putU32(b, v);
    else
        putU64(b, v);
    out.append(b, sizeof b);
}


}  // namespace mvkv::checkpoint::checkpoint_format
