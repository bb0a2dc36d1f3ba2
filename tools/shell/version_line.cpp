#include "version_line.h"

#include "util/version.h"

namespace mvkv::tools {

std::string shellVersionLine() {
    return versionLine("mvkv");
}

}  // namespace mvkv::tools
