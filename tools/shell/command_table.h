// The shell's commands: name, usage line, one-line summary, argument counts
// and handler. Lookup is case-insensitive; an unknown word gets a "did you
// mean" from the closest names.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "mvkv/options.h"
#include "reply.h"
#include "tokenizer.h"

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
    /// Runs in the current session: refused while a `bg` command runs there
    /// (a Session is one thread's at a time).
    bool usesSession = true;
    /// May run under `bg`; false for commands that change or list the
    /// shell's own state (sessions, the current database, jobs).
    bool background = true;
};

class CommandTable {
  public:
    /// Adds `spec`; the reference is for setting its flags at once.
    CommandSpec& add(CommandSpec spec);
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
void addOpsCommands(CommandTable& table);
void addTtlCommands(CommandTable& table);
void addLockCommands(CommandTable& table);
void addReplCommands(CommandTable& table);
void addFailPointCommands(CommandTable& table);

// `show profile` and `show log` (commands_ops.cpp; `show` is the catalog's).
Reply showProfile(Shell& sh, const Args& options);
Reply showLog(Shell& sh, const Args& options);

/// The value of a write's `lock=OWNER:TOKEN` option (commands_locks.cpp):
/// sets options->fence, whose owner view points into *owner.
Status parseFenceOption(std::string_view value, WriteOptions* options,
                        std::string* owner);

std::string lowerCase(std::string_view s);

}  // namespace mvkv::tools
