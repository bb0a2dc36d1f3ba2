// Strict UTF-8 (RFC 3629): decoding one sequence and validating a string.
// Shared by namespace checks (engine/) and the shell's byte display (tools/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace mvkv {

struct CodePoint {
    uint32_t value = 0;
    size_t length = 0;  // bytes; 0 when s[pos] does not start a valid sequence
};

/// Decodes the sequence at s[pos] (pos < s.size()): no overlongs, no
/// surrogates, nothing above U+10FFFF, no truncated sequence.
CodePoint decodeUtf8(std::string_view s, size_t pos);

/// True when every byte of `s` belongs to a valid sequence.
bool isValidUtf8(std::string_view s);

}  // namespace mvkv
