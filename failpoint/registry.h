// The registry of failpoints by name (failpoint/failpoints.cpp holds it
// beside the definitions, so linking the registry links every failpoint).
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace mvkv::failpoint {

class FailPoint;

/// Name -> failpoint; filled during static initialisation, read-only after.
std::map<std::string, FailPoint*, std::less<>>& registry();

}  // namespace mvkv::failpoint
