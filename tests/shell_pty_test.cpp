// The built `mvkv` shell (MVKV_SHELL, set by tests/meson.build) run
// interactively under a pseudo-terminal (forkpty), with HOME in a temp
// directory: the banner and prompt, typed commands, history recall with
// Up-arrow, Tab completion of a command name, Ctrl-C during a command (it is
// interrupted, the shell stays), Ctrl-D to leave (status 0), and
// ~/.mvkv_history afterwards.
// Reads wait up to several seconds for the expected text; nothing is timed.
#include <doctest/doctest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "tests/temp_dir.h"

using mvkv::testing::TempDir;
using namespace std::literals;

namespace {

/// The shell on the slave side of a pty; the test holds the master.
class Terminal {
  public:
    Terminal(const std::string& home, const std::string& dataPath) {
        const char* exe = std::getenv("MVKV_SHELL");
        REQUIRE_MESSAGE(exe != nullptr, "MVKV_SHELL (the built tools/mvkv) is not set");
        const std::string shell = exe;
        winsize ws{};
        ws.ws_row = 24;
        ws.ws_col = 100;
        pid_ = ::forkpty(&master_, nullptr, nullptr, &ws);
        REQUIRE(pid_ >= 0);
        if (pid_ == 0) {
            ::setenv("HOME", home.c_str(), 1);
            ::setenv("TERM", "xterm", 1);
            ::unsetenv("EDITRC");
            ::unsetenv("INPUTRC");
            ::execl(shell.c_str(), shell.c_str(), dataPath.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
    }
    ~Terminal() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            int st;
            ::waitpid(pid_, &st, 0);
        }
        if (master_ >= 0)
            ::close(master_);
    }
    Terminal(const Terminal&) = delete;
    Terminal& operator=(const Terminal&) = delete;

    /// Types `keys` once the line editor reads the terminal in raw mode.
    /// libedit prints the prompt first and turns canonical mode off only when
    /// it reads the first key: a key typed in between goes through the
    /// kernel's line discipline, which turns Ctrl-D (VEOF) into a NUL byte.
    /// So wait for that (the pty's termios is the state, not a timing guess).
    void type(std::string_view keys) {
        REQUIRE_MESSAGE(waitRawMode(), "the shell never put the terminal in raw mode");
        typeNow(keys);
    }

    /// Types `keys` at once (for Ctrl-C while a command runs, when the
    /// terminal is in cooked mode).
    void typeNow(std::string_view keys) {
        while (!keys.empty()) {
            ssize_t w = ::write(master_, keys.data(), keys.size());
            if (w < 0 && errno == EINTR)
                continue;
            REQUIRE(w > 0);
            keys.remove_prefix(static_cast<size_t>(w));
        }
    }

    /// Waits (up to `timeout`) until `text` appears in the output after the
    /// last match; true when it did. The search then continues after it.
    bool expect(std::string_view text, std::chrono::milliseconds timeout = 10s) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            size_t at = screen.find(text, cursor_);
            if (at != std::string::npos) {
                cursor_ = at + text.size();
                return true;
            }
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0 || eof_)
                return false;
            readSome(static_cast<int>(std::min<long>(left.count(), 500)));
        }
    }

    /// Reads to the end (EIO once the shell has exited) and returns the exit status.
    int waitExit(std::chrono::milliseconds timeout = 10s) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (!eof_ && std::chrono::steady_clock::now() < deadline)
            readSome(200);
        for (;;) {
            int st = 0;
            pid_t r = ::waitpid(pid_, &st, WNOHANG);
            REQUIRE(r >= 0);
            if (r == pid_) {
                pid_ = -1;
                if (WIFEXITED(st))
                    return WEXITSTATUS(st);
                return 1000 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
            }
            if (std::chrono::steady_clock::now() > deadline)
                return -1;  // still running
            ::usleep(10'000);
        }
    }

    std::string screen;  // every byte the shell wrote to the terminal

  private:
  public:
    /// Waits until the terminal is in raw mode (libedit reading keys) or,
    /// with raw false, in cooked mode (libedit returned the line: a command runs).
    bool waitRawMode(std::chrono::milliseconds timeout = 10s, bool raw = true) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            termios tio{};
            if (::tcgetattr(master_, &tio) == 0 && !(tio.c_lflag & ICANON) == raw)
                return true;
            if (std::chrono::steady_clock::now() > deadline)
                return false;
            readSome(5);  // keep draining output meanwhile
        }
    }

  private:

    void readSome(int timeoutMs) {
        pollfd p{master_, POLLIN, 0};
        int ready = ::poll(&p, 1, timeoutMs);
        if (ready <= 0)
            return;
        char buf[4096];
        ssize_t r = ::read(master_, buf, sizeof buf);
        if (r > 0)
            screen.append(buf, static_cast<size_t>(r));
        else if (r == 0 || (errno != EINTR && errno != EAGAIN))
            eof_ = true;  // EIO: the slave side is closed
    }

    pid_t pid_ = -1;
    int master_ = -1;
    size_t cursor_ = 0;
    bool eof_ = false;
};

/// Shows control bytes visibly, for failure messages.
std::string visible(const std::string& s) {
    std::string out;
    for (unsigned char c : s) {
        if (c == '\n')
            out += "\\n\n";
        else if (c < 0x20 || c == 0x7f)
            out += "^" + std::string(1, static_cast<char>(c ^ 0x40));
        else
            out += static_cast<char>(c);
    }
    return out;
}

/// libedit's history file: a "_HiStOrY_V2_" line, then one entry a line,
/// with spaces and other special bytes as \ooo octal escapes.
std::string decodeHistory(const std::string& raw) {
    std::string out;
    for (size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] == '\\' && i + 3 < raw.size() &&
            std::isdigit(static_cast<unsigned char>(raw[i + 1])) &&
            std::isdigit(static_cast<unsigned char>(raw[i + 2])) &&
            std::isdigit(static_cast<unsigned char>(raw[i + 3]))) {
            out += static_cast<char>((raw[i + 1] - '0') * 64 + (raw[i + 2] - '0') * 8 +
                                     (raw[i + 3] - '0'));
            i += 3;
        } else {
            out += raw[i];
        }
    }
    return out;
}

}  // namespace

TEST_CASE("interactive: prompt, history recall, Tab completion, Ctrl-D, ~/.mvkv_history") {
    TempDir home("mvkv-pty-home");
    TempDir data("mvkv-pty-data");
    Terminal t(home.path, data.path);
    INFO("screen so far:\n" << visible(t.screen));

    REQUIRE(t.expect("mvkv shell on " + data.path));
    REQUIRE(t.expect("test:main> "));

    t.type("create c\r");
    CHECK(t.expect("created test.c"));
    REQUIRE(t.expect("test:main> "));

    t.type("put c k v1\r");
    CHECK(t.expect("ok"));
    REQUIRE(t.expect("test:main> "));

    // Up-arrow recalls `put c k v1`; Enter runs it again.
    t.type("\x1b[A");
    CHECK(t.expect("put c k v1"));
    t.type("\r");
    CHECK(t.expect("ok"));
    REQUIRE(t.expect("test:main> "));

    t.type("get c k\r");
    CHECK(t.expect("v1"));
    REQUIRE(t.expect("test:main> "));
    // Two commits of the key: the recalled command did run.
    t.type("history c k\r");
    CHECK(t.expect("committed"));
    CHECK(t.expect("committed"));
    REQUIRE(t.expect("test:main> "));

    // Tab completes the command word `che` to `checkpoint`, which runs.
    // (libedit redraws from the cursor: "che", then "ckpoint " after it.)
    t.type("che\t");
    CHECK(t.expect("ckpoint"));
    t.type("\r");
    CHECK(t.expect("\r\ncheckpoint "));  // the output line: `checkpoint N at timestamp T: ...`
    CHECK(t.expect("at timestamp"));
    REQUIRE(t.expect("test:main> "));

    // The prompt follows the session.
    t.type("session s2\r");
    CHECK(t.expect("created and switched to session s2"));
    REQUIRE(t.expect("test:s2> "));

    t.type("count c\r");
    CHECK(t.expect("\r\n1\r\n"));
    REQUIRE(t.expect("test:s2> "));

    // Ctrl-D on an empty line leaves; every command succeeded: status 0.
    t.type("\x04");
    CHECK(t.waitExit() == 0);

    const std::string historyPath = home.path + "/.mvkv_history";
    REQUIRE(std::filesystem::exists(historyPath));
    std::ifstream f(historyPath, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string history = decodeHistory(ss.str());
    INFO("history file:\n" << history);
    for (const char* cmd : {"create c", "put c k v1", "get c k", "history c k", "checkpoint",
                            "session s2", "count c"})
        CHECK(history.find(cmd) != std::string::npos);
}

TEST_CASE("interactive: history from a previous run is recalled; an error makes the exit status 1") {
    TempDir home("mvkv-pty-home");
    TempDir data("mvkv-pty-data");
    {
        Terminal t(home.path, data.path);
        INFO("screen:\n" << visible(t.screen));
        REQUIRE(t.expect("test:main> "));
        t.type("create c; put c k v2\r");
        CHECK(t.expect("ok"));
        REQUIRE(t.expect("test:main> "));
        t.type("\x04");
        CHECK(t.waitExit() == 0);
    }
    {
        Terminal t(home.path, data.path);
        INFO("screen:\n" << visible(t.screen));
        REQUIRE(t.expect("test:main> "));
        t.type("get c k\r");
        CHECK(t.expect("v2"));  // durable across runs
        REQUIRE(t.expect("test:main> "));
        // Up twice: past `get c k` to the previous run's line.
        t.type("\x1b[A\x1b[A");
        CHECK(t.expect("create c; put c k v2"));
        t.type("\x15");  // Ctrl-U: clear the line instead of running it
        // An error goes to the terminal too, with its hint, and the shell stays.
        t.type("gett c k\r");
        CHECK(t.expect("error: InvalidArgument: unknown command gett"));
        CHECK(t.expect("hint: did you mean get"));
        REQUIRE(t.expect("test:main> "));
        t.type("get c k\r");
        CHECK(t.expect("v2"));
        REQUIRE(t.expect("test:main> "));
        t.type("\x04");
        CHECK(t.waitExit() == 1);  // a command failed
    }
}

TEST_CASE("interactive: Ctrl-C interrupts a command waiting for a lock; the shell stays") {
    TempDir home("mvkv-pty-home");
    TempDir data("mvkv-pty-data");
    Terminal t(home.path, data.path);
    INFO("screen:\n" << visible(t.screen));
    REQUIRE(t.expect("test:main> "));
    t.type("create c; session s2; begin; put c k v; session main\r");
    REQUIRE(t.expect("switched to session main"));
    REQUIRE(t.expect("test:main> "));
    t.type("set lock_timeout_ms 600000\r");
    REQUIRE(t.expect("test:main> "));
    t.type("drop c\r");
    REQUIRE(t.expect("drop c\r\n"));
    // libedit has returned the line once the terminal is back in cooked mode
    // (a Ctrl-C before that is the at-the-prompt case, the last test). One
    // that lands before the command starts is forgotten (shell.h), so press
    // it again until the wait is interrupted. The kernel sends the SIGINT.
    REQUIRE(t.waitRawMode(10s, false));
    bool interrupted = false;
    for (int i = 0; i < 20 && !interrupted; ++i) {
        t.typeNow("\x03");
        interrupted = t.expect("error: Interrupted: ", 1s);
    }
    REQUIRE(interrupted);
    CHECK(t.expect("hint: interrupted (Ctrl-C)"));
    REQUIRE(t.expect("test:main> "));
    t.type("show collections\r");
    CHECK(t.expect("\r\nc\r\n"));  // not dropped
    REQUIRE(t.expect("test:main> "));
    t.type("locks\r");
    CHECK(t.expect("s2:IX"));
    REQUIRE(t.expect("test:main> "));
    t.type("\x04");
    CHECK(t.waitExit() == 1);  // the drop failed
}

// libedit's readline gives up the line on Ctrl-C and returns NULL, as at
// Ctrl-D: the shell tells them apart by counting SIGINTs, and prompts again.
TEST_CASE("interactive: Ctrl-C at an empty prompt gives a new prompt; the shell stays") {
    TempDir home("mvkv-pty-home");
    TempDir data("mvkv-pty-data");
    Terminal t(home.path, data.path);
    INFO("screen:\n" << visible(t.screen));
    REQUIRE(t.expect("test:main> "));
    t.type("create c\r");
    REQUIRE(t.expect("test:main> "));
    t.type("\x03");
    REQUIRE(t.expect("test:main> ", 3s));
    t.type("count c\r");
    CHECK(t.expect("\r\n0\r\n", 3s));
    REQUIRE(t.expect("test:main> ", 3s));
    t.type("\x04");
    CHECK(t.waitExit(3s) == 0);
}
