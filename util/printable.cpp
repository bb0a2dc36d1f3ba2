#include "util/printable.h"

#include <fmt/format.h>

namespace mvkv {

std::string printable(std::string_view bytes, size_t maxBytes) {
    std::string out;
    std::string_view shown = bytes.substr(0, maxBytes);
    out.reserve(shown.size());
    for (unsigned char c : shown) {
        if (c >= 0x20 && c < 0x7f && c != '\\')
            out += static_cast<char>(c);
        else {
            // By hand: fmt::format per byte is the slow part of showing a
            // binary value (the slow-op log and the profiler show prefixes).
            static constexpr char kHex[] = "0123456789abcdef";
            const char esc[4] = {'\\', 'x', kHex[c >> 4], kHex[c & 0xf]};
            out.append(esc, 4);
        }
    }
    if (bytes.size() > maxBytes)
        out += "...";
    return out;
}

}  // namespace mvkv
