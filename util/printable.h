// printable: bytes made safe to show in a message or a terminal.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mvkv {

/// `bytes` with every byte outside printable ASCII (and the backslash) written
/// as \xNN, cut to `maxBytes` input bytes with "..." appended when longer.
std::string printable(std::string_view bytes, size_t maxBytes = 64);

}  // namespace mvkv
