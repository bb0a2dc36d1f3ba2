// mvkv/version.h: the library's version and build stamp.
// Part of the public API (include/mvkv/); no stable ABI is promised yet:
// rebuild a harness against the headers of the mvkv it links.
//
// The build stamp says which build of the library a process runs, for a
// harness's log or a bug report; mvkv's programs print it for --version,
// e.g. `mvkv 0.2.0 (git 0f4a577, debugoptimized)`. The git revision is
// taken at every build, not only when the build was configured.
//
// Thread safety: every call returns a string constant (static storage,
// never freed); nothing here fails.
#pragma once

#define MVKV_VERSION_MAJOR 0
#define MVKV_VERSION_MINOR 2
#define MVKV_VERSION_PATCH 0

namespace mvkv {

/// "0.2.0": the three numbers above, as the library was built with them
/// (compare with the macros to catch a header / library mismatch).
const char* versionString();

/// The commit the library was built from: an abbreviated hash, with
/// "-dirty" appended when the tree had uncommitted changes to tracked
/// files, or "unknown" when it was built outside a git checkout (or
/// without git).
const char* gitRevision();

/// meson's buildtype: "plain", "debug", "debugoptimized", "release",
/// "minsize" or "custom".
const char* buildType();

/// "<version> (git <revision>, <build type>)", e.g.
/// "0.2.0 (git 0f4a577-dirty, release)": one line, no newline.
const char* buildStamp();

}  // namespace mvkv
