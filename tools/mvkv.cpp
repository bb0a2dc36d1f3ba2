// mvkv: the shell. Explore snapshots, conflicts, history, the oplog and
// locks by hand, from several named sessions in one terminal, or script it
// (--json prints exactly one JSON object per command). docs/shell.md.
//
//   mvkv [PATH] [--memory] [--json] [--bail] [-c "CMD; CMD"] [-f FILE] [--sync none|write|fsync]
//   mvkv --version      version, git revision and build type (mvkv::buildStamp())
//
// Exit status: 0 when every command succeeded, 1 when any failed (--bail
// stops at the first), 2 for a bad invocation.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <atomic>
#include <mutex>
#include <clocale>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include "shell/bytes.h"
#include "shell/line_reader.h"
#include "shell/output.h"
#include "shell/shell.h"
#include "shell/tokenizer.h"
#include "mvkv/engine.h"
#include "mvkv/version.h"

namespace {

int interruptPipe[2] = {-1, -1};
std::atomic<uint64_t> sigints{0};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "used in a signal handler");

void onSigint(int) {
    sigints.fetch_add(1, std::memory_order_relaxed);
    char c = 1;
    ssize_t ignored = ::write(interruptPipe[1], &c, 1);  // async-signal-safe
    (void)ignored;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace mvkv;
    // libedit reads multibyte characters only in the user's locale.
    std::setlocale(LC_CTYPE, "");
    CLI::App app{"mvkv: the mvkv shell. Commands: type `help`; docs/shell.md."};
    std::string path = "./mvkv-data";
    bool memory = false, json = false, bail = false, repair = false;
    std::string commands, file, sync = "fsync";
    app.add_option("PATH", path, "data directory (created on first use)");
    app.add_flag("--memory", memory, "an in-memory engine: no files (and no oplog)");
    app.add_flag("--json", json, "one JSON object per command on stdout");
    app.add_flag("--bail", bail, "stop at the first failing command");
    app.add_option("-c", commands, "run these commands (';' or newlines between them) and exit");
    app.add_option("-f", file, "run the commands in FILE and exit");
    app.add_flag("--repair", repair,
                 "open PATH even when its oplog is damaged: cut the log at the damage, copying "
                 "what is cut to PATH/salvage/ and listing the lost commits in PATH/repair.json");
    app.add_option("--sync", sync, "commit durability on PATH: none, write or fsync (default)")
        ->check(CLI::IsMember({"none", "write", "fsync"}));
    app.set_version_flag("--version", std::string("mvkv ") + buildStamp(),
                         "print the version, git revision and build type, and exit");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        int code = app.exit(e);
        return code == 0 ? 0 : 2;
    }
    if (!commands.empty() && !file.empty()) {
        fmt::print(stderr, "mvkv: give -c or -f, not both\n");
        return 2;
    }
    std::FILE* script = nullptr;
    if (!file.empty()) {
        std::error_code ec;
        if (std::filesystem::is_directory(file, ec)) {
            fmt::print(stderr, "mvkv: {} is a directory, not a command file\n", file);
            return 2;
        }
        script = std::fopen(file.c_str(), "rb");
        if (!script) {
            fmt::print(stderr, "mvkv: cannot open {}: {}\n", file, std::strerror(errno));
            return 2;
        }
    }

    // SIGINT goes to this thread only: every thread started from here on
    // (the engine's, the watcher) inherits it blocked, and this one unblocks
    // it once the handler is in place, so a Ctrl-C ends a read it waits in.
    sigset_t sigint;
    sigemptyset(&sigint);
    sigaddset(&sigint, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigint, nullptr);

    EngineOptions options;
    options.path = memory ? "" : path;  // empty: in memory
    options.repair = repair;
    options.syncMode = sync == "none"    ? SyncMode::kNone
                       : sync == "write" ? SyncMode::kWrite
                                         : SyncMode::kFsync;
    auto opened = Engine::open(options);
    if (!opened.ok()) {
        fmt::print(stderr, "mvkv: cannot open {}: {}: {}\n", memory ? "an in-memory engine" : path,
                   statusCodeName(opened.status().code()), opened.status().message());
        return 1;
    }
    std::unique_ptr<Engine> engine = std::move(opened).value();
    int status = 0;
    {
        tools::Shell shell(*engine);
        // The `tail` follower prints from its own thread: one printer, one lock.
        std::mutex printing;
        auto print = [&](const tools::Reply& r) {
            std::lock_guard lock(printing);
            tools::printReply(r, json, stdout, stderr);
        };
        shell.setSink(print);

        // Ctrl-C interrupts the running command, as killOp would; the shell stays.
        if (::pipe2(interruptPipe, O_CLOEXEC) != 0) {
            fmt::print(stderr, "mvkv: pipe: {}\n", std::strerror(errno));
            return 1;
        }
        const bool interactive = commands.empty() && !script && ::isatty(STDIN_FILENO);
        struct sigaction sa {};
        sa.sa_handler = onSigint;
        sigemptyset(&sa.sa_mask);
        // Reading a script or pipe, a Ctrl-C must also end a read that waits
        // for input (no restart); interactively libedit handles the prompt.
        sa.sa_flags = interactive ? SA_RESTART : 0;
        sigaction(SIGINT, &sa, nullptr);
        std::thread watcher([&] {
            char c;
            while (::read(interruptPipe[0], &c, 1) == 1 && c == 1)
                shell.interrupt();
        });
        pthread_sigmask(SIG_UNBLOCK, &sigint, nullptr);

        std::unique_ptr<tools::LineReader> reader;
        if (!commands.empty()) {
            reader = tools::textReader(commands);
        } else if (script) {
            reader = tools::streamReader(script);
        } else if (interactive) {
            std::vector<std::string> names;
            for (const auto& c : shell.commands().all())
                names.push_back(c.name);
            reader = tools::terminalReader(std::move(names), &sigints);
            fmt::print("mvkv shell on {}; type `help` for commands, Ctrl-D to leave\n",
                       memory ? "an in-memory engine" : path);
        } else {
            reader = tools::streamReader(stdin);
        }
        bool done = false;
        const uint64_t sigintsAtStart = sigints.load();
        while (!done) {
            // A script or pipe stops at Ctrl-C (as sqlite3's does); the
            // interactive shell only interrupts the running command.
            if (!interactive && sigints.load() != sigintsAtStart) {
                tools::Reply r = tools::Reply::error(
                    Status::Interrupted("interrupted (Ctrl-C): the rest of the input was not run"));
                r.session = shell.sessionName();
                print(r);
                status = 1;
                break;
            }
            if (!json) {  // background commands that ended since the last prompt
                tools::Reply notices;
                notices.lines = shell.takeNotices();
                if (!notices.lines.empty())
                    print(notices);
            }
            std::string prompt = fmt::format("{}:{}> ", tools::displayBytes(shell.db()),
                                             tools::displayBytes(shell.sessionName()));
            std::optional<std::string> line = reader->next(prompt);
            if (!line) {
                if (!interactive && sigints.load() != sigintsAtStart) {
                    tools::Reply r = tools::Reply::error(Status::Interrupted(
                        "interrupted (Ctrl-C): the rest of the input was not run"));
                    r.session = shell.sessionName();
                    print(r);
                    status = 1;
                } else if (!reader->error().ok()) {
                    tools::Reply r = tools::Reply::error(reader->error());
                    r.session = shell.sessionName();
                    print(r);
                    status = 1;
                }
                break;
            }
            if (reader->lastLineTooLong()) {
                tools::Reply r = tools::Reply::error(Status::InvalidArgument(fmt::format(
                    "a line of more than {} bytes was skipped (values are at most 16 MiB)",
                    tools::LineReader::kMaxLineBytes)));
                r.session = shell.sessionName();
                print(r);
                status = 1;
                if (bail)
                    break;
                continue;
            }
            auto split = tools::splitLine(*line);
            if (!split.ok()) {
                tools::Reply r = tools::Reply::error(split.status());
                r.session = shell.sessionName();
                print(r);
                status = 1;
                if (bail)
                    break;
                continue;
            }
            for (const tools::Command& cmd : split.value()) {
                if (!interactive && sigints.load() != sigintsAtStart)
                    break;  // reported at the top of the loop
                tools::Reply r = shell.execute(cmd);
                if (r.quit) {
                    if (json)  // one object per command, quit included
                        print(r);
                    done = true;
                    break;
                }
                print(r);
                if (!r.status.ok()) {
                    status = 1;
                    if (bail) {
                        done = true;
                        break;
                    }
                }
            }
        }
        // Background commands still running are stopped (as a closed
        // connection's operations are in MongoDB), then told of.
        shell.stopJobs();
        if (!json) {
            tools::Reply notices;
            notices.lines = shell.takeNotices();
            if (!notices.lines.empty())
                print(notices);
        }
        shell.stopTail();  // what the script's commands logged is printed first
        if (interactive)
            fmt::print("\n");
        char stop = 0;
        ssize_t ignored = ::write(interruptPipe[1], &stop, 1);
        (void)ignored;
        watcher.join();
    }
    // Closed here, not by the destructor, so that a failed final flush is
    // told and the exit status says so.
    if (Status s = engine->close(); !s.ok()) {
        fmt::print(stderr, "mvkv: closing {}: {}\n", memory ? "the in-memory engine" : path,
                   s.toString());
        status = 1;
    }
    if (script)
        std::fclose(script);
    return status;
}
