#include "tools/shell/shell.h"

#include <fmt/format.h>

#include <charconv>

namespace mvkv::tools {

namespace {

// What to do about an error, where a person can act on it.
std::string hintFor(const Status& s, std::string_view cmd) {
    switch (s.code()) {
        case StatusCode::kWriteConflict:
            return "another session holds a write to this key, or wrote it after this "
                   "transaction's snapshot; commit or abort that one, then retry";
        case StatusCode::kLockTimeout:
            return "another session holds a conflicting lock (see `locks`); commit or abort it, "
                   "or raise `set lock_timeout_ms`";
        case StatusCode::kNamespaceNotFound:
            return cmd == "create" || cmd == "drop" || cmd == "dropdb"
                       ? ""
                       : "create it first: create COLL (see `show collections`)";
        case StatusCode::kInterrupted:
            return "interrupted (Ctrl-C); the session is as it was before the command";
        case StatusCode::kCappedPositionLost:
            return "the oplog was capped past that point; read from the oldest entry (oplog)";
        default:
            return "";
    }
}

}  // namespace

StatusWith<uint64_t> parseNumber(std::string_view text, std::string_view what) {
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size())
        return Status::InvalidArgument(
            fmt::format("{} must be a whole number from 0 to {}, not '{}'", what, UINT64_MAX,
                        text.substr(0, 40)));
    return v;
}

bool splitOption(std::string_view token, std::string* name, std::string* value) {
    size_t eq = token.find('=');
    if (eq == std::string_view::npos)
        return false;
    *name = lowerCase(token.substr(0, eq));
    value->assign(token.substr(eq + 1));
    return true;
}

Shell::Shell(engine::Engine& engine) : engine_(engine), table_(makeCommandTable()) {
    sessions_[current_] = engine_.openSession();
}

Shell::~Shell() = default;

bool Shell::useSession(const std::string& name) {
    current_ = name;
    if (sessions_.count(name))
        return false;
    sessions_[name] = engine_.openSession();
    return true;
}

std::string Shell::ns(const Token& collection) const {
    return db_ + "." + collection.text;
}

std::string Shell::sessionOfLocker(uint64_t id) const {
    for (const auto& [name, s] : sessions_)
        if (s->locker().id() == id)
            return name;
    return "";
}

void Shell::interrupt() {
    interrupted_.store(true, std::memory_order_release);
    if (engine::Session* s = running_.load(std::memory_order_acquire))
        s->interrupt();
}

Reply Shell::execute(const Command& command) {
    Reply reply;
    if (command.empty())
        return reply;
    interrupted_.store(false, std::memory_order_release);
    const std::string word = lowerCase(command.front().text.substr(0, 64));
    const CommandSpec* spec = command.front().quoted ? nullptr : table_.find(word);
    if (!spec) {
        std::vector<std::string> close = table_.suggest(word);
        std::string hint = "type `help` for the list of commands";
        if (!close.empty())
            hint = fmt::format("did you mean {}?", fmt::join(close, ", "));
        reply = Reply::error(Status::InvalidArgument(fmt::format(
                                 "unknown command '{}'", command.front().text.substr(0, 64))),
                             hint);
        reply.cmd = word;
        reply.session = current_;
        return reply;
    }
    Args args(command.begin() + 1, command.end());
    if (args.size() < spec->minArgs || args.size() > spec->maxArgs) {
        reply = Reply::error(Status::InvalidArgument(fmt::format(
            "{} takes {}; usage: {}", spec->name,
            spec->minArgs == spec->maxArgs
                ? fmt::format("{} argument{}", spec->minArgs, spec->minArgs == 1 ? "" : "s")
            : spec->maxArgs == SIZE_MAX
                ? fmt::format("at least {} arguments", spec->minArgs)
                : fmt::format("{} to {} arguments", spec->minArgs, spec->maxArgs),
            spec->usage)));
    } else {
        running_.store(&session(), std::memory_order_release);
        reply = spec->run(*this, args);
        running_.store(nullptr, std::memory_order_release);
    }
    reply.cmd = spec->name;
    if (reply.session.empty())
        reply.session = current_;
    if (!reply.status.ok() && reply.hint.empty())
        reply.hint = hintFor(reply.status, spec->name);
    return reply;
}

}  // namespace mvkv::tools
