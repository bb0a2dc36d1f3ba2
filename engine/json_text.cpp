#include "engine/json_text.h"

namespace mvkv::engine {

void JsonText::string(std::string_view s) {
    out_ += '"';
    for (char ch : s) {
        auto c = static_cast<unsigned char>(ch);
        switch (c) {
            case '"':
                out_ += "\\\"";
                break;
            case '\\':
                out_ += "\\\\";
                break;
            case '\n':
                out_ += "\\n";
                break;
            case '\r':
                out_ += "\\r";
                break;
            case '\t':
                out_ += "\\t";
                break;
            default:
                if (c < 0x20) {
                    static constexpr char kHex[] = "0123456789abcdef";
                    const char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xf]};
                    out_.append(esc, 6);
                } else {
                    out_ += ch;  // UTF-8 passes through; printable() made keys ASCII
                }
        }
    }
    out_ += '"';
}

}  // namespace mvkv::engine
