// Shell: the state of one mvkv shell — its engine, current database, named
// sessions (each with its own transaction and locks) — and the execution of
// one command into a Reply. Printing is output.h's; reading lines is
// line_reader.h's; the program is tools/mvkv.cpp.
//
// Thread safety: execute() from one thread; interrupt() from any (Ctrl-C):
// it interrupts the running command as MongoDB's killOp does.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "engine/engine.h"
#include "engine/session.h"
#include "oplog/oplog_entry.h"
#include "tools/shell/command_table.h"
#include "tools/shell/reply.h"
#include "tools/shell/tokenizer.h"

namespace mvkv::tools {

class Shell {
  public:
    /// How long a shell session waits for a lock by default.
    static constexpr std::chrono::milliseconds kDefaultLockTimeout{5000};

    /// `engine` must outlive the shell.
    explicit Shell(engine::Engine& engine);
    ~Shell();

    /// Runs one command. Never throws; errors are in the Reply.
    Reply execute(const Command& command);
    /// Any thread: interrupts the running command (a lock wait, a retry
    /// loop, `tail`). Forgotten when the next command starts.
    void interrupt();
    bool interrupted() const { return interrupted_.load(std::memory_order_acquire); }
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

    // --- for the commands ---
    engine::Engine& engine() { return engine_; }
    const CommandTable& commands() const { return table_; }
    engine::Session& session() { return *sessions_.at(current_); }
    const std::string& sessionName() const { return current_; }
    /// Switches to session `name`, creating it; true when created.
    bool useSession(const std::string& name);
    const std::map<std::string, std::unique_ptr<engine::Session>>& sessions() const {
        return sessions_;
    }
    const std::string& db() const { return db_; }
    void setDb(std::string db) { db_ = std::move(db); }
    /// "db.coll" for a collection argument in the current database.
    std::string ns(const Token& collection) const;
    /// The shell session that owns lock manager locker `id` ("" if none).
    std::string sessionOfLocker(uint64_t id) const;

  private:
    std::unique_ptr<engine::Session> openSession();

    engine::Engine& engine_;
    CommandTable table_;
    std::string db_ = "test";
    std::map<std::string, std::unique_ptr<engine::Session>> sessions_;
    std::string current_ = "main";
    std::atomic<bool> interrupted_{false};
    std::atomic<engine::Session*> running_{nullptr};
    std::function<void(const Reply&)> sink_;
    std::thread follower_;
    std::atomic<bool> followerStop_{false};
    std::atomic<uint64_t> followed_{0};
};

/// One `tail` item: {"cmd":"tail", ..., "entry":{...}}.
Reply tailEntryReply(const oplog::OplogEntry& e);

/// A number argument: InvalidArgument naming `what` unless all digits and in range.
StatusWith<uint64_t> parseNumber(std::string_view text, std::string_view what);
/// Splits "name=value" (false when there is no '=').
bool splitOption(std::string_view token, std::string* name, std::string* value);

}  // namespace mvkv::tools
