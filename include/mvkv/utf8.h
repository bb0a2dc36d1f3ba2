// mvkv/utf8.h: strict UTF-8 (RFC 3629), the rule the engine holds names to.
// Part of the public API (include/mvkv/); no stable ABI is promised yet.
//
// Keys and values are bytes, but names are text: a database or collection
// name (docs/architecture.md, "Data model") and a document lock's owner
// (mvkv/document_locks.h) must be valid UTF-8 by this definition, or the
// call that takes them returns InvalidArgument. isValidUtf8 is that check,
// for a caller that validates first; decodeUtf8 walks bytes one code point
// at a time, for a caller that shows keys and values as text, as the shell
// does (docs/shell.md).
//
// Thread safety: pure functions. Nothing here allocates or fails: an
// invalid sequence is reported in the result.
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
