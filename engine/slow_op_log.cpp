#include "engine/slow_op_log.h"

#include <fmt/format.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/rotating_file_sink.h>

#include <limits>
#include <random>

namespace mvkv::engine {

SlowOpLog::SlowOpLog(SlowOpLogOptions options)
    : options_(std::move(options)),
      slowMs_(options_.slowMs),
      sampleRate_(options_.sampleRate) {}

SlowOpLog::~SlowOpLog() {
    if (file_)
        file_->flush();
}

StatusWith<std::unique_ptr<SlowOpLog>> SlowOpLog::open(SlowOpLogOptions options) {
    if (options.fileBytes == 0 || options.filesKept == 0)
        return Status::InvalidArgument(
            "logFileBytes and logFilesKept must be at least 1 (the log's rotation)");
    std::unique_ptr<SlowOpLog> log(new SlowOpLog(std::move(options)));
    if (Status s = log->set(log->options_.slowMs, log->options_.sampleRate); !s.ok())
        return s;
    if (!log->options_.filePath.empty()) {
        // spdlog reports errors by exception: caught here, never past the API.
        try {
            auto sink = std::make_shared<spdlog::sinks::rotating_file_sink_mt>(
                log->options_.filePath, log->options_.fileBytes, log->options_.filesKept);
            log->file_ = std::make_shared<spdlog::logger>("mvkv", std::move(sink));
            log->file_->set_pattern("%v");
            log->file_->flush_on(spdlog::level::info);
            log->file_->set_error_handler([raw = log.get()](const std::string&) {
                raw->fileErrors_.fetch_add(1, std::memory_order_relaxed);
            });
        } catch (const std::exception& e) {
            return Status::IOError(
                fmt::format("cannot open the log file {}: {}", log->options_.filePath, e.what()));
        }
    }
    return log;
}

Status SlowOpLog::set(int64_t slowMs, double sampleRate) {
    // Operations compare their microseconds with slowMs * 1000: it must fit.
    constexpr int64_t kMaxSlowMs = std::numeric_limits<int64_t>::max() / 1000;
    if (slowMs < 0 || slowMs > kMaxSlowMs)
        return Status::InvalidArgument(fmt::format(
            "slowms must be between 0 and {} milliseconds, not {}", kMaxSlowMs, slowMs));
    if (!(sampleRate >= 0.0 && sampleRate <= 1.0))
        return Status::InvalidArgument(
            fmt::format("sampleRate must be between 0 and 1, not {}", sampleRate));
    slowMs_.store(slowMs, std::memory_order_relaxed);
    sampleRate_.store(sampleRate, std::memory_order_relaxed);
    return Status::OK();
}

bool SlowOpLog::shouldLog(int64_t micros) const {
    if (micros <= slowMs() * 1000)
        return false;
    double rate = sampleRate();
    if (rate >= 1.0)
        return true;
    if (rate <= 0.0)
        return false;
    thread_local std::minstd_rand rng{std::random_device{}()};
    return std::uniform_real_distribution<double>(0.0, 1.0)(rng) < rate;
}

void SlowOpLog::write(std::string_view line) {
    written_.fetch_add(1, std::memory_order_relaxed);
    {
        std::lock_guard<std::mutex> g(mutex_);
        ring_.emplace_back(line);
        while (ring_.size() > options_.ringLines)
            ring_.pop_front();
    }
    if (options_.sink)
        options_.sink(line);
    if (file_) {
        try {
            file_->info("{}", line);
        } catch (const std::exception&) {
            fileErrors_.fetch_add(1, std::memory_order_relaxed);
        }
    }
}

std::vector<std::string> SlowOpLog::recent(size_t limit) const {
    std::lock_guard<std::mutex> g(mutex_);
    size_t n = limit == 0 ? ring_.size() : std::min(limit, ring_.size());
    return std::vector<std::string>(ring_.end() - static_cast<ptrdiff_t>(n), ring_.end());
}

}  // namespace mvkv::engine
