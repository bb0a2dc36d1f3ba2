// mvkv/failpoint.h: named failpoints, as MongoDB's configureFailPoint.
// Part of the public API (include/mvkv/); no stable ABI is promised yet.
//
// A failpoint is a named place in the engine that a test can make fail,
// hang, slow down or kill the process (docs/failpoints.md lists every name,
// where it sits and what its data means). Each has a mode:
//   off                         never fires (the default)
//   alwaysOn                    fires every time it is reached
//   times N                     fires the next N times, then turns off
//   skip N                      lets N passes go by, then fires every time
//   activationProbability P     fires with probability P (0 <= P <= 1)
// and data: `key` (which key a per-key failpoint fires for; empty: every
// key; for abortProcess the name of the crash point; for failIO the I/O
// point, SITE.OP), `delayMs` (a hang failpoint sleeps that long instead of
// hanging while the failpoint is on) and `error` (failIO: eio, the default,
// enospc, or short: half the bytes written, then ENOSPC).
//
// Every failpoint counts the times it fired (`timesEntered`, as MongoDB);
// waitForFailPoint blocks until that count reaches a value, so a test can
// wait until another thread is inside a hang.
//
// Text form (the shell's `failpoint NAME MODE [data]`, and the environment
// variable MVKV_FAILPOINTS, read by the first Engine::open of a process,
// after its recovery, as entries separated by ';'):
//   NAME off | alwaysOn | times N | skip N | activationProbability P
//        [key=K] [delay_ms=N] [error=eio|enospc|short]
// e.g. MVKV_FAILPOINTS='failOplogFsync times 1; hangBeforeCommit alwaysOn delay_ms=50'
//
// Thread safety: every function from any thread. A failpoint that is off
// costs the engine one relaxed atomic load where it sits.
//
// Errors: NotFound for an unknown name (the message lists the known ones);
// InvalidArgument for a bad mode, count, probability or data; Busy when
// waitForFailPoint's timeout passes first.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mvkv/status.h"

namespace mvkv {

enum class FailPointModeKind : uint8_t { kOff, kAlwaysOn, kTimes, kSkip, kActivationProbability };

struct FailPointMode {
    FailPointModeKind kind = FailPointModeKind::kOff;
    uint64_t n = 0;            // times N / skip N
    double probability = 0.0;  // activationProbability
};

struct FailPointData {
    std::string key;      // empty: every key (per-key failpoints)
    int64_t delayMs = 0;  // hang failpoints: sleep this long instead of hanging
    std::string error;    // failIO: "eio" (also when empty), "enospc" or "short"
};

struct FailPointInfo {
    std::string name;
    std::string description;  // where it sits and what firing does
    FailPointMode mode;
    FailPointData data;
    uint64_t timesEntered = 0;  // times fired since the process started
};

/// A mode and its data, as the text form after the name gives them.
struct FailPointSetting {
    FailPointMode mode;
    FailPointData data;
};
/// Parses "times 3 key=k delay_ms=5" (InvalidArgument, naming the bad word).
StatusWith<FailPointSetting> parseFailPointSetting(std::string_view modeAndData);

/// Sets failpoint `name` to `mode` with `data`; returns its timesEntered
/// at that moment (to wait for later firings: waitForFailPoint(name, n + k)).
StatusWith<uint64_t> configureFailPoint(std::string_view name, const FailPointMode& mode,
                                        const FailPointData& data = {});
/// The same from the text form after the name: "times 3 key=k".
StatusWith<uint64_t> configureFailPoint(std::string_view name, std::string_view modeAndData);
/// Applies "NAME MODE [data]; NAME MODE ..." (MVKV_FAILPOINTS' form): all or
/// nothing (a bad entry changes no failpoint).
Status configureFailPoints(std::string_view spec);
/// Every failpoint, by name.
std::vector<FailPointInfo> listFailPoints();
/// Blocks until failpoint `name` has fired at least `timesEntered` times
/// in all, or `timeout` passes (Busy).
Status waitForFailPoint(std::string_view name, uint64_t timesEntered,
                        std::chrono::milliseconds timeout);
/// "alwaysOn", "times 3", ... (the text form of a mode).
std::string failPointModeText(const FailPointMode& mode);

}  // namespace mvkv
