// SlowOpLog: where the engine's structured log lines go — MongoDB's logv2
// "Slow query" lines (id 51803) — and the settings that decide which
// operations are slow.
//
// A line goes to three places: an in-memory ring of the last N lines (what
// the shell's `show log` reads, as MongoDB's getLog does), the harness's
// sink (EngineOptions::logSink) and, on a data directory, `<dir>/mvkv.log`,
// rotated by size (EngineOptions::logFileBytes x logFilesKept) by spdlog's
// rotating file sink. A line that cannot be written to the file is still in
// the ring and the sink; the failure is counted (fileErrors), never returned
// to the operation that was slow.
//
// Thread safety: every method, from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace spdlog {
class logger;
}

namespace mvkv::engine {

struct SlowOpLogOptions {
    int64_t slowMs = 100;
    double sampleRate = 1.0;
    size_t ringLines = 1024;
    std::function<void(std::string_view)> sink;
    std::string filePath;  // empty: no file
    size_t fileBytes = 64ull << 20;
    size_t filesKept = 4;
};

class SlowOpLog {
  public:
    /// IOError when the file cannot be opened; InvalidArgument for bad settings.
    static StatusWith<std::unique_ptr<SlowOpLog>> open(SlowOpLogOptions options);
    ~SlowOpLog();

    /// The threshold: an operation is slow when it ran longer than slowMs.
    int64_t slowMs() const { return slowMs_.load(std::memory_order_relaxed); }
    double sampleRate() const { return sampleRate_.load(std::memory_order_relaxed); }
    /// InvalidArgument for slowMs < 0 or above INT64_MAX / 1000 (its
    /// microseconds must fit in 64 bits), or a rate outside 0..1.
    Status set(int64_t slowMs, double sampleRate);
    /// True when an operation of `micros` is slow and is sampled in.
    bool shouldLog(int64_t micros) const;

    /// Writes one line (a JSON object, no newline).
    void write(std::string_view line);
    /// The newest `limit` lines of the ring, oldest first (0: all).
    std::vector<std::string> recent(size_t limit = 0) const;
    uint64_t linesWritten() const { return written_.load(std::memory_order_relaxed); }
    uint64_t fileErrors() const { return fileErrors_.load(std::memory_order_relaxed); }
    const std::string& filePath() const { return options_.filePath; }

  private:
    explicit SlowOpLog(SlowOpLogOptions options);

    const SlowOpLogOptions options_;
    std::atomic<int64_t> slowMs_;
    std::atomic<double> sampleRate_;
    mutable std::mutex mutex_;
    std::deque<std::string> ring_;  // GUARDED_BY(mutex_)
    std::shared_ptr<spdlog::logger> file_;
    std::atomic<uint64_t> written_{0};
    std::atomic<uint64_t> fileErrors_{0};
};

}  // namespace mvkv::engine
