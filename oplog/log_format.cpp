#include "oplog/log_format.h"

#include <fmt/format.h>
#include <xxhash.h>

namespace mvkv::oplog {

std::string segmentFileName(uint64_t number) {
    return fmt::format("log-{:016x}.mvkvlog", number);
}

bool parseSegmentFileName(std::string_view name, uint64_t* number) {
    constexpr std::string_view kPrefix = "log-";
    constexpr std::string_view kSuffix = ".mvkvlog";
    if (name.size() != kPrefix.size() + 16 + kSuffix.size() || name.substr(0, 4) != kPrefix ||
        name.substr(20) != kSuffix)
        return false;
    uint64_t n = 0;
    for (char c : name.substr(4, 16)) {
        int d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else
            return false;
        n = (n << 4) | static_cast<uint64_t>(d);
    }
    *number = n;
    return true;
}

namespace {
// Field offsets in a segment header; the checksum is its last 4 bytes
// (kSegmentHeaderBytes counts the same fields).
constexpr size_t kVersionAt = sizeof kSegmentMagic;
constexpr size_t kNumberAt = kVersionAt + 4;
constexpr size_t kHeaderSumAt = kNumberAt + 8;
static_assert(kHeaderSumAt + 4 == kSegmentHeaderBytes);
}  // namespace

std::string encodeSegmentHeader(uint64_t number) {
    std::string h(kSegmentHeaderBytes, '\0');
    std::memcpy(h.data(), kSegmentMagic, sizeof kSegmentMagic);
    putU32(h.data() + kVersionAt, kLogFormatVersion);
    putU64(h.data() + kNumberAt, number);
    putU32(h.data() + kHeaderSumAt, static_cast<uint32_t>(XXH3_64bits(h.data(), kHeaderSumAt)));
    return h;
}

bool decodeSegmentHeader(std::string_view header, uint64_t* number, uint32_t* version) {
    if (header.size() < kSegmentHeaderBytes ||
        std::memcmp(header.data(), kSegmentMagic, sizeof kSegmentMagic) != 0)
        return false;
    if (getU32(header.data() + kHeaderSumAt) !=
        static_cast<uint32_t>(XXH3_64bits(header.data(), kHeaderSumAt)))
        return false;
    *version = getU32(header.data() + kVersionAt);
    *number = getU64(header.data() + kNumberAt);
    return true;
}

std::string encodeSegmentStart(uint64_t number, uint64_t prevBytes) {
    std::string payload(kSegmentStartPayloadBytes, '\0');
    std::memcpy(payload.data(), kSegmentStartMagic, 8);
    putU64(payload.data() + 8, number - 1);
    putU64(payload.data() + 16, prevBytes);
    std::string out = encodeSegmentHeader(number);
    appendRecord(out, payload);
    return out;
}

bool decodeSegmentStart(std::string_view payload, uint64_t* prevNumber, uint64_t* prevBytes) {
    if (payload.size() != kSegmentStartPayloadBytes ||
        std::memcmp(payload.data(), kSegmentStartMagic, 8) != 0)
        return false;
    *prevNumber = getU64(payload.data() + 8);
    *prevBytes = getU64(payload.data() + 16);
    return true;
}

uint64_t recordChecksum(std::string_view payload) {
    // Seeded with the length, so a corrupt length fails the check too.
    return XXH3_64bits_withSeed(payload.data(), payload.size(), payload.size());
}

std::array<char, kRecordHeaderBytes> recordHeader(std::string_view payload) {
    std::array<char, kRecordHeaderBytes> header;
    putU32(header.data(), static_cast<uint32_t>(payload.size()));
    putU64(header.data() + 4, recordChecksum(payload));
    return header;
}

void appendRecord(std::string& out, std::string_view payload) {
    const auto header = recordHeader(payload);
    out.append(header.data(), header.size());
    out.append(payload.data(), payload.size());
}

}  // namespace mvkv::oplog
