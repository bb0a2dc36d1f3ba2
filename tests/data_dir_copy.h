// copyDataDir: a copy of a data directory without its lock file, as the
// files stand (a crash's view of them, once the clean-shutdown note is
// removed), for the durability and prepared-transaction tests.
#pragma once

#include <filesystem>
#include <string>

namespace mvkv::testing {

inline void copyDataDir(const std::string& from, const std::string& to) {
    std::filesystem::remove_all(to);
    std::filesystem::create_directories(to);
    for (const auto& e : std::filesystem::directory_iterator(from))
        if (e.path().filename() != "mvkv.lock")
            std::filesystem::copy_file(e.path(), to + "/" + e.path().filename().string());
}

/// copyDataDir, then without the clean-shutdown note: the files as a crash
/// (kill -9) at this moment leaves them.
inline void copyAsCrashed(const std::string& from, const std::string& to) {
    copyDataDir(from, to);
    std::filesystem::remove(to + "/clean-shutdown");
}

}  // namespace mvkv::testing
