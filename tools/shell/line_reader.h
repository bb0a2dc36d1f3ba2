// LineReader: where the shell's lines come from. Interactive: libedit
// (line editing, history in ~/.mvkv_history, tab completion of command
// names); otherwise a stream (stdin or -f FILE) or the -c text.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mvkv/status.h"

namespace mvkv::tools {

class LineReader {
  public:
    virtual ~LineReader() = default;
    /// The next line without its newline; nullopt at the end (Ctrl-D).
    virtual std::optional<std::string> next(const std::string& prompt) = 0;
    /// Set when the line just returned was longer than kMaxLineBytes: it
    /// was cut there, and the rest of it skipped.
    bool lastLineTooLong() const { return tooLong_; }
    /// Why reading stopped early (a read error), or OK.
    const Status& error() const { return error_; }

    /// Longer lines are cut and refused (values are at most 16 MiB).
    static constexpr size_t kMaxLineBytes = 64u << 20;

  protected:
    bool tooLong_ = false;
    Status error_;
};

/// libedit on the terminal; `commands` are completed with Tab. `sigints`
/// counts the SIGINTs the program received: a Ctrl-C at the prompt makes
/// libedit give up the line, which then reads as an empty line (a new
/// prompt), not as the end of input.
std::unique_ptr<LineReader> terminalReader(std::vector<std::string> commands,
                                           const std::atomic<uint64_t>* sigints);
/// Lines of a stream (binary-safe: a line may hold any byte but newline).
std::unique_ptr<LineReader> streamReader(std::FILE* in);
/// The lines of `text`.
std::unique_ptr<LineReader> textReader(std::string text);

}  // namespace mvkv::tools
