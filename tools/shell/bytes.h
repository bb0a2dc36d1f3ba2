// bytes: how the shell shows keys and values, which are arbitrary bytes.
//
// UTF-8 is the engine's strict definition (include/mvkv/utf8.h).
// - JSON output (--json) is lossless: valid UTF-8 is a JSON string; anything
//   else is MongoDB Extended JSON's binary form,
//   {"$binary": {"base64": "...", "subType": "00"}}.
// - Human output shows printable UTF-8 as it is and quotes the rest. A string
//   shown without escapes reads back through the shell's tokenizer
//   (tokenizer.h) as the same bytes; the escapes \n, \t, \r and \xNN are for
//   display only: the tokenizer accepts no escapes but \" and \\.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace mvkv::tools {

/// For --json: valid UTF-8 (mvkv::isValidUtf8, include/mvkv/utf8.h) as a
/// JSON string; otherwise
/// {"$binary": {"base64": "<standard base64, padded>", "subType": "00"}}.
nlohmann::ordered_json bytesToJson(std::string_view s);

/// The inverse of bytesToJson: the bytes of a JSON string, or of a $binary
/// object of subtype "00" (exactly those keys; canonical padded base64).
/// nullopt for anything else.
std::optional<std::string> bytesFromJson(const nlohmann::ordered_json& j);

/// For human output (tables, messages):
/// - printable UTF-8 as it is, when it is not empty and has no control
///   character (C0, DEL, C1), space, `"` or `;` and does not start with `#`:
///   the tokenizer reads it back as one argument with the same bytes;
/// - otherwise in double quotes, with \" and \\ for a quote and a backslash
///   (as the tokenizer reads them), \n, \t, \r for those controls and \xNN for
///   any other control byte and any byte that is not part of valid UTF-8.
///   The last three kinds are display-only.
/// Examples: abc -> abc; "a b" -> "a b"; "" -> ""; a\nb -> "a\nb";
/// 0xff 0x41 -> "\xffA".
std::string displayBytes(std::string_view s);

/// displayBytes cut to at most `maxChars` characters (code points, "..."
/// included): the longest prefix that fits is followed by "..."; a quoted form
/// keeps its closing quote ("abc d"...) and is never cut inside an escape or
/// a UTF-8 sequence. maxChars 0 means no limit; 1..4 act as 5.
std::string displayBytes(std::string_view s, size_t maxChars);

}  // namespace mvkv::tools
