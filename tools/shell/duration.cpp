#include "tools/shell/duration.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <limits>

#include "tools/shell/bytes.h"

namespace mvkv::tools {

StatusWith<std::chrono::milliseconds> parseDuration(std::string_view text, std::string_view what) {
    auto bad = [&](std::string_view why) {
        return Status::InvalidArgument(
            fmt::format("{} {}: {}; give a whole number with a unit (ms, s, m, h, d), or a "
                        "number of seconds, e.g. {}=30s",
                        what, displayBytes(text, 40), why, what));
    };
    int64_t n = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (text.empty() || end == text.data())
        return bad("not a number");
    if (ec == std::errc::result_out_of_range)
        return bad("too large");
    if (ec != std::errc())
        return bad("not a number");
    const std::string_view unit(end, static_cast<size_t>(text.data() + text.size() - end));
    int64_t msPer = 0;
    if (unit.empty() || unit == "s")
        msPer = 1000;
    else if (unit == "ms")
        msPer = 1;
    else if (unit == "m")
        msPer = 60 * 1000;
    else if (unit == "h")
        msPer = 3600 * 1000;
    else if (unit == "d")
        msPer = 24 * 3600 * 1000;
    else
        return bad(fmt::format("unknown unit '{}'", displayBytes(unit, 10)));
    if (n > std::numeric_limits<int64_t>::max() / msPer ||
        n < std::numeric_limits<int64_t>::min() / msPer)
        return bad("too large");
    return std::chrono::milliseconds(n * msPer);
}

}  // namespace mvkv::tools
