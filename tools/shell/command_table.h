// The shell's commands: name, usage line, one-line summary, argument counts
// and handler. Lookup is case-insensitive; an unknown word gets a "did you
// mean" from the closest names.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tools/shell/reply.h"
#include "tools/shell/tokenizer.h"

namespace mvkv::tools {

class Shell;
using Args = std::vector<Token>;  // the tokens after the command word

struct CommandSpec {
    std::string name;     // lower case
    std::string usage;    // "put COLL KEY VALUE"
    std::string summary;  // one line for help
    size_t minArgs = 0;
    size_t maxArgs = 0;  // SIZE_MAX: any number
    std::function<Reply(Shell&, const Args&)> run;
};

class CommandTable {
  public:
    void add(CommandSpec spec);
    /// The command named `word` (any case), or null.
    const CommandSpec* find(std::string_view word) const;
    /// Up to three names closest to `word` (edit distance <= 2, or a prefix).
    std::vector<std::string> suggest(std::string_view word) const;
    const std::vector<CommandSpec>& all() const { return commands_; }

  private:
    std::vector<CommandSpec> commands_;
};

/// Every command of the shell (commands_*.cpp).
CommandTable makeCommandTable();
void addCatalogCommands(CommandTable& table);
void addDataCommands(CommandTable& table);
void addTxnCommands(CommandTable& table);
void addAdminCommands(CommandTable& table);

std::string lowerCase(std::string_view s);

}  // namespace mvkv::tools
