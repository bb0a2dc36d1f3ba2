// A fresh directory under the system's temp directory, removed with
// everything in it when the TempDir goes out of scope. For tests that write
// files (the oplog, the benchmark's engines).
#pragma once

#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

namespace mvkv::testing {

struct TempDir {
    explicit TempDir(const std::string& prefix = "mvkv-test") {
        std::string templ =
            (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
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
};

}  // namespace mvkv::testing
