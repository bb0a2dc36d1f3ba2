#include "util/version.h"

// Written by meson at every build from util/git_revision.h.in (vcs_tag).
#include "util/git_revision.h"

#ifndef MVKV_PROJECT_VERSION
#error "MVKV_PROJECT_VERSION is set by util/meson.build"
#endif
#ifndef MVKV_BUILD_TYPE
#error "MVKV_BUILD_TYPE is set by util/meson.build"
#endif

namespace mvkv {

std::string_view version() {
    return MVKV_PROJECT_VERSION;
}

std::string_view gitRevision() {
    return MVKV_GIT_REVISION;
}

std::string_view buildType() {
    return MVKV_BUILD_TYPE;
}

std::string versionLine(std::string_view program) {
    std::string line(program);
    line += ' ';
    line += version();
    line += " (git ";
    line += gitRevision();
    line += ", ";
    line += buildType();
    line += ')';
    return line;
}

}  // namespace mvkv
