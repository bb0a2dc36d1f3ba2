// A scratch directory for fuzz targets that must hand their input to code
// that reads files: one per process, removed at exit.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace mvkv::fuzz {

struct ScratchDir {
    std::string path;
    ScratchDir()
        : path((std::filesystem::temp_directory_path() /
                ("mvkv-fuzz-" + std::to_string(::getpid())))
                   .string()) {
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~ScratchDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

inline const std::string& scratchDir() {
    static const ScratchDir dir;
    return dir.path;
}

/// Empties the scratch directory and writes `bytes` to `name` in it.
inline std::string writeScratch(const std::string& name, std::string_view bytes) {
    const std::string& dir = scratchDir();
    for (const auto& e : std::filesystem::directory_iterator(dir))
        std::filesystem::remove_all(e.path());
    std::string path = dir + "/" + name;
    std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
    return path;
}

}  // namespace mvkv::fuzz
