#include "command_table.h"

#include <algorithm>
#include <cctype>

namespace mvkv::tools {

namespace {

size_t editDistance(std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j)
        row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diag = up;
        }
    }
    return row[b.size()];
}

}  // namespace

std::string lowerCase(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

CommandSpec& CommandTable::add(CommandSpec spec) {
    commands_.push_back(std::move(spec));
    return commands_.back();
}

const CommandSpec* CommandTable::find(std::string_view word) const {
    const std::string w = lowerCase(word);
    for (const CommandSpec& c : commands_)
        if (c.name == w)
            return &c;
    return nullptr;
}

std::vector<std::string> CommandTable::suggest(std::string_view word) const {
    const std::string w = lowerCase(word.substr(0, 64));
    std::vector<std::pair<size_t, std::string>> scored;
    for (const CommandSpec& c : commands_) {
        size_t d = editDistance(w, c.name);
        if (d <= 2 || (w.size() >= 2 && c.name.rfind(w, 0) == 0))
            scored.emplace_back(d, c.name);
    }
    // Words of the mongo shell and sqlite3 that mean one of ours.
    static const std::pair<std::string_view, std::string_view> kAliases[] = {
        {"delete", "del"},      {"remove", "del"},     {"rollback", "abort"},
        {"find", "scan"},       {"findone", "get"},    {".tables", "show"},
        {"tables", "show"},     {"dbs", "show"},       {"collections", "show"},
        {"start", "begin"},     {"end", "commit"},     {"set_timestamp", "set"},
        {"upsert", "put"},      {".quit", "quit"},     {".exit", "exit"},
        {".help", "help"},      {"stats", "status"},   {"getlog", "show"},
        {"setprofilinglevel", "profile"},
    };
    for (const auto& [alias, name] : kAliases)
        if (w == alias)
            scored.emplace_back(0, std::string(name));
    std::sort(scored.begin(), scored.end());
    std::vector<std::string> out;
    for (size_t i = 0; i < scored.size() && out.size() < 3; ++i)
        if (std::find(out.begin(), out.end(), scored[i].second) == out.end())
            out.push_back(scored[i].second);
    return out;
}

CommandTable makeCommandTable() {
    CommandTable t;
    addCatalogCommands(t);
    addDataCommands(t);
    addTxnCommands(t);
    addAdminCommands(t);
    addOpsCommands(t);
    addTtlCommands(t);
    addLockCommands(t);
    addReplCommands(t);
    addFailPointCommands(t);
    return t;
}

}  // namespace mvkv::tools
