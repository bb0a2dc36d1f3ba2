// The line a program prints for --version ("<program> " and
// mvkv::buildStamp(), include/mvkv/version.h), checked against what meson
// configured: MVKV_EXPECTED_VERSION (the project version) and
// MVKV_EXPECTED_BUILD_TYPE, both set by tests/meson.build.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <regex>
#include <string>

namespace mvkv::testing {

/// `out` is exactly "<program> <version> (git <revision>, <build type>)\n",
/// the revision an abbreviated hash (with "-dirty" for a modified tree) or
/// "unknown".
inline void checkVersionOutput(const std::string& program, const std::string& out) {
    const char* version = std::getenv("MVKV_EXPECTED_VERSION");
    const char* buildType = std::getenv("MVKV_EXPECTED_BUILD_TYPE");
    REQUIRE_MESSAGE(version != nullptr, "MVKV_EXPECTED_VERSION is not set: run via meson test");
    REQUIRE_MESSAGE(buildType != nullptr,
                    "MVKV_EXPECTED_BUILD_TYPE is not set: run via meson test");
    INFO("output: " << out);
    const std::string prefix = program + " " + version + " (git ";
    const std::string suffix = std::string(", ") + buildType + ")\n";
    REQUIRE(out.size() > prefix.size() + suffix.size());
    CHECK(out.substr(0, prefix.size()) == prefix);
    CHECK(out.substr(out.size() - suffix.size()) == suffix);
    const std::string revision =
        out.substr(prefix.size(), out.size() - prefix.size() - suffix.size());
    CHECK(std::regex_match(revision, std::regex("[0-9a-f]{7,40}(-dirty)?|unknown")));
}

}  // namespace mvkv::testing
