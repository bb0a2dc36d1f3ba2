// writeConflictRetry: run an implicit single-operation write again while it
// hits a WriteConflict, as MongoDB's writeConflictRetry does.
//
// Backoff between attempts (MongoDB's schedule): none after the first 3
// conflicts, then 1 ms sleeps up to the 10th, 5 ms up to the 100th, 10 ms up
// to the 200th, 100 ms after that. The loop gives up when `deadline` passes
// and returns WriteConflict naming the attempt count and the last conflict.
//
// Thread safety: stateless; `attempt` runs on the calling thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include "util/deadline.h"
#include "util/status.h"

namespace mvkv::mvcc {

/// How long to sleep after the `conflicts`-th conflict (1-based).
std::chrono::milliseconds writeConflictBackoff(uint64_t conflicts);

/// Sleeps per the schedule, but never past `deadline`.
void backoffAfterConflict(uint64_t conflicts, const Deadline& deadline);

/// The status returned when the deadline ends the retries.
Status retriesExhausted(uint64_t attempts, const Status& lastConflict);

/// What one retried operation went through.
struct RetryCounts {
    uint64_t attempts = 0;
    uint64_t writeConflicts = 0;
};

/// Calls `attempt()` (returning Status) until it returns anything but
/// WriteConflict, or the deadline passes. `onConflict()` runs after every
/// conflict (the caller counts it and undoes the failed attempt's state).
template <typename Attempt, typename OnConflict>
Status writeConflictRetry(const Deadline& deadline, RetryCounts& counts, Attempt&& attempt,
                          OnConflict&& onConflict) {
    while (true) {
        ++counts.attempts;
        Status s = attempt();
        if (s.code() != StatusCode::kWriteConflict)
            return s;
        ++counts.writeConflicts;
        onConflict();
        if (deadline.expired())
            return retriesExhausted(counts.attempts, s);
        backoffAfterConflict(counts.writeConflicts, deadline);
        if (deadline.expired())
            return retriesExhausted(counts.attempts, s);
    }
}

/// The same with a timeout that starts at the first conflict: an operation
/// that never conflicts never reads the clock.
template <typename Attempt, typename OnConflict>
Status writeConflictRetry(std::chrono::milliseconds timeout, RetryCounts& counts, Attempt&& attempt,
                          OnConflict&& onConflict) {
    ++counts.attempts;
    Status s = attempt();
    if (s.code() != StatusCode::kWriteConflict)
        return s;
    Deadline deadline = Deadline::in(timeout);
    ++counts.writeConflicts;
    onConflict();
    if (deadline.expired())
        return retriesExhausted(counts.attempts, s);
    backoffAfterConflict(counts.writeConflicts, deadline);
    return writeConflictRetry(deadline, counts, std::forward<Attempt>(attempt),
                              std::forward<OnConflict>(onConflict));
}

}  // namespace mvkv::mvcc
