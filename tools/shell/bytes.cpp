#include "bytes.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>

#include "mvkv/utf8.h"

namespace mvkv::tools {

using mvkv::CodePoint;
using mvkv::decodeUtf8;

namespace {

// ---- code points ----

bool isControl(uint32_t cp) {
    return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

// ---- base64 (RFC 4648, standard alphabet, padded) ----

constexpr char kBase64Alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int8_t, 256> makeBase64Values() {
    std::array<int8_t, 256> values{};
    for (auto& v : values)
        v = -1;
    for (int i = 0; i < 64; ++i)
        values[static_cast<unsigned char>(kBase64Alphabet[i])] = static_cast<int8_t>(i);
    return values;
}
constexpr std::array<int8_t, 256> kBase64Values = makeBase64Values();

std::string base64Encode(std::string_view in) {
    std::string out;
    out.reserve((in.size() + 2) / 3 * 4);
    size_t i = 0;
    const auto byte = [&](size_t k) {
        return static_cast<uint32_t>(static_cast<unsigned char>(in[k]));
    };
    for (; i + 3 <= in.size(); i += 3) {
        const uint32_t n = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
        out += kBase64Alphabet[n >> 18 & 63];
        out += kBase64Alphabet[n >> 12 & 63];
        out += kBase64Alphabet[n >> 6 & 63];
        out += kBase64Alphabet[n & 63];
    }
    const size_t rest = in.size() - i;
    if (rest > 0) {
        const uint32_t n = byte(i) << 16 | (rest == 2 ? byte(i + 1) << 8 : 0);
        out += kBase64Alphabet[n >> 18 & 63];
        out += kBase64Alphabet[n >> 12 & 63];
        out += rest == 2 ? kBase64Alphabet[n >> 6 & 63] : '=';
        out += '=';
    }
    return out;
}

/// Strict decoding: length a multiple of 4, padding only at the end, unused
/// bits zero (so each byte string has exactly one accepted encoding).
std::optional<std::string> base64Decode(std::string_view in) {
    if (in.size() % 4 != 0)
        return std::nullopt;
    std::string out;
    out.reserve(in.size() / 4 * 3);
    for (size_t i = 0; i < in.size(); i += 4) {
        const bool last = i + 4 == in.size();
        const size_t pad = !last ? 0 : in[i + 3] != '=' ? 0 : in[i + 2] != '=' ? 1 : 2;
        uint32_t n = 0;
        for (size_t k = 0; k < 4 - pad; ++k) {
            const int8_t v = kBase64Values[static_cast<unsigned char>(in[i + k])];
            if (v < 0)
                return std::nullopt;
            n |= static_cast<uint32_t>(v) << (18 - 6 * k);
        }
        if ((pad == 1 && (n & 0xff) != 0) || (pad == 2 && (n & 0xffff) != 0))
            return std::nullopt;  // non-zero unused bits
        out += static_cast<char>(n >> 16 & 0xff);
        if (pad < 2)
            out += static_cast<char>(n >> 8 & 0xff);
        if (pad < 1)
            out += static_cast<char>(n & 0xff);
    }
    return out;
}

// ---- display ----

bool needsQuotes(std::string_view s) {
    if (s.empty() || s.front() == '#')
        return true;
    for (size_t pos = 0; pos < s.size();) {
        const CodePoint cp = decodeUtf8(s, pos);
        if (cp.length == 0 || isControl(cp.value) || cp.value == ' ' || cp.value == '"' ||
            cp.value == ';')
            return true;
        pos += cp.length;
    }
    return false;
}

std::string hexEscape(char c) {
    return fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
}

/// How a valid code point (`text` its bytes) is written between quotes; empty
/// when it is written as it is.
std::string quotedEscape(uint32_t cp, std::string_view text) {
    switch (cp) {
        case '"':
            return "\\\"";
        case '\\':
            return "\\\\";
        case '\n':
            return "\\n";
        case '\t':
            return "\\t";
        case '\r':
            return "\\r";
        default:
            break;
    }
    if (!isControl(cp))
        return {};
    std::string out;
    for (char c : text)  // one byte for C0 and DEL, two for C1
        out += hexEscape(c);
    return out;
}

/// Calls emit(piece, chars) for each piece of the displayed body of `s` (what
/// goes between the quotes, if any), in order, while emit returns true. A
/// piece is one code point as it is, or the escape of one code point or of
/// one byte that is not valid UTF-8; `chars` is its width in code points.
template <typename Emit>
void forEachDisplayPiece(std::string_view s, bool quoted, Emit&& emit) {
    for (size_t pos = 0; pos < s.size();) {
        const CodePoint cp = decodeUtf8(s, pos);
        const size_t length = cp.length == 0 ? 1 : cp.length;
        std::string escape;  // empty: shown as it is
        if (cp.length == 0)
            escape = hexEscape(s[pos]);
        else if (quoted)
            escape = quotedEscape(cp.value, s.substr(pos, length));
        const bool more =
            escape.empty() ? emit(s.substr(pos, length), 1) : emit(escape, escape.size());
        if (!more)
            return;
        pos += length;
    }
}

}  // namespace


nlohmann::ordered_json bytesToJson(std::string_view s) {
    if (mvkv::isValidUtf8(s))
        return std::string(s);
    nlohmann::ordered_json binary = nlohmann::ordered_json::object();
    binary["base64"] = base64Encode(s);
    binary["subType"] = "00";
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    j["$binary"] = std::move(binary);
    return j;
}

std::optional<std::string> bytesFromJson(const nlohmann::ordered_json& j) {
    if (j.is_string())
        return j.get<std::string>();
    if (!j.is_object() || j.size() != 1 || !j.contains("$binary"))
        return std::nullopt;
    const nlohmann::ordered_json& binary = j["$binary"];
    if (!binary.is_object() || binary.size() != 2 || !binary.contains("base64") ||
        !binary.contains("subType"))
        return std::nullopt;
    const nlohmann::ordered_json& base64 = binary["base64"];
    const nlohmann::ordered_json& subType = binary["subType"];
    if (!base64.is_string() || !subType.is_string() || subType.get<std::string>() != "00")
        return std::nullopt;
    return base64Decode(base64.get<std::string>());
}

std::string displayBytes(std::string_view s) {
    return displayBytes(s, 0);
}

std::string displayBytes(std::string_view s, size_t maxChars) {
    const bool quoted = needsQuotes(s);
    const size_t quotes = quoted ? 2 : 0;
    const size_t limit =
        maxChars == 0 ? std::numeric_limits<size_t>::max() : std::max<size_t>(maxChars, 5);
    std::string out;
    if (quoted)
        out += '"';
    size_t chars = quotes;      // of the whole result so far, closing quote included
    size_t cutAt = out.size();  // where to cut if it does not fit: room for "..." after
    bool fits = true;
    forEachDisplayPiece(s, quoted, [&](std::string_view piece, size_t width) {
        if (chars + width > limit) {
            fits = false;
            return false;
        }
        chars += width;
        out += piece;
        if (chars + 3 <= limit)
            cutAt = out.size();
        return true;
    });
    if (!fits)
        out.resize(cutAt);
    if (quoted)
        out += '"';
    if (!fits)
        out += "...";
    return out;
}

}  // namespace mvkv::tools
