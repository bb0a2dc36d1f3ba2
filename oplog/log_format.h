// The oplog's file format: a directory of numbered segment files, each a
// header followed by records. Not part of the public API; log_writer and
// log_reader share it. docs/oplog.md has the picture.
//
// Segment file "log-<16 hex digits of its number>.mvkvlog":
//   header  : magic "MVKVLOG\n" (8 bytes), format version (u32 LE),
//             segment number (u64 LE), header checksum (u32 LE: the low 32
//             bits of XXH3-64 over the 20 bytes before it)  = 24 bytes
//   records : length (u32 LE, payload bytes), checksum (u64 LE, XXH3-64 of
//             the payload seeded with its length), payload
// From format version 2 the first record is the segment's start record,
// written with the header: magic "MVKVSEG\0", the previous segment's
// number (u64) and its size in bytes when this segment began (u64; 0 when
// there was none). A reader checks the previous segment against it, so an
// older segment cut short — even at a record boundary — is found. Version
// 1 segments (no start record) are still read.
// What recovery makes of a record that does not read (a torn tail or
// corruption): oplog/log_reader.h.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace mvkv::oplog {

inline constexpr char kSegmentMagic[8] = {'M', 'V', 'K', 'V', 'L', 'O', 'G', '\n'};
inline constexpr uint32_t kLogFormatVersion = 2;  // written; 1 is still read
inline constexpr uint32_t kOldestLogFormatVersion = 1;
// Sizes mirroring the encoders in log_format.cpp (change them together):
/// encodeSegmentHeader: magic, format version (u32), segment number (u64),
/// checksum (u32).
inline constexpr size_t kSegmentHeaderBytes = sizeof kSegmentMagic + 4 + 8 + 4;
/// appendRecord: payload length (u32), checksum (u64).
inline constexpr size_t kRecordHeaderBytes = 4 + 8;
inline constexpr char kSegmentStartMagic[8] = {'M', 'V', 'K', 'V', 'S', 'E', 'G', '\0'};
/// encodeSegmentStart's payload: magic, previous number (u64), previous size (u64).
inline constexpr size_t kSegmentStartPayloadBytes = sizeof kSegmentStartMagic + 8 + 8;
/// Where a version-2 segment's first oplog record starts.
inline constexpr size_t kSegmentStartBytes =
    kSegmentHeaderBytes + kRecordHeaderBytes + kSegmentStartPayloadBytes;
/// Larger records are refused by the writer and taken for garbage by the reader.
inline constexpr uint32_t kMaxRecordBytes = 64u << 20;

/// "log-000000000000002a.mvkvlog" for segment 42.
std::string segmentFileName(uint64_t number);
/// The number in a segment file name; false for any other name.
bool parseSegmentFileName(std::string_view name, uint64_t* number);

std::string encodeSegmentHeader(uint64_t number);
/// A new segment's first bytes: its header and its start record, which
/// says the previous segment (number - 1) was `prevBytes` long (0: none).
std::string encodeSegmentStart(uint64_t number, uint64_t prevBytes);
/// True when `payload` is a start record's; then sets the previous
/// segment's number and size.
bool decodeSegmentStart(std::string_view payload, uint64_t* prevNumber, uint64_t* prevBytes);
/// False unless `header` (kSegmentHeaderBytes) is a valid header; then sets
/// *number and *version.
bool decodeSegmentHeader(std::string_view header, uint64_t* number, uint32_t* version);

/// Appends one framed record (header and payload) to `out`.
void appendRecord(std::string& out, std::string_view payload);
/// A record's header (kRecordHeaderBytes: length and checksum) for `payload`.
std::array<char, kRecordHeaderBytes> recordHeader(std::string_view payload);
/// The checksum a record header carries for `payload`.
uint64_t recordChecksum(std::string_view payload);

inline void putU32(char* p, uint32_t v) {
    for (int i = 0; i < 4; ++i)
        p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
inline void putU64(char* p, uint64_t v) {
    for (int i = 0; i < 8; ++i)
        p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
inline uint32_t getU32(const char* p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i)
        v = (v << 8) | static_cast<unsigned char>(p[i]);
    return v;
}
inline uint64_t getU64(const char* p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i)
        v = (v << 8) | static_cast<unsigned char>(p[i]);
    return v;
}

}  // namespace mvkv::oplog
