#include "mvkv/utf8.h"

namespace mvkv {

CodePoint decodeUtf8(std::string_view s, size_t pos) {
    const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
    const unsigned char b0 = byte(pos);
    if (b0 < 0x80)
        return {b0, 1};
    size_t length;  // of the sequence b0 leads
    uint32_t min;   // the smallest code point of that length: below it is overlong
    if (b0 >= 0xc2 && b0 <= 0xdf) {
        length = 2;
        min = 0x80;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
        length = 3;
        min = 0x800;
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
        length = 4;
        min = 0x10000;
    } else {
        return {};  // a continuation byte, 0xc0/0xc1 (always overlong) or 0xf5..0xff
    }
    uint32_t value = b0 & (0x7f >> length);
    if (s.size() - pos < length)
        return {};
    for (size_t i = 1; i < length; ++i) {
        const unsigned char b = byte(pos + i);
        if ((b & 0xc0) != 0x80)
            return {};
        value = (value << 6) | (b & 0x3f);
    }
    if (value < min || value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff))
        return {};
    return {value, length};
}

bool isValidUtf8(std::string_view s) {
    for (size_t pos = 0; pos < s.size();) {
        const CodePoint cp = decodeUtf8(s, pos);
        if (cp.length == 0)
            return false;
        pos += cp.length;
    }
    return true;
}

}  // namespace mvkv
