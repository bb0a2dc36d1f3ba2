// time_text: durations and wall-clock times as the shell reads and shows
// them (TTL collections: `create COLL expire_after=30s`, `put ... ttl=5m`,
// `put ... expire_at=...`; document locks: `lock ... ttl=30s wait=5s`).
//
// - A duration is digits with an optional unit: ms, s, m, h or d; bare
//   digits are seconds (MongoDB's expireAfterSeconds). No sign, no fraction.
// - A time is milliseconds since the Unix epoch (digits), or ISO-8601 UTC:
//   YYYY-MM-DDTHH:MM:SS[.fff]Z (`T` and `Z` as shown, upper case).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "mvkv/status.h"

namespace mvkv::tools {

/// The duration `text` in milliseconds. InvalidArgument naming `what` when
/// it is not a duration, or is longer than `maxMs`.
StatusWith<int64_t> parseDurationMs(std::string_view text, std::string_view what, int64_t maxMs);

/// The time `text` (ms since the epoch, or ISO-8601 UTC) in ms since the
/// epoch. InvalidArgument naming `what` otherwise (also for an impossible
/// date such as 2025-02-30).
StatusWith<int64_t> parseTimeMs(std::string_view text, std::string_view what);

/// `ms` since the epoch as "YYYY-MM-DDTHH:MM:SS.fffZ".
std::string formatUtcTime(int64_t ms);
/// The same as "YYYY-MM-DDTHH:MM:SS.fff+00:00": ISO 8601 with the UTC
/// offset, as the engine's logs write "$date" (a document lock's times).
std::string formatIsoDate(int64_t ms);

}  // namespace mvkv::tools
