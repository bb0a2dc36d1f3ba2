// mvkv/version.h: the library's version.
// Part of the public API (include/mvkv/); no stable ABI is promised yet:
// rebuild a harness against the headers of the mvkv it links.
#pragma once

#define MVKV_VERSION_MAJOR 0
#define MVKV_VERSION_MINOR 2
#define MVKV_VERSION_PATCH 0

namespace mvkv {

/// "0.2.0": the three numbers above, as the library was built with them
/// (compare with the macros to catch a header / library mismatch).
const char* versionString();

}  // namespace mvkv
