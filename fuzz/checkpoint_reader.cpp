// fuzz/checkpoint_reader: the reader of checkpoint files
// (checkpoint/checkpoint_file.h) over any bytes as checkpoint 1. Checks:
// verifyCheckpoint and readCheckpointEntries agree (both succeed, with the
// same entry count, or both fail), and a failure says what is wrong.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "checkpoint/checkpoint_file.h"
#include "fuzz/fuzz_tmp_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace mvkv::checkpoint;
    std::string_view bytes(reinterpret_cast<const char*>(data), size);
    const std::string path = mvkv::fuzz::writeScratch(checkpointFileName(1), bytes);
    CheckpointMeta verified;
    mvkv::Status v = verifyCheckpoint(path, &verified);
    CheckpointMeta read;
    uint64_t seen = 0;
    mvkv::Status r = readCheckpointEntries(
        path, &read,
        [&](uint32_t collection, std::string_view, std::string_view, mvkv::mvcc::Timestamp) {
            if (collection >= read.collections.size())
                std::abort();  // an entry of a collection the header does not name
            ++seen;
            return mvkv::Status::OK();
        });
    if (v.ok() != r.ok())
        std::abort();
    if (!v.ok() && (v.message().empty() || r.message().empty()))
        std::abort();
    if (v.ok() && (seen != verified.entries || read.entries != verified.entries))
        std::abort();
    return 0;
}
