#include "util/deadline.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>

namespace mvkv {

Deadline Deadline::inMicros(double micros) {
    constexpr double kMaxMicros = double(kMaxTimeout.count()) * 1000.0;
    if (std::isnan(micros))
        micros = -1;
    if (micros < 0) {
        return Deadline(Kind::kInvalid, {}, micros < -9e18 ? INT64_MIN : int64_t(micros));
    }
    if (micros > kMaxMicros) {
        return Deadline(Kind::kInvalid, {}, micros > 9e18 ? INT64_MAX : int64_t(micros));
    }
    return Deadline(Kind::kAt, Clock::now() + std::chrono::microseconds(int64_t(micros)), 0);
}

std::string Deadline::invalidReason() const {
    if (valid())
        return {};
    if (badMicros_ < 0) {
        return fmt::format(
            "timeout of {} ms is negative; use Deadline::now() to try without waiting",
            badMicros_ / 1000);
    }
    return fmt::format(
        "timeout of {} ms is longer than the {} ms limit; use Deadline::never() to wait without "
        "limit",
        badMicros_ / 1000, kMaxTimeout.count());
}

Deadline Deadline::earliest(const Deadline& a, const Deadline& b) {
    if (!a.valid())
        return a;
    if (!b.valid())
        return b;
    if (a.isNever())
        return b;
    if (b.isNever())
        return a;
    return a.when_ <= b.when_ ? a : b;
}

}  // namespace mvkv
