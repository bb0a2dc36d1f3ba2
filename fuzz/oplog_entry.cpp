// fuzz/oplog_entry: the decoder of an oplog record's payload
// (oplog/oplog_entry.h), which recovery runs on whatever a segment holds.
// Checks: a payload that decodes re-encodes to bytes that decode to the
// same entries; plausiblePayload never rejects one that decodes to entries.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "oplog/oplog_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace mvkv::oplog;
    std::string_view payload(reinterpret_cast<const char*>(data), size);
    const bool plausible = plausiblePayload(payload);
    std::vector<OplogEntry> entries;
    if (!decodeEntries(payload, &entries).ok())
        return 0;
    if (!plausible && !entries.empty())
        std::abort();  // the search past damage would skip a good record
    std::string again = encodeEntries(entries);
    std::vector<OplogEntry> back;
    if (!decodeEntries(again, &back).ok() || back != entries)
        std::abort();
    return 0;
}
