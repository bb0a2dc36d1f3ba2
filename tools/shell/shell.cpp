#include "tools/shell/shell.h"

#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>

#include <charconv>

#include "tools/shell/bytes.h"
#include "oplog/oplog_cursor.h"

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
            fmt::format("{} must be a whole number from 0 to {}, not {}", what, UINT64_MAX,
                        displayBytes(text, 40)));
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
    sessions_[current_] = openSession();
}

std::unique_ptr<engine::Session> Shell::openSession() {
    // One thread runs every session: a lock another of this shell's sessions
    // holds would never be released while this one waits for it. A finite
    // wait turns that into a LockTimeout (set lock_timeout_ms changes it).
    auto s = engine_.openSession();
    s->setLockTimeout(kDefaultLockTimeout);
    return s;
}

Shell::~Shell() {
    stopTail();
}

Status Shell::startTail(std::string ns) {
    if (tailing())
        return Status::IllegalOperation("already following the oplog; `tail stop` first");
    oplog::Oplog* log = engine_.oplog();
    if (!log)
        return Status::IllegalOperation("an in-memory engine has no oplog; open the shell on a path");
    auto cursor = engine_.openOplogCursor({log->refreshVisibility() + 1, std::move(ns)});
    if (!cursor.ok())
        return cursor.status();
    followerStop_.store(false);
    followed_.store(0);
    follower_ = std::thread([this, c = std::shared_ptr<oplog::OplogCursor>(std::move(cursor).value()),
                             log, session = current_] {
        sigset_t sigint;  // Ctrl-C belongs to the shell's main thread
        sigemptyset(&sigint);
        sigaddset(&sigint, SIGINT);
        pthread_sigmask(SIG_BLOCK, &sigint, nullptr);
        std::vector<oplog::OplogEntry> entries;
        bool stopping = false;
        while (true) {
            entries.clear();
            // Once asked to stop: what is visible by then, without waiting.
            if (!stopping && followerStop_.load()) {
                stopping = true;
                log->refreshVisibility();
            }
            Status s = c->next(&entries, 100, stopping ? std::chrono::milliseconds(0)
                                                       : std::chrono::milliseconds(100));
            if (!s.ok()) {
                Reply r = Reply::error(s);
                r.cmd = "tail";
                r.session = session;
                emit(r);
                return;
            }
            for (const auto& e : entries) {
                Reply r = tailEntryReply(e);
                r.session = session;
                emit(r);
                followed_.fetch_add(1);
            }
            if (stopping && entries.empty())
                return;
        }
    });
    return Status::OK();
}

uint64_t Shell::stopTail() {
    if (!tailing())
        return 0;
    followerStop_.store(true);
    follower_.join();
    return followed_.load();
}

bool Shell::useSession(const std::string& name) {
    current_ = name;
    if (sessions_.count(name))
        return false;
    sessions_[name] = openSession();
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
    followerStop_.store(true);  // Ctrl-C also ends a `tail`
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
                                 "unknown command {}", displayBytes(command.front().text, 64))),
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
        try {
            reply = spec->run(*this, args);
        } catch (const std::exception& e) {  // a bug, not an answer: say so, keep the shell
            reply = Reply::error(Status::Internal(fmt::format("{} failed: {}", spec->name, e.what())));
        }
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
