// Shell: the state of one mvkv shell — its engine, current database, named
// sessions (each with its own transaction and locks) — and the execution of
// one command into a Reply. Printing is output.h's; reading lines is
// line_reader.h's; the program is tools/mvkv.cpp. Everything it does to
// the engine goes through the public API (include/mvkv/).
//
// Background commands (`bg`): each runs on a thread of its own in the
// session that started it, with that session and database; while it runs
// the session is busy and a foreground command that needs it is refused
// (Busy), so a Session is never used by two threads at once.
//
// Thread safety: execute() from one thread (the foreground); interrupt()
// from any (Ctrl-C): it interrupts the running foreground command as
// MongoDB's killOp does (background commands are stopped with `killop`).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "command_table.h"
#include "reply.h"
#include "tokenizer.h"
#include "mvkv/engine.h"

namespace mvkv::tools {

class Shell {
  public:
    /// How long a shell session waits for a lock by default.
    static constexpr std::chrono::milliseconds kDefaultLockTimeout{5000};

    /// `engine` must outlive the shell.
    explicit Shell(Engine& engine);
    ~Shell();

    /// Runs one command. Never throws; errors are in the Reply.
    Reply execute(const Command& command);
    /// Any thread: interrupts the running foreground command (a lock wait,
    /// a retry loop, `tail`, `wait`). Forgotten when the next command starts.
    void interrupt();
    /// The command running on this thread was interrupted (Ctrl-C for the
    /// foreground; the shell's exit for a background command).
    bool interrupted() const;
    /// Where a streaming command (`tail`) sends each item as it comes.
    void setSink(std::function<void(const Reply&)> sink) { sink_ = std::move(sink); }
    void emit(const Reply& item) {
        if (sink_)
            sink_(item);
    }
    /// `tail`: follows the oplog in a background thread from the next
    /// entry on, emitting each entry, while the shell keeps taking commands
    /// (its own sessions' writes show up). IllegalOperation when already
    /// following or in memory.
    Status startTail(std::string ns);
    /// Stops following, after emitting what is already visible; returns how
    /// many entries were emitted (0 when not following).
    uint64_t stopTail();
    bool tailing() const { return follower_.joinable(); }
    /// `watch`: a change stream (mvkv/change_stream.h) on `ns` ("" for
    /// every database), from now or after `resumeAfter`, read in a
    /// background thread that emits each event, like `tail`.
    /// IllegalOperation when already watching; the stream's errors
    /// (InvalidArgument for a bad namespace or token).
    Status startWatch(std::string ns, std::string resumeAfter);
    /// Stops watching, after emitting what is readable now; returns how many
    /// events were emitted (0 when not watching).
    uint64_t stopWatch();
    bool watching() const { return watcher_.joinable(); }

    // --- background commands ---

    /// Starts `spec` with `args` in the current session on a thread of its
    /// own and returns the opid of its first engine operation. The caller
    /// checked the arguments and that the session is idle; `text` is how
    /// `jobs` shows the command.
    uint64_t startJob(const CommandSpec& spec, Args args, std::string text);
    /// Blocks until job `opid` ends and returns its reply; NotFound for an
    /// unknown opid, Interrupted on Ctrl-C (the job goes on).
    StatusWith<Reply> waitJob(uint64_t opid);
    struct JobInfo {
        uint64_t opid = 0;
        std::string session, command;
        bool done = false;
        Status status;  // when done
    };
    std::vector<JobInfo> jobs() const;
    /// The opid of the background command running in session `name`, if any.
    std::optional<uint64_t> busyWith(const std::string& name) const;
    /// OK, or Busy when a background command runs in the current session.
    Status requireIdle(std::string* hint) const;
    /// One line per background command that ended since the last call and
    /// whose reply nobody `wait`ed for (human mode prints them at the prompt).
    std::vector<std::string> takeNotices();
    /// Stops the background commands still running (interrupting them as
    /// killOp does) and waits for them; at exit.
    void stopJobs();

    // --- for the commands ---
    Engine& engine() { return engine_; }
    const CommandTable& commands() const { return table_; }
    /// The session (and below, the database) of the command running on
    /// this thread: a background command's own, or the current one.
    Session& session() {
        return context_ ? *context_->session : *sessions_.at(current_);
    }
    const std::string& sessionName() const {
        return context_ ? context_->sessionName : current_;
    }
    /// Switches to session `name`, creating it; true when created.
    bool useSession(const std::string& name);
    const std::map<std::string, std::unique_ptr<Session>>& sessions() const {
        return sessions_;
    }
    const std::string& db() const { return context_ ? context_->db : db_; }
    void setDb(std::string db) { db_ = std::move(db); }
    /// `set lock_timeout_ms` on the current session: remembered, because a
    /// background command otherwise waits for locks without the default limit.
    void setLockTimeout(std::chrono::milliseconds timeout);
    /// "db.coll" for a collection argument in the current database.
    std::string ns(const Token& collection) const;
    /// `rs`: the replica set whose primary is the shell's engine; null
    /// until the first `rs add` (replicaSetOrStart starts it).
    ReplicaSet* replicaSet() { return replSet_.get(); }
    StatusWith<ReplicaSet*> replicaSetOrStart();
    /// The shell session that owns lock manager locker `id` ("" if none).
    std::string sessionOfLocker(uint64_t id) const;

  private:
    /// Where a command runs: the foreground (no context) or a `bg` thread.
    struct Context {
        std::string sessionName;
        Session* session = nullptr;
        std::string db;
        const std::atomic<bool>* interrupted = nullptr;
    };
    struct Job {
        uint64_t opid = 0;
        std::string text;
        Context context;
        std::atomic<bool> stop{false};
        bool done = false;      // GUARDED_BY(jobsMutex_)
        bool reported = false;  // its reply was waited for, or its notice taken
        Reply reply;            // GUARDED_BY(jobsMutex_); set when done
        std::thread thread;
    };
    static thread_local const Context* context_;

    std::unique_ptr<Session> openSession(const std::string& name);
    /// Runs `spec` (arguments already checked) and fills the reply's cmd,
    /// session and hint.
    Reply dispatch(const CommandSpec& spec, const Args& args);
    void joinIfDone(Job& job);

    Engine& engine_;
    CommandTable table_;
    std::string db_ = "test";
    std::map<std::string, std::unique_ptr<Session>> sessions_;
    std::string current_ = "main";
    std::atomic<bool> interrupted_{false};
    std::atomic<Session*> running_{nullptr};
    std::function<void(const Reply&)> sink_;
    std::thread follower_;
    std::atomic<bool> followerStop_{false};
    std::atomic<uint64_t> followed_{0};
    std::thread watcher_;
    std::atomic<bool> watcherStop_{false};
    std::atomic<uint64_t> watched_{0};
    std::set<std::string> lockTimeoutSet_;  // sessions whose lock_timeout_ms was set
    mutable std::mutex jobsMutex_;
    std::condition_variable jobsCv_;
    std::map<uint64_t, std::unique_ptr<Job>> jobs_;  // by opid; touched by the foreground only
    std::unique_ptr<ReplicaSet> replSet_;  // foreground only
};

/// InvalidArgument unless `args` fits `spec`'s argument counts (with its usage).
Status checkArgs(const CommandSpec& spec, const Args& args);

/// One `tail` item: {"cmd":"tail", ..., "entry":{...}}.
Reply tailEntryReply(const OplogEntry& e);
/// One `watch` item: {"cmd":"watch", ..., "event":{...}} (docs/shell.md).
Reply changeEventReply(const ChangeEvent& e);

/// A number argument: InvalidArgument naming `what` unless all digits and in range.
StatusWith<uint64_t> parseNumber(std::string_view text, std::string_view what);
/// Splits "name=value" (false when there is no '=').
bool splitOption(std::string_view token, std::string* name, std::string* value);

}  // namespace mvkv::tools
