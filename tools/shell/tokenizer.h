// tokenizer: one line of shell input split into commands and their arguments.
//
// Syntax (modelled on sh, cut down):
// - `;` outside quotes ends a command; empty commands are dropped, so "a; ;b"
//   is two commands and a line of blanks is none.
// - Outside quotes, words are separated by blanks: space, tab, CR and LF.
// - "Quoted strings" hold any bytes, blanks and `;` included. Inside quotes
//   `\"` is a quote and `\\` a backslash; any other backslash is an error.
//   Outside quotes a backslash is an ordinary byte.
// - A quote may open in the middle of a word and the word goes on after it
//   closes: ab"c d"e is the one argument `abc de`. `""` is an empty argument.
// - `#` as the first byte of a command (outside quotes) makes the rest of the
//   line a comment. `a #b` is two arguments; `a; #b` is the command `a`.
//
// Errors are InvalidArgument with a 1-based column, counted in bytes.
// Any bytes are accepted (NUL, 0xff, ...); the work is linear in the line.
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "mvkv/status.h"

namespace mvkv::tools {

struct Token {
    std::string text;
    bool quoted = false;  // some of it was "quoted": "" is an empty argument, a quoted ";" data

    bool operator==(const Token&) const = default;
};
using Command = std::vector<Token>;

/// Splits `line` into commands, each a non-empty list of tokens, in order.
/// InvalidArgument:
///   "unterminated quote starting at column N" (N: the opening quote; also
///   when the line ends just after a backslash inside quotes);
///   "unknown escape \x at column N; inside quotes use \" or \\" (N: the
///   backslash; a byte that is not printable ASCII is shown as \xNN).
StatusWith<std::vector<Command>> splitLine(std::string_view line);

}  // namespace mvkv::tools
