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
        else
            out += fmt::format("\\x{:02x}", c);
    }
    if (bytes.size() > maxBytes)
        out += "...";
    return out;
}

}  // namespace mvkv
