#include "tokenizer.h"

#include <fmt/format.h>

#include <optional>

namespace mvkv::tools {

namespace {

bool isBlank(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/// The byte after a backslash as the error message shows it.
std::string escapeForMessage(char c) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x21 && u < 0x7f)
        return std::string(1, c);
    return fmt::format("x{:02x}", u);
}

}  // namespace

StatusWith<std::vector<Command>> splitLine(std::string_view line) {
    std::vector<Command> commands;
    Command command;
    std::optional<Token> word;  // the token being built; set once any byte or quote is seen

    const auto endWord = [&] {
        if (word) {
            command.push_back(std::move(*word));
            word.reset();
        }
    };
    const auto endCommand = [&] {
        endWord();
        if (!command.empty())
            commands.push_back(std::move(command));
        command.clear();
    };

    size_t i = 0;
    while (i < line.size()) {
        const char c = line[i];
        if (isBlank(c)) {
            endWord();
            ++i;
        } else if (c == ';') {
            endCommand();
            ++i;
        } else if (c == '#' && !word && command.empty()) {
            break;  // a comment: the rest of the line
        } else if (c == '"') {
            const size_t open = i++;
            if (!word)
                word.emplace();
            word->quoted = true;
            for (;;) {
                if (i >= line.size())
                    return Status::InvalidArgument(
                        fmt::format("unterminated quote starting at column {}", open + 1));
                const char q = line[i];
                if (q == '"') {
                    ++i;
                    break;
                }
                if (q == '\\') {
                    if (i + 1 >= line.size())
                        return Status::InvalidArgument(
                            fmt::format("unterminated quote starting at column {}", open + 1));
                    const char next = line[i + 1];
                    if (next != '"' && next != '\\')
                        return Status::InvalidArgument(fmt::format(
                            "unknown escape \\{} at column {}; inside quotes use \\\" or \\\\",
                            escapeForMessage(next), i + 1));
                    word->text += next;
                    i += 2;
                } else {
                    word->text += q;
                    ++i;
                }
            }
        } else {
            if (!word)
                word.emplace();
            word->text += c;
            ++i;
        }
    }
    endCommand();
    return commands;
}

}  // namespace mvkv::tools
