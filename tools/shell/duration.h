// Durations in shell options (`ttl=30s`, `wait=500ms`): a whole number with
// a unit — ms, s, m, h or d — or a bare number of seconds. A leading '-' is
// read (so that the engine can say why a negative duration is refused);
// a number whose milliseconds do not fit in 64 bits is InvalidArgument here.
//
// Thread safety: pure functions.
#pragma once

#include <chrono>
#include <string_view>

#include "util/status.h"

namespace mvkv::tools {

/// InvalidArgument naming `what` and the accepted forms for anything else.
StatusWith<std::chrono::milliseconds> parseDuration(std::string_view text, std::string_view what);

}  // namespace mvkv::tools
