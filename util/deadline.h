// Deadline: when a blocking call must give up.
//
// Every wait in mvkv (a lock, a ticket, later a tailable cursor) takes a
// Deadline. Build one with never(), now() (try without waiting), in(timeout) or
// at(time point). A negative or absurdly long timeout (beyond kMaxTimeout)
// produces an invalid deadline; the call that receives it returns
// InvalidArgument with the reason, so bad input never turns into a hang or an
// overflowed clock.
//
// Thread safety: a plain value.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace mvkv {

class Deadline {
  public:
    using Clock = std::chrono::steady_clock;
    /// Longest finite timeout accepted; longer ones are a mistake (use never()).
    static constexpr std::chrono::milliseconds kMaxTimeout{std::chrono::hours(24) * 365};

    /// Wait as long as it takes.
    static Deadline never() { return Deadline(Kind::kNever, {}, 0); }
    /// Do not wait at all.
    static Deadline now() { return Deadline(Kind::kAt, Clock::now(), 0); }
    static Deadline at(Clock::time_point tp) { return Deadline(Kind::kAt, tp, 0); }
    /// `timeout` from now (any std::chrono duration); negative or longer
    /// than kMaxTimeout makes an invalid deadline.
    template <typename Rep, typename Period>
    static Deadline in(std::chrono::duration<Rep, Period> timeout) {
        // Compared in floating point so that no unit conversion can overflow.
        double micros = std::chrono::duration<double, std::micro>(timeout).count();
        return inMicros(micros);
    }

    bool isNever() const { return kind_ == Kind::kNever; }
    bool valid() const { return kind_ != Kind::kInvalid; }
    /// Why the deadline is invalid (empty when valid).
    std::string invalidReason() const;

    /// Only meaningful when !isNever() && valid().
    Clock::time_point when() const { return when_; }
    bool expired() const { return kind_ == Kind::kAt && Clock::now() >= when_; }

    /// The earlier of two valid deadlines.
    static Deadline earliest(const Deadline& a, const Deadline& b);

  private:
    enum class Kind : uint8_t { kNever, kAt, kInvalid };
    static Deadline inMicros(double micros);
    Deadline(Kind k, Clock::time_point tp, int64_t badMicros)
        : kind_(k), when_(tp), badMicros_(badMicros) {}

    Kind kind_;
    Clock::time_point when_;
    int64_t badMicros_;  // the rejected timeout, for the message
};

}  // namespace mvkv
