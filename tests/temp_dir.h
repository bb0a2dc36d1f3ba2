// A fresh directory under the system's temp directory, removed with
// everything in it when the TempDir goes out of scope. For tests that write
// files (the oplog, the benchmark's engines).
#pragma once

#include <doctest/doctest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace mvkv::testing {

struct TempDir {
    explicit TempDir(const std::string& prefix = "mvkv-test")
        : TempDir(prefix, std::filesystem::temp_directory_path()) {}
    /// Under `parent` instead (e.g. memoryBacked()).
    TempDir(const std::string& prefix, const std::filesystem::path& parent) {
        std::string templ = (parent / (prefix + "-XXXXXX")).string();
        REQUIRE(mkdtemp(templ.data()) != nullptr);
        path = templ;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    std::string path;

    /// /dev/shm when there is one (fsync costs nothing there), else the
    /// temp directory: for tests that sync hundreds of times and do not
    /// test durability across a machine crash.
    static std::filesystem::path memoryBacked() {
        std::error_code ec;
        if (std::filesystem::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0)
            return "/dev/shm";
        return std::filesystem::temp_directory_path();
    }
};

}  // namespace mvkv::testing
