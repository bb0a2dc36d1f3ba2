#include "time_text.h"

#include <fmt/format.h>

#include <charconv>
#include <chrono>

#include "bytes.h"

namespace mvkv::tools {

namespace {

// All of `text` as a non-negative number; false otherwise (or on overflow).
bool parseDigits(std::string_view text, int64_t* v) {
    if (text.empty() || text.find_first_not_of("0123456789") != text.npos)
        return false;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *v);
    return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

StatusWith<int64_t> parseDurationMs(std::string_view text, std::string_view what, int64_t maxMs) {
    const size_t unitAt = text.find_first_not_of("0123456789");
    const std::string_view digits = text.substr(0, unitAt);
    const std::string_view unit = unitAt == text.npos ? "s" : text.substr(unitAt);
    int64_t perUnit = 0;
    if (unit == "ms")
        perUnit = 1;
    else if (unit == "s")
        perUnit = 1000;
    else if (unit == "m")
        perUnit = 60 * 1000;
    else if (unit == "h")
        perUnit = 3600 * 1000;
    else if (unit == "d")
        perUnit = 86400 * 1000;
    int64_t n = 0;
    if (perUnit == 0 || digits.empty())
        return Status::InvalidArgument(fmt::format(
            "{} must be a duration: digits and an optional unit ms, s, m, h or d (none: seconds), "
            "such as 30s or 5m; not {}",
            what, displayBytes(text, 40)));
    if (!parseDigits(digits, &n) || n > maxMs / perUnit)
        return Status::InvalidArgument(fmt::format(
            "{} {} is too long: at most {}", what, displayBytes(text, 40),
            maxMs % 1000 == 0 ? fmt::format("{} s", maxMs / 1000) : fmt::format("{} ms", maxMs)));
    return n * perUnit;
}

StatusWith<int64_t> parseTimeMs(std::string_view text, std::string_view what) {
    int64_t ms = 0;
    if (parseDigits(text, &ms))
        return ms;
    // YYYY-MM-DDTHH:MM:SS[.fff]Z
    auto bad = [&] {
        return Status::InvalidArgument(fmt::format(
            "{} must be milliseconds since the Unix epoch or an ISO-8601 UTC time such as "
            "2030-01-31T12:00:00Z (or with .fff milliseconds); not {}",
            what, displayBytes(text, 40)));
    };
    auto field = [&](size_t at, size_t len, int64_t* v) {
        return text.size() >= at + len && parseDigits(text.substr(at, len), v);
    };
    int64_t y, mo, d, h, mi, s, frac = 0;
    if (!field(0, 4, &y) || !field(5, 2, &mo) || !field(8, 2, &d) || !field(11, 2, &h) ||
        !field(14, 2, &mi) || !field(17, 2, &s) || text[4] != '-' || text[7] != '-' ||
        text[10] != 'T' || text[13] != ':' || text[16] != ':')
        return bad();
    std::string_view rest = text.substr(19);
    if (rest.starts_with('.')) {
        if (!field(20, 3, &frac))
            return bad();
        rest = text.substr(23);
    }
    using namespace std::chrono;
    const year_month_day date{year{static_cast<int>(y)}, month{static_cast<unsigned>(mo)},
                              day{static_cast<unsigned>(d)}};
    if (rest != "Z" || !date.ok() || h > 23 || mi > 59 || s > 59)
        return bad();
    const auto days = sys_days(date).time_since_epoch().count();
    return ((days * 24 + h) * 60 + mi) * 60000 + s * 1000 + frac;
}

namespace {

std::string formatUtc(int64_t ms, std::string_view zone) {
    using namespace std::chrono;
    const sys_time<milliseconds> t{milliseconds(ms)};
    const sys_days day = floor<days>(t);
    const year_month_day date{day};
    const hh_mm_ss clock{t - day};
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}{}", int(date.year()),
                       unsigned(date.month()), unsigned(date.day()), clock.hours().count(),
                       clock.minutes().count(), clock.seconds().count(),
                       clock.subseconds().count(), zone);
}

}  // namespace

std::string formatUtcTime(int64_t ms) {
    return formatUtc(ms, "Z");
}

std::string formatIsoDate(int64_t ms) {
    return formatUtc(ms, "+00:00");
}

}  // namespace mvkv::tools
