// The line `mvkv --version` prints: "mvkv <version> (git <revision>, <build
// type>)". The build stamp is the programs' own (util/version.h, relinked
// at every commit), not the library's API: version_line.cpp is the one
// place the shell reaches it, as a private helper (docs/architecture.md,
// "The programs").
#pragma once

#include <string>

namespace mvkv::tools {

std::string shellVersionLine();

}  // namespace mvkv::tools
