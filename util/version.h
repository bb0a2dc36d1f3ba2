// What the programs print for --version: the project version (meson.build),
// the git revision the binary was built from and the build type, e.g.
//   mvkv 0.1.0 (git 0f4a577, release)
//   mvkv-bench 0.1.0 (git 0f4a577-dirty, debugoptimized)
// "-dirty" means the tree had uncommitted changes to tracked files when it
// was built; the revision is "unknown" when it was built outside a git
// checkout (or without git). The revision is taken at every build (meson's
// vcs_tag), not only at configure time.
//
// Only the programs link this (the library `mvkv_version`), so that a new
// commit relinks them and nothing else.
//
// Thread safety: pure functions over constants.
#pragma once

#include <string>
#include <string_view>

namespace mvkv {

/// The project version from meson.build, e.g. "0.1.0".
std::string_view version();
/// The abbreviated commit hash, with "-dirty" appended for a modified tree,
/// or "unknown".
std::string_view gitRevision();
/// meson's buildtype: plain, debug, debugoptimized, release, minsize or custom.
std::string_view buildType();
/// "<program> <version> (git <revision>, <build type>)": one line, no newline.
std::string versionLine(std::string_view program);

}  // namespace mvkv
