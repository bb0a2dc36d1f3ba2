// The public face of failpoints (mvkv/failpoint.h): configuring them by
// name, from text, and waiting for them.
#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "failpoint/failpoint.h"
#include "failpoint/registry.h"

namespace mvkv {

namespace {

StatusWith<failpoint::FailPoint*> find(std::string_view name) {
    auto& all = failpoint::registry();
    if (auto it = all.find(name); it != all.end())
        return it->second;
    std::string known;
    for (const auto& [n, fp] : all)
        known += (known.empty() ? "" : ", ") + n;
    return Status::NotFound(fmt::format("no failpoint is named '{}'; known: {}", name, known));
}

std::vector<std::string_view> words(std::string_view text) {
    std::vector<std::string_view> out;
    size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && (text[i] == ' ' || text[i] == '\t'))
            ++i;
        size_t j = i;
        while (j < text.size() && text[j] != ' ' && text[j] != '\t')
            ++j;
        if (j > i)
            out.push_back(text.substr(i, j - i));
        i = j;
    }
    return out;
}

template <typename T>
bool parseNumber(std::string_view text, T* out) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
    return ec == std::errc() && end == text.data() + text.size();
}

StatusWith<FailPointSetting> parseModeAndData(std::string_view name, std::string_view text) {
    const auto w = words(text);
    auto bad = [&](std::string what) {
        return Status::InvalidArgument(fmt::format(
            "failpoint{}{}: {} (expected: off | alwaysOn | times N | skip N | "
            "activationProbability P, then key=K, delay_ms=N and error=eio|enospc|short)",
            name.empty() ? "" : " ", name, what));
    };
    if (w.empty())
        return bad("no mode");
    FailPointSetting p;
    size_t next = 1;
    if (w[0] == "off") {
        p.mode.kind = FailPointModeKind::kOff;
    } else if (w[0] == "alwaysOn") {
        p.mode.kind = FailPointModeKind::kAlwaysOn;
    } else if (w[0] == "times" || w[0] == "skip") {
        p.mode.kind = w[0] == "times" ? FailPointModeKind::kTimes : FailPointModeKind::kSkip;
        if (w.size() < 2 || !parseNumber(w[1], &p.mode.n))
            return bad(fmt::format("'{}' needs a count", w[0]));
        if (p.mode.kind == FailPointModeKind::kTimes && p.mode.n == 0)
            return bad("'times 0' would never fire: use off");
        next = 2;
    } else if (w[0] == "activationProbability") {
        // from_chars for double is in GCC 11+: good enough here.
        if (w.size() < 2 || !parseNumber(w[1], &p.mode.probability))
            return bad("'activationProbability' needs a probability");
        p.mode.kind = FailPointModeKind::kActivationProbability;
        next = 2;
    } else {
        return bad(fmt::format("unknown mode '{}'", w[0]));
    }
    for (size_t i = next; i < w.size(); ++i) {
        if (w[i].starts_with("key=")) {
            p.data.key = std::string(w[i].substr(4));
        } else if (w[i].starts_with("error=")) {
            p.data.error = std::string(w[i].substr(6));
            if (p.data.error != "eio" && p.data.error != "enospc" && p.data.error != "short")
                return bad(fmt::format("bad error '{}' (eio, enospc or short)", w[i]));
        } else if (w[i].starts_with("delay_ms=")) {
            if (!parseNumber(w[i].substr(9), &p.data.delayMs) || p.data.delayMs < 0)
                return bad(fmt::format("bad delay '{}'", w[i]));
        } else {
            return bad(fmt::format("unknown data '{}'", w[i]));
        }
    }
    return p;
}

Status checkMode(std::string_view name, const FailPointMode& mode, const FailPointData& data) {
    if (mode.kind == FailPointModeKind::kActivationProbability &&
        !(mode.probability >= 0.0 && mode.probability <= 1.0))
        return Status::InvalidArgument(fmt::format(
            "failpoint {}: activationProbability {} is not within [0, 1]", name, mode.probability));
    if (data.delayMs < 0)
        return Status::InvalidArgument(
            fmt::format("failpoint {}: delay_ms {} is negative", name, data.delayMs));
    return Status::OK();
}

}  // namespace

StatusWith<FailPointSetting> parseFailPointSetting(std::string_view modeAndData) {
    return parseModeAndData({}, modeAndData);
}

StatusWith<uint64_t> configureFailPoint(std::string_view name, const FailPointMode& mode,
                                        const FailPointData& data) {
    auto fp = find(name);
    if (!fp.ok())
        return fp.status();
    if (Status s = checkMode(name, mode, data); !s.ok())
        return s;
    return fp.value()->configure(mode, data);
}

StatusWith<uint64_t> configureFailPoint(std::string_view name, std::string_view modeAndData) {
    auto parsed = parseModeAndData(name, modeAndData);
    if (!parsed.ok())
        return parsed.status();
    return configureFailPoint(name, parsed.value().mode, parsed.value().data);
}

Status configureFailPoints(std::string_view spec) {
    struct One {
        failpoint::FailPoint* fp;
        FailPointSetting parsed;
    };
    std::vector<One> all;
    size_t start = 0;
    while (start <= spec.size()) {
        size_t end = spec.find(';', start);
        if (end == std::string_view::npos)
            end = spec.size();
        const std::string_view entry = spec.substr(start, end - start);
        const auto w = words(entry);
        if (!w.empty()) {
            auto fp = find(w[0]);
            if (!fp.ok())
                return fp.status();
            const std::string_view rest =
                entry.substr(static_cast<size_t>(w[0].data() - entry.data()) + w[0].size());
            auto parsed = parseModeAndData(w[0], rest);
            if (!parsed.ok())
                return parsed.status();
            if (Status s = checkMode(w[0], parsed.value().mode, parsed.value().data); !s.ok())
                return s;
            all.push_back({fp.value(), std::move(parsed).value()});
        }
        start = end + 1;
    }
    for (One& one : all)
        one.fp->configure(one.parsed.mode, one.parsed.data);
    return Status::OK();
}

std::vector<FailPointInfo> listFailPoints() {
    std::vector<FailPointInfo> out;
    for (const auto& [name, fp] : failpoint::registry())
        out.push_back(fp->info());
    return out;
}

Status waitForFailPoint(std::string_view name, uint64_t timesEntered,
                        std::chrono::milliseconds timeout) {
    auto fp = find(name);
    if (!fp.ok())
        return fp.status();
    return fp.value()->waitForTimesEntered(timesEntered, timeout);
}

std::string failPointModeText(const FailPointMode& mode) {
    switch (mode.kind) {
        case FailPointModeKind::kOff:
            return "off";
        case FailPointModeKind::kAlwaysOn:
            return "alwaysOn";
        case FailPointModeKind::kTimes:
            return fmt::format("times {}", mode.n);
        case FailPointModeKind::kSkip:
            return fmt::format("skip {}", mode.n);
        case FailPointModeKind::kActivationProbability:
            return fmt::format("activationProbability {}", mode.probability);
    }
    return "off";
}

namespace failpoint {

Status applyEnvironmentOnce() {
    static std::once_flag once;
    static Status result;
    std::call_once(once, [] {
        if (const char* spec = std::getenv("MVKV_FAILPOINTS"))
            if (Status s = configureFailPoints(spec); !s.ok())
                result = Status(s.code(), "MVKV_FAILPOINTS: " + s.message());
    });
    return result;
}

}  // namespace failpoint

}  // namespace mvkv
