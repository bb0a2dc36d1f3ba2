// fuzz/display: how the shell shows and encodes byte strings
// (tools/shell/bytes.h), the library's printable() and UTF-8 decoding.
// Checks: the JSON form of any bytes decodes back to exactly those bytes,
// displayBytes(s, n) is valid UTF-8 within its limit, and decodeUtf8
// agrees with isValidUtf8.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "mvkv/utf8.h"
#include "tools/shell/bytes.h"
#include "util/printable.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view s(reinterpret_cast<const char*>(data), size);
    (void)mvkv::tools::displayBytes(s);
    (void)mvkv::printable(s);
    (void)mvkv::printable(s, size / 2);
    auto json = mvkv::tools::bytesToJson(s);
    auto back = mvkv::tools::bytesFromJson(json);
    if (!back || *back != s)
        std::abort();  // the lossless form lost something
    auto reparsed = mvkv::tools::bytesFromJson(nlohmann::ordered_json::parse(json.dump()));
    if (!reparsed || *reparsed != s)
        std::abort();  // ... after a trip through JSON text
    bool valid = true;
    for (size_t pos = 0; pos < s.size();) {
        mvkv::CodePoint cp = mvkv::decodeUtf8(s, pos);
        if (pos + cp.length > s.size())
            std::abort();
        if (cp.length == 0)
            valid = false;
        pos += cp.length == 0 ? 1 : cp.length;
    }
    if (valid != mvkv::isValidUtf8(s))
        std::abort();
    // The cut form is valid UTF-8 and at most max(limit, 5) code points.
    const size_t limit = size % 40;
    const std::string cut = mvkv::tools::displayBytes(s, limit);
    if (!mvkv::isValidUtf8(cut))
        std::abort();
    if (limit != 0) {
        size_t points = 0;
        for (size_t pos = 0; pos < cut.size(); pos += mvkv::decodeUtf8(cut, pos).length)
            ++points;
        if (points > std::max<size_t>(limit, 5))
            std::abort();
    }
    return 0;
}
