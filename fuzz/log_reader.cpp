// fuzz/log_reader: recovery's reader of oplog segment files
// (oplog/log_reader.h) over any bytes as segment 1, read in order and then
// searched past damage. Checks: a scan that reports damage, once the log is
// cut there (cutLogTail), reads cleanly to the end with the same records
// before the damage; a scan without damage cuts nothing.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_tmp_dir.h"
#include "oplog/log_format.h"
#include "oplog/log_reader.h"
#include "oplog/oplog_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace mvkv::oplog;
    std::string_view bytes(reinterpret_cast<const char*>(data), size);
    mvkv::fuzz::writeScratch(segmentFileName(1), bytes);
    const std::string& dir = mvkv::fuzz::scratchDir();
    std::vector<std::string> before;
    auto keep = [&](uint64_t, uint64_t, std::string_view payload) {
        before.emplace_back(payload);
    };
    uint64_t after = 0;
    auto found = [&](uint64_t, uint64_t, std::string_view) { ++after; };
    LogTail tail;
    if (!scanLog(dir, keep, &tail, found, plausiblePayload).ok())
        return 0;  // an IOError or another format version: refused, fine
    if (tail.records != before.size())
        std::abort();
    // Cut where the scan says: without damage that is a no-op.
    if (!cutLogTail(dir, tail).ok())
        std::abort();
    std::vector<std::string> again;
    LogTail tail2;
    auto keep2 = [&](uint64_t, uint64_t, std::string_view payload) {
        again.emplace_back(payload);
    };
    if (!scanLog(dir, keep2, &tail2).ok() || tail2.cut || again != before)
        std::abort();
    return 0;
}
