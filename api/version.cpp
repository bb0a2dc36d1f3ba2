// mvkv/version.h. A library of its own (api/meson.build): the git revision
// changes with every commit, and only libmvkv and the programs link this.
#include "mvkv/version.h"

// Written by meson at every build from api/git_revision.h.in (vcs_tag).
#include "api/git_revision.h"

#ifndef MVKV_BUILD_TYPE
#error "MVKV_BUILD_TYPE is set by api/meson.build"
#endif

#define MVKV_STR2(x) #x
#define MVKV_STR(x) MVKV_STR2(x)
#define MVKV_VERSION_TEXT \
    MVKV_STR(MVKV_VERSION_MAJOR) "." MVKV_STR(MVKV_VERSION_MINOR) "." MVKV_STR(MVKV_VERSION_PATCH)

namespace mvkv {

const char* versionString() {
    return MVKV_VERSION_TEXT;
}

const char* gitRevision() {
    return MVKV_GIT_REVISION;
}

const char* buildType() {
    return MVKV_BUILD_TYPE;
}

const char* buildStamp() {
    return MVKV_VERSION_TEXT " (git " MVKV_GIT_REVISION ", " MVKV_BUILD_TYPE ")";
}

}  // namespace mvkv
