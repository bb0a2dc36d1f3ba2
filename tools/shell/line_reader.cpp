#include "line_reader.h"

#include <editline/readline.h>

#include <cstdlib>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace mvkv::tools {

namespace {

std::vector<std::string>* completionWords = nullptr;

char* completeCommand(const char* text, int state) {
    static size_t index;
    if (state == 0)
        index = 0;
    const size_t len = std::strlen(text);
    while (completionWords && index < completionWords->size()) {
        const std::string& w = (*completionWords)[index++];
        if (w.compare(0, len, text) == 0)
            return strdup(w.c_str());
    }
    return nullptr;
}

char** completeLine(const char* text, int start, int) {
    // Only the command word (the first of the line) is completed.
    if (start != 0)
        return nullptr;
    return rl_completion_matches(text, completeCommand);
}

class TerminalReader final : public LineReader {
  public:
    TerminalReader(std::vector<std::string> commands, const std::atomic<uint64_t>* sigints)
        : commands_(std::move(commands)), sigints_(sigints) {
        completionWords = &commands_;
        rl_attempted_completion_function = completeLine;
        const char* home = std::getenv("HOME");
        if (home)
            historyFile_ = std::string(home) + "/.mvkv_history";
        using_history();
        if (!historyFile_.empty())
            read_history(historyFile_.c_str());
    }
    ~TerminalReader() override {
        if (!historyFile_.empty())
            write_history(historyFile_.c_str());
        completionWords = nullptr;
    }

    std::optional<std::string> next(const std::string& prompt) override {
        const uint64_t before = sigints_ ? sigints_->load() : 0;
        char* line = readline(prompt.c_str());
        if (!line) {
            if (sigints_ && sigints_->load() != before) {
                std::fputs("\n", stdout);  // Ctrl-C: drop the line, prompt again
                return std::string();
            }
            return std::nullopt;
        }
        std::string out(line);
        std::free(line);
        if (!out.empty() && out.find_first_not_of(" \t") != std::string::npos) {
            add_history(out.c_str());
            if (!historyFile_.empty())
                write_history(historyFile_.c_str());
        }
        return out;
    }

  private:
    std::vector<std::string> commands_;
    const std::atomic<uint64_t>* sigints_;
    std::string historyFile_;
};

class StreamReader final : public LineReader {
  public:
    explicit StreamReader(std::FILE* in) : in_(in) {}
    std::optional<std::string> next(const std::string&) override {
        std::string line;
        tooLong_ = false;
        int c;
        bool any = false;
        while ((c = std::fgetc(in_)) != EOF) {
            any = true;
            if (c == '\n')
                return stripCr(line);
            if (line.size() < kMaxLineBytes)
                line.push_back(static_cast<char>(c));
            else
                tooLong_ = true;  // the rest of the line is skipped
        }
        if (std::ferror(in_)) {
            error_ = Status::IOError(fmt::format("reading commands: {}", std::strerror(errno)));
            return std::nullopt;
        }
        if (!any)
            return std::nullopt;
        return stripCr(line);
    }

  private:
    static std::string stripCr(std::string& s) {
        if (!s.empty() && s.back() == '\r')
            s.pop_back();
        return std::move(s);
    }
    std::FILE* in_;
};

class TextReader final : public LineReader {
  public:
    explicit TextReader(std::string text) : text_(std::move(text)) {}
    std::optional<std::string> next(const std::string&) override {
        if (pos_ > text_.size())
            return std::nullopt;
        size_t nl = text_.find('\n', pos_);
        std::string line =
            text_.substr(pos_, nl == std::string::npos ? std::string::npos : nl - pos_);
        pos_ = nl == std::string::npos ? text_.size() + 1 : nl + 1;
        return line;
    }

  private:
    std::string text_;
    size_t pos_ = 0;
};

}  // namespace

std::unique_ptr<LineReader> terminalReader(std::vector<std::string> commands,
                                           const std::atomic<uint64_t>* sigints) {
    return std::make_unique<TerminalReader>(std::move(commands), sigints);
}
std::unique_ptr<LineReader> streamReader(std::FILE* in) {
    return std::make_unique<StreamReader>(in);
}
std::unique_ptr<LineReader> textReader(std::string text) {
    return std::make_unique<TextReader>(std::move(text));
}

}  // namespace mvkv::tools
