#include "util/deadline.h"

#include <fmt/format.h>

namespace mvkv {

Deadline Deadline::in(std::chrono::milliseconds timeout) {
    return in(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
}

Deadline Deadline::in(std::chrono::microseconds timeout) {
    if (timeout.count() < 0 || timeout > kMaxTimeout) {
        return Deadline(Kind::kInvalid, {}, timeout.count());
    }
    return Deadline(Kind::kAt, Clock::now() + timeout, 0);
}

std::string Deadline::invalidReason() const {
    if (valid()) return {};
    if (badMicros_ < 0) {
        return fmt::format("timeout of {} us is negative; use Deadline::now() to try without waiting",
                           badMicros_);
    }
    return fmt::format(
        "timeout of {} ms is longer than the {} ms limit; use Deadline::never() to wait without "
        "limit",
        badMicros_ / 1000, kMaxTimeout.count());
}

Deadline Deadline::earliest(const Deadline& a, const Deadline& b) {
    if (!a.valid()) return a;
    if (!b.valid()) return b;
    if (a.isNever()) return b;
    if (b.isNever()) return a;
    return a.when_ <= b.when_ ? a : b;
}

}  // namespace mvkv
