#include "shell.h"

#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>

#include <charconv>

#include "bytes.h"

namespace mvkv::tools {

namespace {

// What to do about an error, where a person can act on it.
std::string hintFor(const Status& s, std::string_view cmd) {
    switch (s.code()) {
        case StatusCode::kWriteConflict:
            return "another session holds a write to this key, or wrote it after this "
                   "transaction's snapshot; commit or abort that one, then retry";
        case StatusCode::kPrepareConflict:
            return "a prepared transaction wrote this key; commit or abort it in its session, "
                   "read below its prepare timestamp (begin read_ts=N), or begin ignore_prepare";
        case StatusCode::kLockTimeout:
            return "another session holds a conflicting lock (see `locks`); commit or abort it, "
                   "or raise `set lock_timeout_ms`";
        case StatusCode::kNamespaceNotFound:
            return cmd == "create" || cmd == "drop" || cmd == "dropdb"
                       ? ""
                       : "create it first: create COLL (see `show collections`)";
        case StatusCode::kInterrupted:
            return "interrupted (Ctrl-C) or killed (killop); an explicit transaction it ran in "
                   "was aborted";
        case StatusCode::kCappedPositionLost:
            return "the oplog was capped past that point; read from the oldest entry (oplog)";
        default:
            return "";
    }
}

// Ctrl-C belongs to the shell's main thread.
void blockSigint() {
    sigset_t sigint;
    sigemptyset(&sigint);
    sigaddset(&sigint, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigint, nullptr);
}

}  // namespace

thread_local const Shell::Context* Shell::context_ = nullptr;

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

Shell::Shell(Engine& engine) : engine_(engine), table_(makeCommandTable()) {
    sessions_[current_] = openSession(current_);
}

std::unique_ptr<Session> Shell::openSession(const std::string& name) {
    // One thread runs every foreground command: a lock another of this
    // shell's sessions holds would never be released while this one waits
    // for it. A finite wait turns that into a LockTimeout (set
    // lock_timeout_ms changes it).
    // openSession fails only on a closed engine; the shell's stays open
    // until the shell is destroyed.
    std::unique_ptr<Session> s = std::move(engine_.openSession()).value();
    s->setLockTimeout(kDefaultLockTimeout);
    // For the same reason a read that meets another of this shell's
    // sessions' prepared transaction returns PrepareConflict instead of
    // waiting for a commit only this thread could make.
    s->setPrepareConflictWait(false);
    s->setName(name);  // what currentop, the slow-op log and the profiler call it
    return s;
}

Shell::~Shell() {
    stopJobs();
    stopTail();
    stopWatch();
}

StatusWith<ReplicaSet*> Shell::replicaSetOrStart() {
    if (!replSet_) {
        auto set = engine_.startReplicaSet();
        if (!set.ok())
            return set.status();
        replSet_ = std::move(set).value();
    }
    return replSet_.get();
}

void Shell::setLockTimeout(std::chrono::milliseconds timeout) {
    session().setLockTimeout(timeout);
    lockTimeoutSet_.insert(current_);
}

uint64_t Shell::startJob(const CommandSpec& spec, Args args, std::string text) {
    Session& s = session();
    auto job = std::make_unique<Job>();
    job->opid = s.reserveOpid();
    job->text = std::move(text);
    job->context = {current_, &s, db_, &job->stop};
    // The default limit is there because the foreground waits for its own
    // sessions; a background wait leaves the foreground free to release
    // the lock, so it waits as long as it takes (or its own set limit).
    const bool unlimited = !lockTimeoutSet_.count(current_);
    Job* j = job.get();
    const uint64_t opid = j->opid;
    jobs_[opid] = std::move(job);
    j->thread = std::thread([this, j, &spec, unlimited, args = std::move(args)] {
        blockSigint();
        context_ = &j->context;
        if (unlimited)
            j->context.session->setLockTimeout(std::nullopt);
        j->context.session->setPrepareConflictWait(true);  // the foreground can resolve it
        Reply r = dispatch(spec, args);
        // `killop N` must never reach a later command of this session.
        j->context.session->dropReservedOpid();
        j->context.session->setPrepareConflictWait(false);
        if (unlimited)
            j->context.session->setLockTimeout(kDefaultLockTimeout);
        context_ = nullptr;
        {
            std::lock_guard lock(jobsMutex_);
            j->reply = std::move(r);
            j->done = true;
        }
        jobsCv_.notify_all();
    });
    return opid;
}

void Shell::joinIfDone(Job& job) {
    bool done;
    {
        std::lock_guard lock(jobsMutex_);
        done = job.done;
    }
    if (done && job.thread.joinable())
        job.thread.join();  // it is past its last statement
}

StatusWith<Reply> Shell::waitJob(uint64_t opid) {
    auto it = jobs_.find(opid);
    if (it == jobs_.end())
        return Status::NotFound(
            fmt::format("no background command has opid {} (`jobs` lists them)", opid));
    Job& job = *it->second;
    {
        std::unique_lock lock(jobsMutex_);
        jobsCv_.wait(lock, [&] { return job.done || interrupted_.load(); });
        if (!job.done)
            return Status::Interrupted(fmt::format(
                "stopped waiting (Ctrl-C); opid {} goes on (`killop {}` stops it)", opid, opid));
        job.reported = true;
    }
    joinIfDone(job);
    return job.reply;
}

std::vector<Shell::JobInfo> Shell::jobs() const {
    std::vector<JobInfo> out;
    std::lock_guard lock(jobsMutex_);
    for (const auto& [opid, j] : jobs_)
        out.push_back({opid, j->context.sessionName, j->text, j->done,
                       j->done ? j->reply.status : Status::OK()});
    return out;
}

std::optional<uint64_t> Shell::busyWith(const std::string& name) const {
    std::lock_guard lock(jobsMutex_);
    for (const auto& [opid, j] : jobs_)
        if (!j->done && j->context.sessionName == name)
            return opid;
    return std::nullopt;
}

Status Shell::requireIdle(std::string* hint) const {
    if (context_)
        return Status::OK();  // a background command runs in its own session
    std::optional<uint64_t> opid = busyWith(current_);
    if (!opid)
        return Status::OK();
    std::string text;
    {
        std::lock_guard lock(jobsMutex_);
        text = jobs_.at(*opid)->text;
    }
    *hint = fmt::format("`wait {}` for it, `killop {}` to stop it, or switch to another session "
                        "(session NAME)",
                        *opid, *opid);
    return Status::Busy(fmt::format(
        "session {} is busy: it runs `{}` in the background (opid {})", current_, text, *opid));
}

std::vector<std::string> Shell::takeNotices() {
    std::vector<std::string> out;
    for (auto& [opid, j] : jobs_) {
        {
            std::lock_guard lock(jobsMutex_);
            if (!j->done || j->reported)
                continue;
            j->reported = true;
            const Status& s = j->reply.status;
            out.push_back(s.ok() ? fmt::format("[bg {}] done: {} (session {}); `wait {}` shows "
                                               "its reply",
                                               opid, j->text, j->context.sessionName, opid)
                                 : fmt::format("[bg {}] failed: {} (session {}): {}: {}", opid,
                                               j->text, j->context.sessionName,
                                               statusCodeName(s.code()), s.message()));
        }
        joinIfDone(*j);
    }
    return out;
}

void Shell::stopJobs() {
    for (auto& [opid, j] : jobs_) {
        j->stop.store(true);
        std::unique_lock lock(jobsMutex_);
        // An interrupt that lands between two of the command's operations
        // is forgotten when the next one starts: repeat it until it ends.
        while (!j->done) {
            j->context.session->interrupt();
            jobsCv_.wait_for(lock, std::chrono::milliseconds(10));
        }
        lock.unlock();
        joinIfDone(*j);
    }
}

Status Shell::startTail(std::string ns) {
    if (tailing())
        return Status::IllegalOperation("already following the oplog; `tail stop` first");
    if (!engine_.hasOplog())
        return Status::IllegalOperation(
            "this engine keeps no oplog (in memory with inMemoryOplogCapBytes 0)");
    auto cursor = engine_.openOplog({engine_.refreshOplogVisibility() + 1, std::move(ns)});
    if (!cursor.ok())
        return cursor.status();
    followerStop_.store(false);
    followed_.store(0);
    follower_ = std::thread([this, c = std::shared_ptr<OplogCursor>(std::move(cursor).value()),
                             session = current_] {
        blockSigint();
        std::vector<OplogEntry> entries;
        bool stopping = false;
        while (true) {
            entries.clear();
            // Once asked to stop: what is visible by then, without waiting.
            if (!stopping && followerStop_.load()) {
                stopping = true;
                engine_.refreshOplogVisibility();
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

Status Shell::startWatch(std::string ns, std::string resumeAfter) {
    if (watching())
        return Status::IllegalOperation("already watching; `watch stop` first");
    ChangeStreamOptions o;
    o.ns = std::move(ns);
    o.resumeAfter = std::move(resumeAfter);
    auto stream = engine_.watch(std::move(o));
    if (!stream.ok())
        return stream.status();
    watcherStop_.store(false);
    watched_.store(0);
    watcher_ = std::thread([this, cs = std::shared_ptr<ChangeStream>(
                                      std::move(stream).value()),
                            session = current_] {
        blockSigint();
        bool stopping = false;
        while (true) {
            // Once asked to stop: what is readable by then, without waiting.
            if (!stopping && watcherStop_.load()) {
                stopping = true;
                engine_.refreshOplogVisibility();  // none without an oplog
            }
            auto ev = cs->next(stopping ? std::chrono::milliseconds(0)
                                        : std::chrono::milliseconds(100));
            if (!ev.ok()) {
                Reply r = Reply::error(ev.status());
                r.cmd = "watch";
                r.session = session;
                emit(r);
                return;
            }
            if (ev.value()) {
                Reply r = changeEventReply(*ev.value());
                r.session = session;
                emit(r);
                watched_.fetch_add(1);
            } else if (stopping) {
                return;
            }
        }
    });
    return Status::OK();
}

uint64_t Shell::stopWatch() {
    if (!watching())
        return 0;
    watcherStop_.store(true);
    watcher_.join();
    return watched_.load();
}

bool Shell::useSession(const std::string& name) {
    current_ = name;
    if (sessions_.count(name))
        return false;
    sessions_[name] = openSession(name);
    return true;
}

std::string Shell::ns(const Token& collection) const {
    return db() + "." + collection.text;
}

std::string Shell::sessionOfLocker(uint64_t id) const {
    for (const auto& [name, s] : sessions_)
        if (s->lockerId() == id)
            return name;
    return "";
}

void Shell::interrupt() {
    interrupted_.store(true, std::memory_order_release);
    followerStop_.store(true);  // Ctrl-C also ends a `tail`
    watcherStop_.store(true);   // and a `watch`
    if (Session* s = running_.load(std::memory_order_acquire))
        s->interrupt();
    {
        std::lock_guard lock(jobsMutex_);  // no lost wake-up of a `wait`
    }
    jobsCv_.notify_all();
}

bool Shell::interrupted() const {
    if (context_)
        return context_->interrupted->load(std::memory_order_acquire);
    return interrupted_.load(std::memory_order_acquire);
}

Status checkArgs(const CommandSpec& spec, const Args& args) {
    if (args.size() >= spec.minArgs && args.size() <= spec.maxArgs)
        return Status::OK();
    return Status::InvalidArgument(fmt::format(
        "{} takes {}; usage: {}", spec.name,
        spec.minArgs == spec.maxArgs
            ? fmt::format("{} argument{}", spec.minArgs, spec.minArgs == 1 ? "" : "s")
        : spec.maxArgs == SIZE_MAX ? fmt::format("at least {} arguments", spec.minArgs)
                                   : fmt::format("{} to {} arguments", spec.minArgs, spec.maxArgs),
        spec.usage));
}

Reply Shell::dispatch(const CommandSpec& spec, const Args& args) {
    Reply reply;
    try {
        reply = spec.run(*this, args);
    } catch (const std::exception& e) {  // a bug, not an answer: say so, keep the shell
        reply = Reply::error(Status::Internal(fmt::format("{} failed: {}", spec.name, e.what())));
    }
    if (reply.cmd.empty())  // `wait` hands back the reply of another command
        reply.cmd = spec.name;
    if (reply.session.empty())
        reply.session = sessionName();
    if (!reply.status.ok() && reply.hint.empty())
        reply.hint = hintFor(reply.status, reply.cmd);
    return reply;
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
    std::string hint;
    Status s = checkArgs(*spec, args);
    if (s.ok() && spec->usesSession)
        s = requireIdle(&hint);
    if (!s.ok()) {
        reply = Reply::error(s, hint);
        reply.cmd = spec->name;
        reply.session = current_;
        if (reply.hint.empty())
            reply.hint = hintFor(reply.status, spec->name);
        return reply;
    }
    // Ctrl-C interrupts the session only when the foreground uses it: a
    // background command there is stopped by `killop`, not by Ctrl-C.
    running_.store(busyWith(current_) ? nullptr : &session(), std::memory_order_release);
    reply = dispatch(*spec, args);
    running_.store(nullptr, std::memory_order_release);
    return reply;
}

}  // namespace mvkv::tools
