// The built `mvkv` shell (MVKV_SHELL: its full path, set by tests/meson.build)
// run as a child process with -c, -f and stdin, in --json and human mode:
// stdout, stderr and the exit status are captured separately and checked.
// Covers issue 7's script tests: two sessions (a snapshot read, a write
// conflict), a timestamped history (chain and history store), the oplog, a
// lock timeout on drop, durability across runs and the refusal of a second
// shell on the same PATH, every bad-input case, --bail, bad invocations,
// binary and 1 MB input, quoting and the lossless JSON form of byte strings,
// and --version.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "tests/temp_dir.h"
#include "tests/version_check.h"

using json = nlohmann::json;
using mvkv::testing::TempDir;
using namespace std::literals;

namespace {

std::string shellPath() {
    const char* p = std::getenv("MVKV_SHELL");
    REQUIRE_MESSAGE(p != nullptr, "MVKV_SHELL (the built tools/mvkv) is not set: run via meson test");
    REQUIRE_MESSAGE(::access(p, X_OK) == 0, "MVKV_SHELL is not executable: " << std::string(p));
    return p;
}

std::vector<std::string> splitLines(const std::string& s) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start < s.size()) {
        size_t nl = s.find('\n', start);
        if (nl == std::string::npos) {
            out.push_back(s.substr(start));
            break;
        }
        out.push_back(s.substr(start, nl - start));
        start = nl + 1;
    }
    return out;
}

bool startsWith(std::string_view s, std::string_view prefix) {
    return s.substr(0, prefix.size()) == prefix;
}

std::vector<std::string> words(const std::string& line) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && line[i] == ' ')
            ++i;
        size_t j = i;
        while (j < line.size() && line[j] != ' ')
            ++j;
        if (j > i)
            out.push_back(line.substr(i, j - i));
        i = j;
    }
    return out;
}

struct Result {
    std::string out, err;
    bool exited = false;  // false: killed by a signal
    int code = -1;        // the exit status when exited
    int signal = 0;

    std::vector<std::string> outLines() const { return splitLines(out); }
    std::vector<std::string> errLines() const { return splitLines(err); }
    /// Every stdout line as a JSON object, each checked to have "cmd" and "session".
    std::vector<json> objects() const {
        std::vector<json> all;
        for (const std::string& line : outLines()) {
            json j = json::parse(line, nullptr, false);
            INFO("stdout line: " << line.substr(0, 300));
            REQUIRE_FALSE(j.is_discarded());
            REQUIRE(j.is_object());
            CHECK(j.contains("cmd"));
            CHECK(j.contains("session"));
            CHECK(j.contains("ok"));
            all.push_back(std::move(j));
        }
        return all;
    }
};

/// One running shell with its stdin, stdout and stderr on pipes.
class Child {
  public:
    explicit Child(const std::vector<std::string>& args) {
        static const bool ignored = [] {
            ::signal(SIGPIPE, SIG_IGN);  // a shell that exits before reading all input
            return true;
        }();
        (void)ignored;
        const std::string exe = shellPath();
        int in[2], outPipe[2], errPipe[2];
        REQUIRE(::pipe2(in, O_CLOEXEC) == 0);
        REQUIRE(::pipe2(outPipe, O_CLOEXEC) == 0);
        REQUIRE(::pipe2(errPipe, O_CLOEXEC) == 0);
        std::vector<std::string> argvStore;
        argvStore.push_back(exe);
        argvStore.insert(argvStore.end(), args.begin(), args.end());
        std::vector<char*> argv;
        for (std::string& a : argvStore)
            argv.push_back(a.data());
        argv.push_back(nullptr);
        pid_ = ::fork();
        REQUIRE(pid_ >= 0);
        if (pid_ == 0) {
            ::dup2(in[0], 0);
            ::dup2(outPipe[1], 1);
            ::dup2(errPipe[1], 2);
            ::execv(exe.c_str(), argv.data());
            ::_exit(127);
        }
        ::close(in[0]);
        ::close(outPipe[1]);
        ::close(errPipe[1]);
        in_ = in[1];
        // Non-blocking: a write never waits for the shell while it waits for us to read.
        REQUIRE(::fcntl(in_, F_SETFL, ::fcntl(in_, F_GETFL) | O_NONBLOCK) == 0);
        out_ = outPipe[0];
        err_ = errPipe[0];
    }
    ~Child() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            int st;
            ::waitpid(pid_, &st, 0);
        }
        closeFd(in_);
        closeFd(out_);
        closeFd(err_);
    }
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    pid_t pid() const { return pid_; }

    /// Queues bytes for the shell's stdin (written as it reads).
    void send(std::string_view bytes) { pending_.append(bytes); }

    /// The next stdout line (without '\n'), waiting up to `timeout` for it.
    std::optional<std::string> readLine(std::chrono::milliseconds timeout = 10s) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            size_t nl = out.find('\n', consumed_);
            if (nl != std::string::npos) {
                std::string line = out.substr(consumed_, nl - consumed_);
                consumed_ = nl + 1;
                return line;
            }
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0 || (out_ < 0 && err_ < 0))
                return std::nullopt;
            pump(static_cast<int>(std::min<long>(left.count(), 200)));
        }
    }

    /// Writes what is queued, closes stdin, reads stdout and stderr to their
    /// end and waits for the exit (killing the shell after `timeout`).
    Result finish(std::chrono::milliseconds timeout = 60s) {
        closeStdinWhenFlushed_ = true;
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (out_ >= 0 || err_ >= 0 || in_ >= 0) {
            if (std::chrono::steady_clock::now() > deadline) {
                FAIL_CHECK("the shell did not finish in time; killing it");
                ::kill(pid_, SIGKILL);
                break;
            }
            pump(200);
        }
        Result r;
        int st = 0;
        REQUIRE(::waitpid(pid_, &st, 0) == pid_);
        pid_ = -1;
        r.exited = WIFEXITED(st);
        r.code = r.exited ? WEXITSTATUS(st) : -1;
        r.signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
        r.out = std::move(out);
        r.err = std::move(err);
        return r;
    }

    std::string out, err;  // everything read so far

  private:
    static void closeFd(int& fd) {
        if (fd >= 0)
            ::close(fd);
        fd = -1;
    }
    void pump(int timeoutMs) {
        if (in_ >= 0 && pending_.empty() && closeStdinWhenFlushed_)
            closeFd(in_);
        pollfd fds[3];
        int n = 0;
        int inIdx = -1, outIdx = -1, errIdx = -1;
        if (in_ >= 0 && !pending_.empty()) {
            inIdx = n;
            fds[n++] = {in_, POLLOUT, 0};
        }
        if (out_ >= 0) {
            outIdx = n;
            fds[n++] = {out_, POLLIN, 0};
        }
        if (err_ >= 0) {
            errIdx = n;
            fds[n++] = {err_, POLLIN, 0};
        }
        if (n == 0)
            return;
        int ready = ::poll(fds, n, timeoutMs);
        if (ready < 0 && errno == EINTR)
            return;
        REQUIRE(ready >= 0);
        if (inIdx >= 0 && fds[inIdx].revents) {
            ssize_t w = ::write(in_, pending_.data(), std::min<size_t>(pending_.size(), 65536));
            if (w > 0)
                pending_.erase(0, static_cast<size_t>(w));
            else if (w < 0 && errno != EAGAIN && errno != EINTR) {
                pending_.clear();  // EPIPE: the shell stopped reading (--bail, quit)
                closeFd(in_);
            }
        }
        auto drain = [](int& fd, short revents, std::string& into) {
            if (!revents)
                return;
            char buf[65536];
            ssize_t r = ::read(fd, buf, sizeof buf);
            if (r > 0)
                into.append(buf, static_cast<size_t>(r));
            else if (r == 0 || (errno != EAGAIN && errno != EINTR))
                closeFd(fd);
        };
        if (outIdx >= 0)
            drain(out_, fds[outIdx].revents, out);
        if (errIdx >= 0)
            drain(err_, fds[errIdx].revents, err);
    }

    pid_t pid_ = -1;
    int in_ = -1, out_ = -1, err_ = -1;
    std::string pending_;
    bool closeStdinWhenFlushed_ = false;
    size_t consumed_ = 0;
};

Result run(const std::vector<std::string>& args, std::string_view input = {}) {
    Child c(args);
    c.send(input);
    Result r = c.finish();
    INFO("args: " << [&] {
        std::string s;
        for (const auto& a : args)
            s += (s.empty() ? "" : " ") + a.substr(0, 200);
        return s;
    }());
    INFO("stderr: " << r.err.substr(0, 2000));
    CHECK_MESSAGE(r.exited, "the shell died of signal " << r.signal);
    return r;
}

/// `mvkv PATH --json -c SCRIPT`.
Result json_c(const std::string& path, const std::string& script,
              std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {path, "--json", "-c", script};
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
}
/// `mvkv PATH -c SCRIPT` (human output).
Result human_c(const std::string& path, const std::string& script) {
    return run({path, "-c", script});
}

std::string writeFile(const std::string& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary);
    f << bytes;
    REQUIRE(f.good());
    return path;
}

/// The value `get COLL KEY` returns in a fresh run on `path` (JSON).
json getValue(const std::string& path, const std::string& coll, const std::string& key) {
    Result r = json_c(path, "get " + coll + " " + key);
    REQUIRE(r.code == 0);
    auto objs = r.objects();
    REQUIRE(objs.size() == 1);
    return objs[0]["found"] == true ? objs[0]["value"] : json(nullptr);
}

/// True when `lines` has each of `wanted` as a whole line, in that order.
bool hasLinesInOrder(const std::vector<std::string>& lines,
                     const std::vector<std::string>& wanted) {
    size_t w = 0;
    for (const auto& l : lines)
        if (w < wanted.size() && l == wanted[w])
            ++w;
    return w == wanted.size();
}


}  // namespace

TEST_CASE("two sessions: a snapshot read and a write conflict (--json)") {
    TempDir dir("mvkv-shell");
    Result r = json_c(dir.path,
                      "create c; put c k v0\n"
                      "session s2; begin; get c k\n"
                      "session main; put c k v1; get c k\n"
                      "session s2; get c k; commit; begin; get c k; commit\n"
                      "begin\n"
                      "session main; put c k v2\n"
                      "session s2; put c k x; sessions\n"
                      "get c k");
    CHECK(r.code == 1);  // the conflict
    CHECK(r.err.empty());
    auto o = r.objects();
    REQUIRE(o.size() == 21);
    CHECK(o[0]["cmd"] == "create");
    CHECK(o[0]["ns"] == "test.c");
    CHECK(o[1]["commitTs"].is_number());
    CHECK(o[2] == json::parse(R"({"cmd":"session","session":"s2","ok":true,"created":true})"));
    CHECK(o[3]["cmd"] == "begin");
    CHECK(o[3]["session"] == "s2");
    CHECK(o[3]["ok"] == true);
    CHECK(o[3].contains("readTs"));
    CHECK(o[4]["value"] == "v0");
    CHECK(o[5]["created"] == false);
    CHECK(o[5]["session"] == "main");
    CHECK(o[6]["session"] == "main");
    CHECK(o[6]["commitTs"].get<uint64_t>() > o[1]["commitTs"].get<uint64_t>());
    CHECK(o[7]["value"] == "v1");  // main sees its own commit
    // s2's snapshot predates main's write: still v0.
    CHECK(o[9]["session"] == "s2");
    CHECK(o[9]["found"] == true);
    CHECK(o[9]["value"] == "v0");
    CHECK(o[10]["cmd"] == "commit");
    CHECK(o[10]["ok"] == true);
    CHECK(o[10]["writes"] == 0);
    // A new snapshot sees the new value.
    CHECK(o[11]["cmd"] == "begin");
    CHECK(o[12]["value"] == "v1");
    CHECK(o[13]["cmd"] == "commit");
    // s2 begins; main overwrites; s2's write of the same key conflicts.
    CHECK(o[14]["cmd"] == "begin");
    CHECK(o[16]["ok"] == true);
    CHECK(o[16]["session"] == "main");
    const json& conflict = o[18];
    CHECK(conflict["cmd"] == "put");
    CHECK(conflict["session"] == "s2");
    CHECK(conflict["ok"] == false);
    CHECK(conflict["code"] == "WriteConflict");
    CHECK(conflict["error"].get<std::string>().find("test.c") != std::string::npos);
    CHECK_FALSE(conflict["hint"].get<std::string>().empty());
    CHECK_FALSE(conflict.contains("value"));
    // The conflict aborted s2's transaction; the key keeps main's value.
    CHECK(o[19]["cmd"] == "sessions");
    bool sawS2 = false;
    for (const json& s : o[19]["sessions"]) {
        if (s["name"] == "s2") {
            sawS2 = true;
            CHECK(s["current"] == true);
            CHECK(s["inTransaction"] == false);
        }
    }
    CHECK(sawS2);
    CHECK(o[20]["value"] == "v2");
    CHECK(getValue(dir.path, "c", "k") == "v2");
}

TEST_CASE("two sessions: a snapshot read and a write conflict (human)") {
    TempDir dir("mvkv-shell");
    Result r = human_c(dir.path,
                       "create c; put c k v0\n"
                       "session s2; begin; get c k\n"
                       "session main; put c k v1\n"
                       "session s2; get c k; commit; begin; get c k\n"
                       "session main; put c k v2\n"
                       "session s2; put c k x\n"
                       "session main; get c k");
    CHECK(r.code == 1);
    auto out = r.outLines();
    CHECK_MESSAGE(hasLinesInOrder(out,
                                  {"created test.c", "ok", "created and switched to session s2",
                                   "transaction begun, reading the newest commits", "v0",
                                   "switched to session main", "ok", "switched to session s2",
                                   "v0", "committed (read-only)",
                                   "transaction begun, reading the newest commits", "v1",
                                   "switched to session main", "ok", "switched to session s2",
                                   "switched to session main", "v2"}),
                  r.out);
    auto err = r.errLines();
    REQUIRE(err.size() == 2);
    CHECK(startsWith(err[0], "error: WriteConflict: "));
    CHECK(startsWith(err[1], "hint: "));
    CHECK(err[1].find("commit or abort") != std::string::npos);
}

TEST_CASE("a timestamped history: chain, then the history store under an old reader") {
    TempDir dir("mvkv-shell");
    Result r = json_c(dir.path,
                      "create c\n"
                      "begin; put c k a; commit commit_ts=10\n"
                      "begin; put c k b; commit commit_ts=20\n"
                      "history c k\n"
                      "session old; begin read_ts=10; get c k\n"
                      "session main; set stable 20; set oldest 20; gc\n"
                      "history c k\n"
                      "session old; get c k; commit\n"
                      "session main; get c k; history c nokey");
    CHECK(r.code == 0);
    CHECK(r.err.empty());
    auto o = r.objects();
    REQUIRE(o.size() == 22);
    CHECK(o[3]["cmd"] == "commit");
    CHECK(o[3]["commitTs"] == 10);
    CHECK(o[3]["writes"] == 1);
    CHECK(o[6]["commitTs"] == 20);
    auto checkVersion = [](const json& v, uint64_t start, uint64_t stop, const char* value,
                           const char* where) {
        CHECK(v["startTs"] == start);
        CHECK(v["stopTs"] == stop);
        CHECK(v["state"] == "committed");
        CHECK(v["deleted"] == false);
        CHECK(v["value"] == value);
        CHECK(v["where"] == where);
        CHECK(v["txnId"].is_number());
    };
    CHECK(o[7]["cmd"] == "history");
    const json& before = o[7]["versions"];
    REQUIRE(before.size() == 2);
    checkVersion(before[0], 20, 0, "b", "chain");  // newest first
    checkVersion(before[1], 10, 20, "a", "chain");
    CHECK(o[9]["readTs"] == 10);
    CHECK(o[10]["value"] == "a");
    CHECK(o[12] == json::parse(R"({"cmd":"set","session":"main","ok":true,"stable":20})"));
    CHECK(o[13] == json::parse(R"({"cmd":"set","session":"main","ok":true,"oldest":20})"));
    CHECK(o[14]["cmd"] == "gc");
    CHECK(o[14]["pinned"] == 10);  // the reader at 10 pins the old version
    CHECK(o[14]["versionsMoved"].get<uint64_t>() >= 1);
    const json& after = o[15]["versions"];
    REQUIRE(after.size() == 2);
    checkVersion(after[0], 20, 0, "b", "chain");
    checkVersion(after[1], 10, 20, "a", "history");
    CHECK(o[17]["session"] == "old");
    CHECK(o[17]["value"] == "a");  // the old reader still reads it, from the history store
    CHECK(o[20]["value"] == "b");
    CHECK(o[21]["versions"] == json::array());

    // Human: the same history as a table, "-" for no stop timestamp.
    Result h = human_c(dir.path, "history c k");
    CHECK(h.code == 0);
    auto lines = h.outLines();
    REQUIRE(lines.size() == 3);
    CHECK(words(lines[0]) ==
          std::vector<std::string>{"start", "stop", "txn", "state", "where", "value"});
    auto row0 = words(lines[1]), row1 = words(lines[2]);
    REQUIRE(row0.size() == 6);
    REQUIRE(row1.size() == 6);
    CHECK(row0[0] == "20");
    CHECK(row0[1] == "-");
    CHECK(row0[3] == "committed");
    CHECK(row0[5] == "b");
    CHECK(row1[0] == "10");
    CHECK(row1[1] == "20");
    CHECK(row1[3] == "committed");
    CHECK(row1[5] == "a");
}

TEST_CASE("an oplog listing: ops, timestamps, commands, from/limit/ns") {
    TempDir dir("mvkv-shell");
    Result r = json_c(dir.path,
                      "create c; insert c a 1; put c a 2; del c a\n"
                      "begin; put c b 1; put c b2 2; commit commit_ts=50\n"
                      "create d; put d x 1; drop d\n"
                      "oplog\n"
                      "oplog from=3 limit=3 ns=test.c\n"
                      "oplog ns=test.d\n"
                      "oplog from=1000");
    CHECK(r.code == 0);
    CHECK(r.err.empty());
    auto o = r.objects();
    REQUIRE(o.size() == 15);
    CHECK(o[1]["commitTs"] == 2);
    CHECK(o[7]["commitTs"] == 50);
    const json& all = o[11]["entries"];
    REQUIRE(all.size() == 9);
    struct E {
        uint64_t ts;
        const char* op;
        const char* ns;
        const char* keyOrCommand;
    };
    const E want[] = {{1, "c", "test.c", "create"}, {2, "i", "test.c", "a"},
                      {3, "u", "test.c", "a"},      {4, "d", "test.c", "a"},
                      {50, "i", "test.c", "b"},     {50, "i", "test.c", "b2"},
                      {51, "c", "test.d", "create"}, {52, "i", "test.d", "x"},
                      {53, "c", "test.d", "drop"}};
    for (size_t i = 0; i < 9; ++i) {
        INFO("entry " << i << ": " << all[i].dump());
        CHECK(all[i]["ts"] == want[i].ts);
        CHECK(all[i]["op"] == want[i].op);
        CHECK(all[i]["ns"] == want[i].ns);
        CHECK(all[i]["txnId"].is_number());
        if (std::string(want[i].op) == "c") {
            CHECK(all[i]["command"] == want[i].keyOrCommand);
            CHECK_FALSE(all[i].contains("key"));
        } else {
            CHECK(all[i]["key"] == want[i].keyOrCommand);
            CHECK(all[i].contains("value") == (std::string(want[i].op) != "d"));
        }
    }
    CHECK(all[1]["value"] == "1");
    CHECK(all[2]["value"] == "2");
    CHECK(all[4]["txnId"] == all[5]["txnId"]);  // one transaction
    const json& page = o[12]["entries"];
    REQUIRE(page.size() == 3);
    CHECK(page[0]["ts"] == 3);
    CHECK(page[1]["ts"] == 4);
    CHECK(page[2]["ts"] == 50);
    CHECK(page[2]["key"] == "b");
    const json& d = o[13]["entries"];
    REQUIRE(d.size() == 3);
    CHECK(d[0]["command"] == "create");
    CHECK(d[2]["command"] == "drop");
    for (const json& e : d)
        CHECK(e["ns"] == "test.d");
    CHECK(o[14]["entries"] == json::array());

    // Human: one line per entry; "(no entries)" when there are none.
    Result h = human_c(dir.path, "oplog limit=3; oplog from=1000");
    CHECK(h.code == 0);
    auto lines = h.outLines();
    REQUIRE(lines.size() == 4);
    CHECK(words(lines[0]) == std::vector<std::string>{"1", "c", "test.c", "create"});
    CHECK(words(lines[1]) == std::vector<std::string>{"2", "i", "test.c", "a", "=", "1"});
    CHECK(words(lines[2]) == std::vector<std::string>{"3", "u", "test.c", "a", "=", "2"});
    CHECK(lines[3] == "(no entries)");
    // Bad options.
    Result bad = json_c(dir.path, "oplog limit=x\noplog bogus\noplog ns=test.c from=-1");
    CHECK(bad.code == 1);
    auto b = bad.objects();
    REQUIRE(b.size() == 3);
    for (const json& j : b) {
        CHECK(j["ok"] == false);
        CHECK(j["code"] == "InvalidArgument");
    }
}

TEST_CASE("a read of a key another shell session has prepared conflicts at once; under bg it waits") {
    // Found by fuzz/shell_line: the get used to wait for a commit only the
    // shell's one thread could make, and the shell hung for good.
    TempDir dir("mvkv-shell");
    Result r = json_c(dir.path,
                      "create c; put c a 1\n"
                      "begin; put c a 2; prepare prepare_ts=5\n"
                      "session s2; get c a; scan c; count c\n"
                      "bg get c a\n"
                      "session main; commit commit_ts=6; wait 1");
    CHECK(r.code == 1);  // the three conflicts
    auto o = r.objects();
    REQUIRE(o.size() == 13);
    for (int i : {6, 7, 8}) {
        CHECK(o[i]["ok"] == false);
        CHECK(o[i]["code"] == "PrepareConflict");
    }
    CHECK(o[11]["cmd"] == "commit");
    CHECK(o[11]["ok"] == true);
    // `wait` prints the background get's reply: it waited for the commit.
    CHECK(o[12] == json::parse(R"({"cmd":"get","session":"s2","ok":true,"found":true,"value":"2"})"));
}

TEST_CASE("a lock timeout: a session holds IX on the collection, another drops it") {
    TempDir dir("mvkv-shell");
    Result r = json_c(dir.path,
                      "create c\n"
                      "session s2; begin; put c k v\n"
                      "session main; set lock_timeout_ms 100; drop c\n"
                      "show collections; locks\n"
                      "session s2; commit; get c k");
    CHECK(r.code == 1);
    CHECK(r.err.empty());
    auto o = r.objects();
    REQUIRE(o.size() == 12);
    CHECK(o[5] == json::parse(R"({"cmd":"set","session":"main","ok":true,"lock_timeout_ms":100})"));
    const json& drop = o[6];
    CHECK(drop["cmd"] == "drop");
    CHECK(drop["session"] == "main");
    CHECK(drop["ok"] == false);
    CHECK(drop["code"] == "LockTimeout");
    CHECK(drop["error"].get<std::string>().find("test.c") != std::string::npos);
    CHECK(drop["hint"].get<std::string>().find("locks") != std::string::npos);
    CHECK(o[7]["collections"] == json::array({"c"}));  // still there
    CHECK(o[8]["cmd"] == "locks");
    bool held = false;
    for (const json& l : o[8]["locks"]) {
        if (l["resource"] != "test.c")
            continue;
        for (const json& g : l["granted"])
            if (g["session"] == "s2" && g["mode"] == "IX")
                held = true;
        CHECK(l["waiting"] == json::array());  // main gave up
    }
    CHECK_MESSAGE(held, o[8].dump());
    CHECK(o[10]["commitTs"].is_number());
    CHECK(o[11]["value"] == "v");

    // Human: the error on stderr, the lock table on stdout.
    Result h = human_c(dir.path,
                       "session s2; begin; put c k2 v\n"
                       "session main; set lock_timeout_ms 100; drop c; locks");
    CHECK(h.code == 1);
    auto err = h.errLines();
    REQUIRE(err.size() == 2);
    CHECK(startsWith(err[0], "error: LockTimeout: "));
    CHECK(startsWith(err[1], "hint: "));
    bool line = false;
    for (const auto& l : h.outLines()) {
        auto w = words(l);
        if (!w.empty() && w[0] == "test.c")
            line = l.find("s2:IX") != std::string::npos;
    }
    CHECK_MESSAGE(line, h.out);
    Result after = json_c(dir.path, "show collections; count c");
    CHECK(after.code == 0);
    auto a = after.objects();
    REQUIRE(a.size() == 2);
    CHECK(a[0]["collections"] == json::array({"c"}));
    CHECK(a[1]["count"] == 1);  // k2 was never committed
}

TEST_CASE("durability across two runs on the same PATH; a second shell on it is refused") {
    TempDir dir("mvkv-shell");
    const std::string path = dir.path + "/data";  // created on first use
    Result w = human_c(path,
                       "create c; put c a 1; insert c b \"two words\"\n"
                       "begin; put c t1 x; put c t2 y; commit\n"
                       "begin; put c gone z; abort\n"
                       "use other; create o; put o k v");
    CHECK(w.code == 0);
    CHECK(w.err.empty());
    CHECK(std::filesystem::is_directory(path));

    Result r = json_c(path, "scan c; use other; get o k; show dbs");
    CHECK(r.code == 0);
    auto o = r.objects();
    REQUIRE(o.size() == 4);
    CHECK(o[0]["items"] == json::parse(R"([{"key":"a","value":"1"},{"key":"b","value":"two words"},
                                           {"key":"t1","value":"x"},{"key":"t2","value":"y"}])"));
    CHECK(o[2]["value"] == "v");
    CHECK(o[3]["dbs"] == json::array({"other", "test"}));

    // One shell holds PATH open (reading from a pipe kept open); another is refused.
    Child first({path, "--json"});
    first.send("put c c 3\n");
    auto line = first.readLine();
    REQUIRE(line);
    CHECK(json::parse(*line)["ok"] == true);
    Result second = run({path, "-c", "get c a"});
    CHECK(second.exited);
    CHECK(second.code == 1);
    CHECK(second.out.empty());
    auto err = second.errLines();
    REQUIRE(err.size() == 1);
    CHECK(startsWith(err[0], "mvkv: cannot open " + path));
    CHECK(err[0].find("in use") != std::string::npos);
    // The first shell goes on and exits cleanly.
    first.send("get c c\n");
    Result firstDone = first.finish();
    CHECK(firstDone.exited);
    CHECK(firstDone.code == 0);
    CHECK(firstDone.err.empty());
    auto fo = firstDone.objects();
    REQUIRE(fo.size() == 2);
    CHECK(fo[1]["value"] == "3");
    // Now it can be opened again, and sees the last write.
    CHECK(getValue(path, "c", "c") == "3");
}

TEST_CASE("issue 15: an empty key and value survive a reopen, and so does their delete") {
    // Once written and acknowledged, then refused by every open as
    // Corruption ("entry count 1 does not fit in 32 bytes").
    TempDir dir("mvkv-shell");
    const std::string path = dir.path + "/d1";
    Result w = human_c(path, "use a; create b; put b \"\" \"\"");
    CHECK(w.code == 0);
    CHECK(w.err.empty());

    Result r = json_c(path, "use a; scan b");
    CHECK(r.code == 0);
    CHECK(r.err.empty());
    auto o = r.objects();
    REQUIRE(o.size() == 2);
    CHECK(o[1]["ok"] == true);
    CHECK(o[1]["items"] == json::parse(R"([{"key":"","value":""}])"));

    Result d = human_c(path, "use a; del b \"\"");
    CHECK(d.code == 0);
    CHECK(d.err.empty());
    Result after = json_c(path, "use a; scan b; get b \"\"; oplog ns=a.b");
    CHECK(after.code == 0);
    CHECK(after.err.empty());
    auto a = after.objects();
    REQUIRE(a.size() == 4);
    CHECK(a[1]["items"] == json::array());
    CHECK(a[2]["found"] == false);
    const json& entries = a[3]["entries"];
    REQUIRE(entries.size() == 3);
    CHECK(entries[0]["op"] == "c");
    CHECK(entries[1]["op"] == "i");  // the key did not exist
    CHECK(entries[1]["key"] == "");
    CHECK(entries[1]["value"] == "");
    CHECK(entries[2]["op"] == "d");
    CHECK(entries[2]["key"] == "");

    // A put after the delete creates the key again (i); the next replaces it (u).
    Result again = human_c(path, "use a; put b \"\" x; put b \"\" y; oplog ns=a.b");
    CHECK(again.code == 0);
    CHECK(again.err.empty());
    std::vector<std::string> ops;
    for (const std::string& line : again.outLines()) {
        auto cols = words(line);
        if (cols.size() >= 3 && cols[2] == "a.b")
            ops.push_back(cols[1]);
    }
    CHECK(ops == std::vector<std::string>{"c", "i", "d", "i", "u"});
}

TEST_CASE("issue 15: a damaged oplog is refused; --repair cuts it, lists the loss, and says so until `repair clear`") {
    TempDir dir("mvkv-shell");
    const std::string path = dir.path + "/d";
    // Two runs, two segments: k1..k3 in the first, k4 in the second.
    REQUIRE(human_c(path, "use a; create b; put b k1 v1; put b k2 v2; put b k3 v3").code == 0);
    REQUIRE(human_c(path, "use a; put b k4 v4").code == 0);
    // One byte flipped inside the first segment's last record (k3's put).
    const std::string first = path + "/log-0000000000000001.mvkvlog";
    std::string bytes;
    {
        std::ifstream in(first, std::ios::binary);
        bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    REQUIRE(bytes.size() > 10);
    bytes[bytes.size() - 4] ^= 0x01;
    writeFile(first, bytes);

    Result refused = json_c(path, "use a; scan b");
    CHECK(refused.code == 1);
    CHECK(refused.out.empty());
    CHECK(refused.err.find("Corruption") != std::string::npos);
    CHECK(refused.err.find("log-0000000000000001.mvkvlog") != std::string::npos);
    CHECK(refused.err.find("--repair") != std::string::npos);
    CHECK(std::filesystem::file_size(first) == bytes.size());  // nothing changed

    Result repaired = json_c(path, "use a; scan b; status recovery", {"--repair"});
    CHECK(repaired.code == 0);
    CHECK(repaired.err.find("REPAIRED") != std::string::npos);
    auto o = repaired.objects();
    REQUIRE(o.size() == 3);
    CHECK(o[1]["items"] == json::parse(R"([{"key":"k1","value":"v1"},{"key":"k2","value":"v2"}])"));
    const json& rec = o[2]["status"];
    CHECK(rec["repaired"] == true);
    CHECK(rec["damage"] == "corruption");
    REQUIRE(rec["repairs"].size() == 1);
    // k4's commit, past the damage, is listed; k3's record is the damaged one.
    const json& lost = rec["repairs"][0]["lostCommits"];
    REQUIRE(lost.size() == 1);
    CHECK(lost[0]["entries"][0]["key"] == "k4");
    CHECK(std::filesystem::is_directory(rec["salvageDir"].get<std::string>()));

    Result later = json_c(path, "use a; repair");
    CHECK(later.code == 0);
    CHECK(later.err.find("repaired (1 time)") != std::string::npos);
    auto l = later.objects();
    REQUIRE(l.size() == 2);
    CHECK(l[1]["repairs"].size() == 1);

    Result cleared = json_c(path, "repair clear");
    CHECK(cleared.code == 0);
    CHECK(cleared.objects()[0]["cleared"] == 1);
    Result quiet = json_c(path, "use a; scan b; status recovery");
    CHECK(quiet.code == 0);
    CHECK(quiet.err.empty());
    auto q = quiet.objects();
    REQUIRE(q.size() == 3);
    CHECK(q[2]["status"]["repairs"] == json::array());
    CHECK(q[2]["status"]["damage"] == "none");
}

TEST_CASE("-c, -f FILE and stdin; `;` between commands; quotes with \\\" and \\\\") {
    TempDir dir("mvkv-shell");
    // The value: say "hi"; back\slash  (a quote, a ';' and a backslash).
    const std::string value = "say \"hi\"; back\\slash";
    const std::string script =
        "create c; put c q \"say \\\"hi\\\"; back\\\\slash\"; get c q\n"
        "put c \"k;2\" \"a;b\"; get c \"k;2\"; put c \"\" empty; get c \"\"\n"
        "# a comment line; put c never x\n"
        "PUT c Upper V; GET c Upper\n";
    Result c = json_c(dir.path, script);
    CHECK(c.code == 0);
    CHECK(c.err.empty());
    auto o = c.objects();
    REQUIRE(o.size() == 9);
    CHECK(o[1]["key"] == "q");
    CHECK(o[2]["value"] == value);
    CHECK(o[3]["key"] == "k;2");
    CHECK(o[4]["value"] == "a;b");
    CHECK(o[6]["value"] == "empty");
    CHECK(o[7]["cmd"] == "put");  // command words are case-insensitive
    CHECK(o[8]["cmd"] == "get");
    CHECK(o[8]["value"] == "V");

    // The same commands from a file and from stdin give the same output.
    TempDir dir2("mvkv-shell"), dir3("mvkv-shell");
    const std::string file = writeFile(dir.path + "/script.txt", script);
    Result f = run({dir2.path, "--json", "-f", file});
    CHECK(f.code == 0);
    CHECK(f.out == c.out);
    Result s = run({dir3.path, "--json"}, script);
    CHECK(s.code == 0);
    CHECK(s.out == c.out);
    // CRLF line ends from stdin.
    Result crlf = run({dir3.path, "--json"}, "get c q\r\nget c Upper\r\n");
    CHECK(crlf.code == 0);
    auto co = crlf.objects();
    REQUIRE(co.size() == 2);
    CHECK(co[0]["value"] == value);
    CHECK(co[1]["value"] == "V");
    CHECK(getValue(dir3.path, "c", "never").is_null());

    // Human: a value with a quote, space or ';' is shown quoted, as the tokenizer reads it.
    Result h = human_c(dir.path, "get c q; get c Upper; scan c k k~");
    CHECK(h.code == 0);
    auto lines = h.outLines();
    REQUIRE(lines.size() == 6);
    CHECK(lines[0] == "\"say \\\"hi\\\"; back\\\\slash\"");
    CHECK(lines[1] == "V");
    CHECK(words(lines[2]) == std::vector<std::string>{"key", "value"});
    CHECK(words(lines[4]) == std::vector<std::string>{"\"k;2\"", "\"a;b\""});
    CHECK(lines[5] == "(1 item)");
    // What human output shows reads back as the same bytes.
    Result back = json_c(dir.path, "put c copy " + lines[0] + "; get c copy");
    CHECK(back.code == 0);
    auto bo = back.objects();
    REQUIRE(bo.size() == 2);
    CHECK(bo[1]["value"] == value);
}

TEST_CASE("byte strings: non-UTF-8 is {$binary} in --json, NUL survives, human shows escapes") {
    TempDir dir("mvkv-shell");
    const std::string input =
        "create c\n"
        "put c bin \xff\xfe\x01\n"
        "get c bin\n"
        "put c \xc3\x28 x\n"  // an invalid UTF-8 key
        "put c nul a\0b\n"s
        "get c nul\n"
        "put c utf \xc3\xa9t\xc3\xa9\n"
        "get c utf\n"
        "scan c bin bin\n";
    Result r = run({dir.path, "--json"}, input);
    CHECK(r.code == 0);
    auto o = r.objects();
    REQUIRE(o.size() == 9);
    const json bin = json::parse(R"({"$binary":{"base64":"//4B","subType":"00"}})");
    CHECK(o[2]["value"] == bin);
    CHECK(o[3]["key"] == json::parse(R"({"$binary":{"base64":"wyg=","subType":"00"}})"));
    CHECK(o[5]["value"] == "a\0b"s);  // valid UTF-8: a JSON string with \u0000
    CHECK(o[7]["value"] == "\xc3\xa9t\xc3\xa9");
    CHECK(o[8]["items"] == json::array({{{"key", "bin"}, {"value", bin}}}));

    Result h = run({dir.path}, "get c bin\nget c nul\nget c utf\n");
    CHECK(h.code == 0);
    CHECK(h.outLines() ==
          std::vector<std::string>{"\"\\xff\\xfe\\x01\"", "\"a\\x00b\"", "\xc3\xa9t\xc3\xa9"});
}

TEST_CASE("bad input: one error each, exit status 1, the data untouched") {
    TempDir dir("mvkv-shell");
    Result setup = human_c(dir.path, "create c; put c k orig");
    REQUIRE(setup.code == 0);
    const std::string bigDir = dir.path;

    struct Case {
        std::string name;
        std::string command;  // one line, given by -f FILE when long
        std::string code;     // the JSON code
        std::string inError;  // in the error message
        std::string inHint;   // in the hint ("" : no check)
    };
    const std::vector<Case> cases = {
        {"unknown command, near miss", "gett c k", "InvalidArgument", "unknown command gett",
         "did you mean get"},
        {"unknown command", "frobnicate c k", "InvalidArgument", "unknown command frobnicate",
         "help"},
        {"missing argument", "put c k", "InvalidArgument", "usage: put COLL KEY VALUE", ""},
        {"extra argument", "get c k extra", "InvalidArgument", "usage: get COLL KEY", ""},
        {"missing arguments to set", "set oldest", "InvalidArgument", "usage: set ", ""},
        {"bad number: set oldest abc", "set oldest abc", "InvalidArgument", "not abc", ""},
        {"bad number: begin read_ts=-1", "begin read_ts=-1", "InvalidArgument", "not -1", ""},
        {"bad number: scan c limit x", "scan c limit x", "InvalidArgument", "not x", ""},
        {"bad number: too large", "set stable 18446744073709551616", "InvalidArgument",
         "whole number", ""},
        {"bad number: commit_ts", "commit commit_ts=1x", "InvalidArgument", "not 1x", ""},
        {"unterminated quote", "put c k \"orig2", "InvalidArgument", "unterminated quote", ""},
        {"unknown escape", "put c k \"a\\qb\"", "InvalidArgument", "unknown escape", ""},
        {"key over 4 KiB", "put c " + std::string(4097, 'k') + " v", "InvalidArgument",
         "4096", ""},
        {"value over 16 MiB", "put c k " + std::string(16 * 1024 * 1024 + 1, 'v'),
         "InvalidArgument", "16777216", ""},
        {"get on a missing collection", "get nope k", "NamespaceNotFound", "test.nope",
         "create"},
        {"put on a missing collection", "put nope k v", "NamespaceNotFound", "test.nope",
         "create"},
        {"scan on a missing collection", "scan nope", "NamespaceNotFound", "test.nope", ""},
        {"commit outside a transaction", "commit", "IllegalOperation", "no transaction", ""},
        {"abort outside a transaction", "abort", "IllegalOperation", "no transaction", ""},
        {"insert of an existing key", "insert c k other", "DuplicateKey", "", ""},
        {"bad session name", "session \"a b\"", "InvalidArgument", "session name", ""},
        {"set what?", "set bogus 1", "InvalidArgument", "usage: set", ""},
    };
    int fileNo = 0;
    for (const Case& cs : cases) {
        CAPTURE(cs.name);
        const bool viaFile = cs.command.size() > 1000;
        // JSON: the bad command gives one object; the next line still runs.
        std::vector<std::string> args = {dir.path, "--json"};
        std::string script = cs.command + "\nget c k\nshow collections\n";
        if (viaFile) {
            args.push_back("-f");
            args.push_back(writeFile(bigDir + "/in" + std::to_string(fileNo++) + ".txt", script));
        } else {
            args.push_back("-c");
            args.push_back(script);
        }
        Result j = run(args);
        CHECK(j.exited);
        CHECK(j.code == 1);
        CHECK(j.err.empty());
        auto o = j.objects();
        REQUIRE(o.size() == 3);
        CHECK(o[0]["ok"] == false);
        CHECK(o[0]["code"] == cs.code);
        CHECK(o[0]["error"].get<std::string>().find(cs.inError) != std::string::npos);
        CHECK(o[0]["error"].get<std::string>().size() < 1000);  // never the whole input back
        if (!cs.inHint.empty()) {
            REQUIRE(o[0].contains("hint"));
            CHECK(o[0]["hint"].get<std::string>().find(cs.inHint) != std::string::npos);
        }
        CHECK(o[1]["cmd"] == "get");
        CHECK(o[1]["value"] == "orig");
        CHECK(o[2]["collections"] == json::array({"c"}));
    }
    // Human, all the cases in one run (one line each, from a file): each gives
    // exactly one error line, maybe followed by one hint line, on stderr;
    // nothing on stdout. (Not the 16 MiB value: slow to read again under ASan.)
    std::string all;
    std::vector<const Case*> human;
    for (const Case& cs : cases) {
        if (cs.command.size() > 16 * 1024 * 1024)
            continue;
        all += cs.command + "\n";
        human.push_back(&cs);
    }
    Result h = run({dir.path, "-f", writeFile(bigDir + "/human.txt", all)});
    CHECK(h.code == 1);
    CHECK(h.out.empty());
    auto err = h.errLines();
    size_t line = 0;
    for (const Case* cs : human) {
        CAPTURE(cs->name);
        REQUIRE(line < err.size());
        CHECK(startsWith(err[line], "error: " + cs->code + ": "));
        CHECK(err[line].find(cs->inError) != std::string::npos);
        CHECK(err[line].size() < 1000);
        ++line;
        if (line < err.size() && startsWith(err[line], "hint: ")) {
            if (!cs->inHint.empty())
                CHECK(err[line].find(cs->inHint) != std::string::npos);
            ++line;
        } else {
            CHECK(cs->inHint.empty());
        }
    }
    CHECK(line == err.size());
    CHECK(getValue(dir.path, "c", "k") == "orig");
}

TEST_CASE("bad input: a second begin: an error, and the first transaction goes on") {
    TempDir dir("mvkv-shell");
    REQUIRE(human_c(dir.path, "create c; put c k orig").code == 0);
    Result r = json_c(dir.path, "begin; begin; sessions; put c k inside; abort; get c k");
    CHECK(r.code == 1);
    auto o = r.objects();
    REQUIRE(o.size() == 6);
    CHECK(o[0]["ok"] == true);
    CHECK(o[1]["ok"] == false);
    CHECK(o[1]["code"] == "IllegalOperation");
    CHECK(o[1]["error"].get<std::string>().find("already") != std::string::npos);
    CHECK(o[2]["sessions"][0]["inTransaction"] == true);
    CHECK(o[3]["ok"] == true);
    CHECK(o[4]["ok"] == true);
    CHECK(o[5]["value"] == "orig");
    Result h = human_c(dir.path, "begin; begin; abort");
    CHECK(h.code == 1);
    auto err = h.errLines();
    REQUIRE(err.size() == 1);
    CHECK(startsWith(err[0], "error: IllegalOperation: "));
    CHECK(h.outLines() ==
          std::vector<std::string>{"transaction begun, reading the newest commits", "aborted"});
}

TEST_CASE("bad input: a failed commit (commit_ts not after the newest) leaves the data as it was") {
    TempDir dir("mvkv-shell");
    REQUIRE(human_c(dir.path, "create c; put c k orig").code == 0);
    Result r = json_c(dir.path, "begin; put c k new; commit commit_ts=1; get c k");
    CHECK(r.code == 1);
    auto o = r.objects();
    REQUIRE(o.size() == 4);
    CHECK(o[2]["ok"] == false);
    CHECK(o[2]["code"] == "InvalidArgument");
    CHECK(o[3]["value"] == "orig");
}

TEST_CASE("bad input: an unterminated quote drops the whole line, `;`-separated commands included") {
    TempDir dir("mvkv-shell");
    REQUIRE(human_c(dir.path, "create c; put c k orig").code == 0);
    Result r = json_c(dir.path, "put c k one; put c k \"two\nget c k");
    CHECK(r.code == 1);
    auto o = r.objects();
    REQUIRE(o.size() == 2);
    CHECK(o[0]["ok"] == false);
    CHECK(o[0]["code"] == "InvalidArgument");
    CHECK(o[1]["value"] == "orig");
}

TEST_CASE("--bail stops at the first failure; without it the script goes on") {
    TempDir dir("mvkv-shell");
    REQUIRE(human_c(dir.path, "create c; put c k A").code == 0);
    Result b = json_c(dir.path, "put c k B\ngett c k\nput c k C", {"--bail"});
    CHECK(b.code == 1);
    auto o = b.objects();
    REQUIRE(o.size() == 2);
    CHECK(o[0]["ok"] == true);
    CHECK(o[1]["ok"] == false);
    CHECK(getValue(dir.path, "c", "k") == "B");
    // `;`-separated commands on one line too, and a line that does not tokenize.
    Result b2 = human_c(dir.path, "put c k D; get nope k; put c k E");
    CHECK(b2.code == 1);
    CHECK(getValue(dir.path, "c", "k") == "E");
    Result b3 = run({dir.path, "--bail", "-c", "put c k F; get nope k; put c k G"});
    CHECK(b3.code == 1);
    CHECK(b3.out == "ok\n");
    CHECK(getValue(dir.path, "c", "k") == "F");
    Result b4 = run({dir.path, "--bail", "--json"}, "put c k \"H\nput c k I\n");
    CHECK(b4.code == 1);
    REQUIRE(b4.objects().size() == 1);
    CHECK(getValue(dir.path, "c", "k") == "F");
    // quit stops the script; the status reflects what ran before.
    Result q = json_c(dir.path, "get c k; quit; put c k J");
    CHECK(q.code == 0);
    CHECK(q.objects().size() == 2);  // get and quit
    CHECK(getValue(dir.path, "c", "k") == "F");
}

TEST_CASE("bad invocation exits 2") {
    TempDir dir("mvkv-shell");
    const std::string path = dir.path + "/data";
    const std::string file = writeFile(dir.path + "/s.txt", "ts\n");
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{path, "--sync", "bogus", "-c", "ts"},
          std::vector<std::string>{path, "--no-such-flag", "-c", "ts"},
          std::vector<std::string>{path, "-c", "ts", "-f", file},
          std::vector<std::string>{path, "-f", dir.path + "/missing.txt"},
          std::vector<std::string>{path, "extra-positional", "-c", "ts"}}) {
        CAPTURE(args[1]);
        Result r = run(args);
        CHECK(r.exited);
        CHECK(r.code == 2);
        CHECK(r.out.empty());
        CHECK_FALSE(r.err.empty());
        CHECK_FALSE(std::filesystem::exists(path));  // nothing opened
    }
    // The good forms of the same.
    for (const char* sync : {"none", "write", "fsync"}) {
        Result r = run({path, "--sync", sync, "-f", file});
        CHECK(r.code == 0);
    }
    Result mem = run({"--memory", "--json", "-c", "create c; put c k v; get c k"});
    CHECK(mem.code == 0);
    REQUIRE(mem.objects().size() == 3);
}

TEST_CASE("--version prints the version, git revision and build type, and exits 0") {
    TempDir dir("mvkv-shell");
    const std::string path = dir.path + "/data";
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"--version"}, std::vector<std::string>{path, "--version"}}) {
        CAPTURE(args.size());
        Result r = run(args);
        CHECK(r.exited);
        CHECK(r.code == 0);
        CHECK(r.err.empty());
        mvkv::testing::checkVersionOutput("mvkv", r.out);
        CHECK_FALSE(std::filesystem::exists(path));  // nothing opened
    }
}

TEST_CASE("binary input and very long lines do not crash the shell") {
    TempDir dir("mvkv-shell");
    REQUIRE(human_c(dir.path, "create c; put c k orig").code == 0);
    std::mt19937 rng(7);  // fixed: the same bytes every run
    std::string garbage;
    for (int i = 0; i < 64 * 1024; ++i)
        garbage.push_back(static_cast<char>(rng() & 0xff));
    garbage += "\0\xff\xfe\"\\;\n\0\0\n\xff\n"s;
    for (bool jsonMode : {false, true}) {
        CAPTURE(jsonMode);
        std::vector<std::string> args = {dir.path};
        if (jsonMode)
            args.push_back("--json");
        Result r = run(args, garbage);
        CHECK(r.exited);
        CHECK((r.code == 0 || r.code == 1));
        if (jsonMode)
            r.objects();  // every line one valid JSON object, invalid bytes replaced
    }
    // A 1 MB value on one line round-trips; a 1 MB unknown word is one short error.
    const std::string big(1 << 20, 'x');
    // The last line has no newline.
    Result r = run({dir.path, "--json"}, "put c big " + big + "\nget c big\n" + big + "\ncount c");
    CHECK(r.exited);
    CHECK(r.code == 1);
    auto o = r.objects();
    REQUIRE(o.size() == 4);
    CHECK(o[0]["ok"] == true);
    CHECK(o[1]["value"] == big);
    CHECK(o[2]["ok"] == false);
    CHECK(o[2]["code"] == "InvalidArgument");
    CHECK(o[2]["error"].get<std::string>().size() < 200);
    CHECK(o[3]["count"] == 2);
    // Human mode on a 1 MB quoted line, unterminated.
    Result h = run({dir.path}, "put c k \"" + big);
    CHECK(h.exited);
    CHECK(h.code == 1);
    CHECK(h.errLines().size() == 1);
    CHECK(getValue(dir.path, "c", "k") == "orig");
}

TEST_CASE("--json: every command's object has cmd and session") {
    TempDir dir("mvkv-shell");
    Result r = json_c(dir.path,
                      "help; help get; create c; show dbs; show collections; use test; put c a 1; "
                      "insert c b 2; update c b 3; del c a; get c b; scan c; scan c a z reverse "
                      "limit 1; count c; begin; commit; begin read_ts=0 roundup; abort; session "
                      "x; sessions; session main; ts; set retry_ms 10; history c b; gc; "
                      "checkpoint; oplog limit=1; locks; status; status history; status nope; "
                      "drop c; create d; dropdb test");
    CHECK(r.code == 1);  // status nope
    auto o = r.objects();
    REQUIRE(o.size() == 34);
    const char* cmds[] = {"help",     "help",    "create",  "show",  "show",   "use",
                          "put",      "insert",  "update",  "del",   "get",    "scan",
                          "scan",     "count",   "begin",   "commit", "begin", "abort",
                          "session",  "sessions", "session", "ts",   "set",    "history",
                          "gc",       "checkpoint", "oplog", "locks", "status", "status",
                          "status",   "drop",    "create", "dropdb"};
    for (size_t i = 0; i < o.size(); ++i) {
        INFO(o[i].dump().substr(0, 300));
        CHECK(o[i]["cmd"] == cmds[i]);
        CHECK(o[i]["session"] == (i == 18 || i == 19 ? "x" : "main"));
        CHECK(o[i]["ok"] == (i != 30));
    }
    CHECK(o[1]["usage"] == "get COLL KEY");
    CHECK(o[12]["items"] == json::parse(R"([{"key":"b","value":"3"}])"));
    CHECK(o[13]["count"] == 1);
    CHECK(o[15]["commitTs"].is_null());
    CHECK(o[15]["writes"] == 0);
    for (const char* k : {"clock", "oldest", "stable", "all_durable", "oldest_reader", "pinned"})
        CHECK(o[21][k].is_number());
    CHECK(o[28]["status"].is_object());
    CHECK(o[33]["db"] == "test");
}

TEST_CASE("tail follows the oplog in the background while this shell's sessions write") {
    TempDir dir("mvkv-shell");
    Result r = json_c(dir.path,
                      "create u; tail ns=test; put u a 1; begin; put u b 2; put u c 3; commit; "
                      "session s2; del u a; session main; tail stop; put u after 4; "
                      "tail; tail; tail stop; tail stop",
                      {"--sync", "none"});
    CHECK(r.code == 1);  // the second tail, and the last tail stop
    std::vector<json> entries;
    std::vector<json> others;
    for (json& o : r.objects())
        (o.contains("entry") ? entries : others).push_back(o);
    // Every entry logged while following, once, in timestamp order, a
    // transaction's together; nothing from after `tail stop`.
    REQUIRE(entries.size() == 4);
    CHECK(entries[0]["entry"]["key"] == "a");
    CHECK(entries[1]["entry"]["key"] == "b");
    CHECK(entries[2]["entry"]["key"] == "c");
    CHECK(entries[1]["entry"]["ts"] == entries[2]["entry"]["ts"]);
    CHECK(entries[3]["entry"]["op"] == "d");
    CHECK(entries[3]["session"] == "main");  // the session that started the tail
    for (const json& e : entries)
        CHECK(e["cmd"] == "tail");
    json stop;
    for (const json& o : others)
        if (o["cmd"] == "tail" && o.contains("entries") && stop.is_null())
            stop = o;
    CHECK(stop["entries"] == 4);
    CHECK(others.back()["ok"] == false);  // tail stop when not following
    // In memory the in-memory oplog is followed the same way.
    Result mem = run({"--memory", "--json", "-c", "tail; create u; put u a 1; tail stop"});
    CHECK(mem.code == 0);
    std::vector<json> memEntries;
    for (json& o : mem.objects())
        if (o.contains("entry"))
            memEntries.push_back(o);
    REQUIRE(memEntries.size() == 2);
    CHECK(memEntries[0]["entry"]["command"] == "create");
    CHECK(memEntries[1]["entry"]["key"] == "a");
}

TEST_CASE("watch prints change events in the background; resume_after resumes after one") {
    TempDir dir("mvkv-shell");
    Result r = json_c(dir.path,
                      "create u; create other; watch ns=test.u; put u a 1; begin; put u b 2; "
                      "put u c 3; commit; put other x 1; del u a; watch stop; put u after 4; "
                      "watch; watch; watch stop; watch stop; watch resume_after=zz; watch ns=a.",
                      {"--sync", "none"});
    CHECK(r.code == 1);  // the second watch, the last watch stop and the two bad ones
    std::vector<json> events;
    std::vector<json> others;
    for (json& o : r.objects())
        (o.contains("event") ? events : others).push_back(o);
    REQUIRE(events.size() == 4);
    CHECK(events[0]["event"]["operationType"] == "insert");
    CHECK(events[0]["event"]["ns"] == "test.u");
    CHECK(events[0]["event"]["key"] == "a");
    CHECK(events[0]["event"]["value"] == "1");
    CHECK(events[1]["event"]["key"] == "b");
    CHECK(events[2]["event"]["key"] == "c");
    CHECK(events[1]["event"]["clusterTime"] == events[2]["event"]["clusterTime"]);
    CHECK(events[1]["event"]["txnId"] == events[2]["event"]["txnId"]);
    CHECK(events[3]["event"]["operationType"] == "delete");
    CHECK(!events[3]["event"].contains("value"));
    for (const json& e : events) {
        CHECK(e["cmd"] == "watch");
        CHECK(e["session"] == "main");
        CHECK(e["event"]["resumeToken"].is_string());
    }
    json stop;
    for (const json& o : others)
        if (o["cmd"] == "watch" && o.contains("events") && stop.is_null())
            stop = o;
    CHECK(stop["events"] == 4);
    const size_t n = others.size();
    REQUIRE(n >= 4);
    CHECK(others[n - 1]["code"] == "InvalidArgument");  // ns=a.
    CHECK(others[n - 2]["code"] == "InvalidArgument");  // a token it never made
    CHECK(others[n - 3]["code"] == "IllegalOperation");  // watch stop when not watching
    // After a restart, from the token of b (every namespace): what came after it.
    const std::string token = events[1]["event"]["resumeToken"];
    Result resumed = json_c(dir.path, "watch resume_after=" + token + "; put u d 5; watch stop");
    CHECK(resumed.code == 0);
    std::vector<std::string> keys;
    for (json& o : resumed.objects())
        if (o.contains("event"))
            keys.push_back(o["event"]["key"]);
    CHECK(keys == std::vector<std::string>{"c", "x", "a", "after", "d"});
    Result human = human_c(dir.path, "watch; put u e 6; watch stop");
    CHECK(human.code == 0);
    CHECK(human.out.find("insert       test.u e = 6  (resume_after=") != std::string::npos);
}

TEST_CASE("review fixes: commit_ts=0 keeps the transaction, limits on set, quit's object, names") {
    TempDir dir("mvkv-shell");
    Result r = json_c(dir.path,
                      "create u; begin; put u a 1; commit commit_ts=0; sessions; commit; "
                      "set lock_timeout_ms 40000000000; set retry_ms 18446744073709551615; "
                      "delete u a; rollback; quit; put u never 1");
    CHECK(r.code == 1);
    auto o = r.objects();
    REQUIRE(o.size() == 11);  // nothing after quit
    CHECK(o[3]["ok"] == false);
    CHECK(o[4]["sessions"][0]["inTransaction"] == true);  // still open
    CHECK(o[5]["ok"] == true);
    CHECK(o[5]["writes"] == 1);
    CHECK(o[6]["code"] == "InvalidArgument");
    CHECK(o[7]["code"] == "InvalidArgument");
    CHECK(o[8]["hint"] == "did you mean del?");
    CHECK(o[9]["hint"] == "did you mean abort?");
    CHECK(o[10]["cmd"] == "quit");
    CHECK(o[10]["ok"] == true);
    CHECK(getValue(dir.path, "u", "a") == "1");
    CHECK(getValue(dir.path, "u", "never").is_null());
    // Names must be text: a non-UTF-8 collection is refused, and status
    // (which lists every collection) keeps working.
    TempDir dir2("mvkv-shell");
    Result bad = run({dir2.path, "--json"}, "create \"\xff\"\ncreate \"a\x01\"\nstatus\n");
    CHECK(bad.exited);
    CHECK(bad.code == 1);
    auto b = bad.objects();
    REQUIRE(b.size() == 3);
    CHECK(b[0]["code"] == "InvalidArgument");
    CHECK(b[1]["code"] == "InvalidArgument");
    CHECK(b[2]["ok"] == true);
}

TEST_CASE("a lock held by another session of this shell times out by default, it does not hang") {
    TempDir dir("mvkv-shell");
    Result r = json_c(dir.path, "create u; session a; begin; put u k v; session b; drop u; "
                                "show collections; session a; commit; session b; drop u");
    CHECK(r.code == 1);
    auto o = r.objects();
    REQUIRE(o.size() == 11);
    CHECK(o[5]["code"] == "LockTimeout");
    CHECK(o[6]["collections"] == json::array({"u"}));
    CHECK(o[10]["ok"] == true);
}

TEST_CASE("-f of a directory is a bad invocation") {
    TempDir dir("mvkv-shell");
    Result r = run({"--memory", "-f", dir.path});
    CHECK(r.code == 2);
    CHECK(r.err.find("is a directory") != std::string::npos);
}

TEST_CASE("Ctrl-C stops a script read from a pipe, even while it waits for input") {
    Child c({"--memory", "--json"});
    c.send("create u\n");
    auto first = c.readLine();
    REQUIRE(first);
    CHECK(json::parse(*first)["cmd"] == "create");
    // The shell now waits for its next line; the interrupt ends the input.
    REQUIRE(::kill(c.pid(), SIGINT) == 0);
    auto second = c.readLine();
    REQUIRE(second);
    json j = json::parse(*second);
    CHECK(j["ok"] == false);
    CHECK(j["code"] == "Interrupted");
    c.send("put u z 1\n");  // never run
    Result r = c.finish();
    CHECK(r.exited);
    CHECK(r.code == 1);
    CHECK(r.out.find("\"put\"") == std::string::npos);
}

TEST_CASE("create COLL capped size=... max=...: the cap holds, status shows it, a reopen keeps it") {
    TempDir dir("mvkv-shell");
    Result r = json_c(dir.path,
                      "create c capped size=20 max=3; put c z 1; put c a 2; put c m 3; put c b 4; "
                      "scan c; status collections");
    CHECK(r.code == 0);
    auto o = r.objects();
    REQUIRE(o.size() == 7);
    CHECK(o[0] == json::parse(R"({"cmd":"create","session":"main","ok":true,"ns":"test.c",
                                  "capped":true,"size":20,"max":3})"));
    // z, the oldest (not the smallest key), made room for b.
    CHECK(o[5]["items"] == json::parse(R"([{"key":"a","value":"2"},{"key":"b","value":"4"},
                                           {"key":"m","value":"3"}])"));
    const json& c = o[6]["status"]["test.c"];
    CHECK(c["capped"] == true);
    CHECK(c["maxSize"] == 20);
    CHECK(c["max"] == 3);
    CHECK(c["keys"] == 3);
    CHECK(c["bytes"] == 6);

    // A second run on the same directory: still capped, same order.
    Result again = json_c(dir.path, "put c y 5; scan c; status collections");
    CHECK(again.code == 0);
    auto a = again.objects();
    REQUIRE(a.size() == 3);
    CHECK(a[1]["items"] == json::parse(R"([{"key":"b","value":"4"},{"key":"m","value":"3"},
                                           {"key":"y","value":"5"}])"));
    CHECK(a[2]["status"]["test.c"]["maxSize"] == 20);

    // Without max; and the human line.
    Result h = human_c(dir.path, "create d capped size=100");
    CHECK(h.code == 0);
    CHECK(h.out.find("created test.d capped at 100 bytes") != std::string::npos);

    // Bad input: one error each, nothing created.
    Result bad = json_c(dir.path,
                        "create e capped; create e capped size=0; create e capped size=5 min=2; "
                        "create e capped size=-1; create e size=3; create e capped max=3; "
                        "show collections");
    auto b = bad.objects();
    REQUIRE(b.size() == 7);
    for (size_t i = 0; i < 6; ++i) {
        CAPTURE(i);
        CHECK(b[i]["ok"] == false);
        CHECK(b[i]["code"] == "InvalidArgument");
    }
    CHECK(b[1]["error"].get<std::string>().find("capped size 0 is out of range") !=
          std::string::npos);
    CHECK(b[6]["collections"] == json::parse(R"(["c","d"])"));
}

// ---- issue 16: operations (bg, wait, jobs, currentop, killop, serverstatus,
// profile, show profile, show log, set slowms, delrange) ----

namespace {

/// Sends one line to a `--json` shell and returns the one object it prints.
json ask(Child& c, const std::string& line) {
    c.send(line + "\n");
    auto out = c.readLine(60s);
    REQUIRE_MESSAGE(out, "no reply to `" << line << "`; stderr: " << c.err);
    json j = json::parse(*out, nullptr, false);
    REQUIRE_MESSAGE(!j.is_discarded(), "not JSON: " << *out);
    return j;
}

/// The inprog entry of `opid` in a currentop reply (null when absent).
json inprogOf(const json& reply, uint64_t opid) {
    for (const json& e : reply["inprog"])
        if (e.value("opid", uint64_t{0}) == opid)
            return e;
    return nullptr;
}

}  // namespace

TEST_CASE("issue 16: a lock queue: bg drop waits for X behind a transaction, currentop shows it, killop ends it") {
    TempDir dir("mvkv-shell");
    Child c({dir.path, "--json", "--sync", "none"});
    REQUIRE(ask(c, "create c")["ok"] == true);
    REQUIRE(ask(c, "session s1")["ok"] == true);
    REQUIRE(ask(c, "begin")["ok"] == true);
    REQUIRE(ask(c, "put c k v")["ok"] == true);  // s1 holds IX on test.c until it ends
    REQUIRE(ask(c, "session s2")["ok"] == true);
    json bg = ask(c, "bg drop c");
    REQUIRE(bg["ok"] == true);
    CHECK(bg["cmd"] == "bg");
    CHECK(bg["session"] == "s2");
    const uint64_t opid = bg["opid"].get<uint64_t>();
    CHECK(opid > 0);

    // s2 is busy while its drop waits: a foreground command there is refused.
    json busy = ask(c, "get c k");
    CHECK(busy["ok"] == false);
    CHECK(busy["code"] == "Busy");
    CHECK(busy["error"].get<std::string>().find("drop c") != std::string::npos);
    CHECK(busy["hint"].get<std::string>().find("wait " + std::to_string(opid)) != std::string::npos);

    // From another session: poll currentop until the drop shows as waiting
    // (it may not have reached the lock manager yet); bounded, never a sleep.
    REQUIRE(ask(c, "session s3")["ok"] == true);
    json waiter;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
        json cur = ask(c, "currentop");
        REQUIRE(cur["ok"] == true);
        CHECK(cur["cmd"] == "currentop");
        json e = inprogOf(cur, opid);
        if (!e.is_null() && e["waitingForLock"] == true) {
            waiter = e;
            break;
        }
    }
    REQUIRE_MESSAGE(!waiter.is_null(), "the drop never showed as waiting in currentop");
    CHECK(waiter["client"] == "s2");
    CHECK(waiter["op"] == "command");
    CHECK(waiter["ns"] == "test.c");
    CHECK(waiter["command"].contains("drop"));
    CHECK(waiter["lockWaitingFor"]["mode"] == "X");
    CHECK(waiter["lockWaitingFor"]["type"] == "Collection");

    // jobs lists it as running; sessions shows s2 busy with it.
    json jobs = ask(c, "jobs");
    REQUIRE(jobs["jobs"].size() == 1);
    CHECK(jobs["jobs"][0] == json{{"opid", opid}, {"session", "s2"}, {"command", "drop c"},
                                  {"state", "running"}});
    bool sawBusy = false;
    const json sessions = ask(c, "sessions");
    for (const json& s : sessions["sessions"])
        if (s["name"] == "s2")
            sawBusy = s["busy"] == true && s["bgOpid"] == opid;
    CHECK(sawBusy);

    json kill = ask(c, "killop " + std::to_string(opid));
    CHECK(kill == json{{"cmd", "killop"}, {"session", "s3"}, {"ok", true}, {"opid", opid}});
    json ended = ask(c, "wait " + std::to_string(opid));
    CHECK(ended["cmd"] == "drop");  // the reply the drop would have printed
    CHECK(ended["session"] == "s2");
    CHECK(ended["ok"] == false);
    CHECK(ended["code"] == "Interrupted");

    // It ended: killing it again is a clear error; s2 takes commands again;
    // the collection and s1's transaction are untouched.
    json again = ask(c, "killop " + std::to_string(opid));
    CHECK(again["ok"] == false);
    CHECK(again["code"] == "NotFound");
    CHECK(ask(c, "jobs")["jobs"][0]["state"] == "done");
    CHECK(ask(c, "jobs")["jobs"][0]["code"] == "Interrupted");
    REQUIRE(ask(c, "session s2")["ok"] == true);
    CHECK(ask(c, "show collections")["collections"] == json::array({"c"}));
    REQUIRE(ask(c, "session s1")["ok"] == true);
    json commit = ask(c, "commit");
    CHECK(commit["ok"] == true);
    CHECK(commit["writes"] == 1);
    Result r = c.finish();
    CHECK(r.exited);
    CHECK(r.code == 1);  // the Busy refusal, the failed wait and the second killop
    CHECK(getValue(dir.path, "c", "k") == "v");
}

TEST_CASE("issue 16: bg + wait of an ordinary command; wait and killop of unknown or finished opids; bg refusals") {
    Child c({"--memory", "--json"});
    REQUIRE(ask(c, "create c")["ok"] == true);
    for (const char* k : {"a", "b", "c"})
        REQUIRE(ask(c, std::string("put c ") + k + " 1")["ok"] == true);
    json bg = ask(c, "bg scan c b limit 5");
    REQUIRE(bg["ok"] == true);
    const uint64_t opid = bg["opid"].get<uint64_t>();
    json done = ask(c, "wait " + std::to_string(opid));
    CHECK(done == json::parse(R"({"cmd":"scan","session":"main","ok":true,
                                  "items":[{"key":"b","value":"1"},{"key":"c","value":"1"}]})"));
    // A finished job can be waited for again; its opid no longer runs.
    CHECK(ask(c, "wait " + std::to_string(opid)) == done);
    json kill = ask(c, "killop " + std::to_string(opid));
    CHECK(kill["ok"] == false);
    CHECK(kill["code"] == "NotFound");
    CHECK(kill["error"].get<std::string>().find("finished") != std::string::npos);
    json unknown = ask(c, "wait 999999");
    CHECK(unknown["cmd"] == "wait");
    CHECK(unknown["code"] == "NotFound");
    CHECK_FALSE(unknown["hint"].get<std::string>().empty());
    CHECK(ask(c, "wait x")["code"] == "InvalidArgument");
    CHECK(ask(c, "killop 0")["code"] == "InvalidArgument");
    // A second background command in the same session gets its own opid and the
    // write happens; its error comes back through wait.
    json bg2 = ask(c, "bg insert c a 2");
    REQUIRE(bg2["ok"] == true);
    CHECK(bg2["opid"].get<uint64_t>() > opid);
    json dup = ask(c, "wait " + bg2["opid"].dump());
    CHECK(dup["cmd"] == "insert");
    CHECK(dup["code"] == "DuplicateKey");
    json bg3 = ask(c, "bg count c");
    CHECK(ask(c, "wait " + bg3["opid"].dump())["count"] == 3);
    json jobs = ask(c, "jobs");
    REQUIRE(jobs["jobs"].size() == 3);
    CHECK(jobs["jobs"][0]["command"] == "scan c b limit 5");
    CHECK(jobs["jobs"][1]["code"] == "DuplicateKey");
    CHECK(jobs["jobs"][2]["state"] == "done");
    // Refused: the shell's own state, an unknown command, wrong arguments.
    json own = ask(c, "bg session x");
    CHECK(own["cmd"] == "bg");
    CHECK(own["code"] == "IllegalOperation");
    CHECK(ask(c, "bg wait 1")["code"] == "IllegalOperation");
    CHECK(ask(c, "bg nope")["code"] == "InvalidArgument");
    CHECK(ask(c, "bg put c")["code"] == "InvalidArgument");
    CHECK(ask(c, "bg")["code"] == "InvalidArgument");
    Result r = c.finish();
    CHECK(r.code == 1);
    CHECK(r.err.empty());
}

TEST_CASE("issue 16: human mode: bg prints its opid, a finished one is noticed at the next prompt, jobs, currentop") {
    Child c({"--memory"});
    c.send("create c; put c a 1\nbg count c\n");
    REQUIRE(c.readLine() == "created test.c");
    REQUIRE(c.readLine() == "ok");
    auto started = c.readLine();
    REQUIRE(started);
    REQUIRE(startsWith(*started, "[bg "));
    CHECK(started->find("] count c") != std::string::npos);
    const std::string opid = started->substr(4, started->find(']') - 4);
    // Poll jobs until the notice shows: it is printed before the line after
    // the command finished is read (bounded, never a sleep).
    std::optional<std::string> notice;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (!notice && std::chrono::steady_clock::now() < deadline) {
        c.send("jobs\n");
        for (int i = 0; i < 2 && !notice; ++i) {  // a header and one row, or the notice
            auto line = c.readLine();
            REQUIRE(line);
            if (startsWith(*line, "[bg "))
                notice = *line;
            else if (line->find("count c") != std::string::npos)
                CHECK(words(*line)[0] == opid);
        }
    }
    REQUIRE(notice);
    CHECK(startsWith(*notice, "[bg " + opid + "] done: count c (session main)"));
    // What is left of the last jobs listing comes before wait's output.
    c.send("wait " + opid + "\ncurrentop\nkillop " + opid + "\n");
    std::optional<std::string> line;
    while ((line = c.readLine()) && (line->find("opid") != std::string::npos ||
                                      line->find("count c") != std::string::npos)) {
    }
    CHECK(line == "1");  // count's own output, from wait
    CHECK(c.readLine() == "(no operation running)");
    Result r = c.finish();
    CHECK(r.code == 1);
    CHECK(startsWith(r.err, "error: NotFound: no running operation has opid " + opid));
}

TEST_CASE("issue 16: currentop all shows an idle transaction; the human table has its columns") {
    TempDir dir("mvkv-shell");
    Result r = json_c(dir.path, "create c; session s1; begin; put c k v; session main; "
                                "currentop; currentop all; currentop nope");
    CHECK(r.code == 1);
    auto o = r.objects();
    REQUIRE(o.size() == 8);
    CHECK(o[5]["inprog"] == json::array());
    REQUIRE(o[6]["inprog"].size() == 1);
    const json& idle = o[6]["inprog"][0];
    CHECK(idle["type"] == "idleSession");
    CHECK(idle["client"] == "s1");
    CHECK(idle["active"] == false);
    CHECK(idle["transaction"].is_object());
    CHECK(idle["locks"].contains("Collection"));
    CHECK(o[7]["code"] == "InvalidArgument");
    Result h = human_c(dir.path, "session s1; begin; put c k w; session main; currentop all");
    auto lines = h.outLines();
    REQUIRE(lines.size() >= 2);
    auto header = words(lines[lines.size() - 2]);
    CHECK(header == std::vector<std::string>{"opid", "session", "op", "ns", "secs", "waiting",
                                             "lock", "waited", "for"});
    CHECK(words(lines.back())[1] == "s1");
}

TEST_CASE("issue 16: delrange removes FROM..TO inclusive and says how many; in a transaction it is undone by abort") {
    TempDir dir("mvkv-shell");
    Result r = json_c(dir.path, "create c; put c a 1; put c b 2; put c c 3; put c d 4; "
                                "delrange c b c; scan c; begin; delrange c a z; count c; abort; "
                                "count c; delrange c x y; delrange nope a b; delrange c a");
    CHECK(r.code == 1);
    auto o = r.objects();
    REQUIRE(o.size() == 15);
    CHECK(o[5] == json::parse(R"({"cmd":"delrange","session":"main","ok":true,"ns":"test.c","removed":2})"));
    CHECK(o[6]["items"] == json::parse(R"([{"key":"a","value":"1"},{"key":"d","value":"4"}])"));
    CHECK(o[8]["removed"] == 2);
    CHECK(o[9]["count"] == 0);
    CHECK(o[11]["count"] == 2);  // the abort undid the transaction's delrange
    CHECK(o[12]["removed"] == 0);
    CHECK(o[13]["code"] == "NamespaceNotFound");
    CHECK(o[14]["code"] == "InvalidArgument");  // a missing argument: the usage
    Result h = human_c(dir.path, "delrange c a a; delrange c a z");
    CHECK(h.outLines() == std::vector<std::string>{"removed 1 key", "removed 1 key"});
}

TEST_CASE("issue 16: profile levels and settings; show profile lists the operations newest first") {
    TempDir dir("mvkv-shell");
    Result r = json_c(dir.path,
                      "create c; profile; profile 2; insert c a 1; get c a; del c a; "
                      "show profile limit=3; profile 0 slowms=50 samplerate=0.5; profile; "
                      "profile 3; profile samplerate=2; profile 1 nope=1; show profile limit=x; "
                      "use other; show profile",
                      {"--sync", "none"});
    CHECK(r.code == 1);
    auto o = r.objects();
    REQUIRE(o.size() == 15);
    CHECK(o[1] == json::parse(R"({"cmd":"profile","session":"main","ok":true,"was":0,"level":0,"slowms":100,"sampleRate":1.0})"));
    CHECK(o[2]["was"] == 0);
    CHECK(o[2]["level"] == 2);
    const json& entries = o[6]["entries"];
    CHECK(o[6]["cmd"] == "show");
    REQUIRE(entries.size() == 3);
    // Newest first: the del, the get, the insert, each a profile document.
    CHECK(entries[0]["op"] == "remove");
    CHECK(entries[1]["op"] == "query");
    CHECK(entries[2]["op"] == "insert");
    for (const json& e : entries) {
        CHECK(e["ns"] == "test.c");
        CHECK(e["client"] == "main");
        CHECK(e.contains("millis"));
        CHECK(e.contains("locks"));
        CHECK(e.contains("ts"));
    }
    CHECK(entries[0]["opid"].get<uint64_t>() > entries[1]["opid"].get<uint64_t>());
    CHECK(o[7] == json::parse(R"({"cmd":"profile","session":"main","ok":true,"was":2,"level":0,"slowms":50,"sampleRate":0.5})"));
    CHECK(o[8]["was"] == 0);
    CHECK(o[8]["slowms"] == 50);
    for (int i : {9, 10, 11, 12})
        CHECK(o[i]["code"] == "InvalidArgument");
    CHECK(o[8]["slowms"] == 50);  // a refused profile changed nothing
    CHECK(o[14]["entries"] == json::array());  // no profile collection in `other`
    CHECK(o[14]["db"] == "other");
}

TEST_CASE("issue 16: set slowms 0 logs every operation; show log has them as slow-query lines") {
    Result r = run({"--memory", "--json", "-c",
                    "set slowms 0; create c; put c a 1; show log limit=2; show log; "
                    "set slowms 31536000001; show log limit=-1"});
    CHECK(r.code == 1);
    auto o = r.objects();
    REQUIRE(o.size() == 7);
    CHECK(o[0] == json::parse(R"({"cmd":"set","session":"main","ok":true,"slowms":0})"));
    const json& lines = o[3]["lines"];
    REQUIRE(lines.size() == 2);  // the create and the put, oldest first
    for (const json& l : lines) {
        CHECK(l["msg"] == "Slow query");
        CHECK(l["id"] == 51803);
        CHECK(l["c"] == "COMMAND");
        CHECK(l["ctx"] == "main");
        CHECK(l["attr"]["ns"] == "test.c");
        CHECK(l["attr"].contains("durationMillis"));
    }
    CHECK(lines[1]["attr"]["command"].contains("key"));
    CHECK(o[4]["lines"].size() >= 2);
    CHECK(o[5]["code"] == "InvalidArgument");
    CHECK(o[6]["code"] == "InvalidArgument");
    Result h = run({"--memory", "-c", "show log"});
    CHECK(h.code == 0);
    CHECK(startsWith(h.out, "(no slow operations logged"));
}

TEST_CASE("issue 16: serverstatus, whole and by section; an unknown section names the others") {
    Result r = run({"--memory", "--json", "-c",
                    "create c; put c a 1; serverstatus; serverstatus opcounters; serverstatus nope"});
    CHECK(r.code == 1);
    auto o = r.objects();
    REQUIRE(o.size() == 5);
    for (const char* section : {"globalLock", "locks", "opcounters", "metrics", "transactions"})
        CHECK(o[2].contains(section));
    CHECK_FALSE(o[3].contains("locks"));
    CHECK(o[3]["opcounters"]["insert"].get<uint64_t>() + o[3]["opcounters"]["update"].get<uint64_t>() >= 1);
    CHECK(o[4]["code"] == "InvalidArgument");
    CHECK(o[4]["error"].get<std::string>().find("opcounters") != std::string::npos);
}

namespace {

/// Every usage line `help` lists, each followed by a newline.
std::string helpUsages() {
    Result r = run({"--memory", "--json", "-c", "help"});
    const auto o = r.objects();
    REQUIRE(o.size() == 1);
    std::string all;
    for (const json& c : o[0]["commands"])
        all += c["usage"].get<std::string>() + "\n";
    return all;
}

}  // namespace

TEST_CASE("issue 16: the new commands are in help") {
    const std::string all = helpUsages();
    for (const char* usage : {"bg COMMAND", "wait OPID", "jobs", "currentop [all]", "killop OPID",
                              "serverstatus [SECTION]", "profile [LEVEL] [slowms=N] [samplerate=F]",
                              "delrange COLL FROM TO"})
        CHECK_MESSAGE(all.find(std::string(usage) + "\n") != std::string::npos, usage);
    CHECK(all.find("show dbs | collections | profile [limit=N] | log [limit=N]") != std::string::npos);
    CHECK(all.find("slowms") != std::string::npos);
}

TEST_CASE("issue 16: a bg command that never reaches the engine leaves its opid to no later operation") {
    Child c({"--memory", "--json"});
    REQUIRE(ask(c, "create c")["ok"] == true);
    json bg = ask(c, "bg scan c limit x");  // refused by the shell before Session::scan
    REQUIRE(bg["ok"] == true);
    const std::string opid = bg["opid"].dump();
    CHECK(ask(c, "wait " + opid)["code"] == "InvalidArgument");
    REQUIRE(ask(c, "profile 2")["ok"] == true);
    REQUIRE(ask(c, "put c k v")["ok"] == true);
    json prof = ask(c, "show profile limit=1");
    REQUIRE(prof["entries"].size() == 1);
    CHECK(prof["entries"][0]["op"] == "update");
    CHECK(prof["entries"][0]["opid"].dump() != opid);
    c.finish();
}

// ---- issue 17: TTL collections (create ... expire_after=, put ... ttl= /
// expire_at=, get's expiresAt, collmod, ttl, ttl run) ----

TEST_CASE(
    "issue 17: TTL collections: create, explicit expiries, ttl run deletes what expired, collmod, "
    "a reopen keeps them") {
    TempDir dir("mvkv-shell");
    Result r = json_c(dir.path,
                      "create locks expire_after=0; create cache expire_after=1h; "
                      "put locks a owner1 expire_at=1; put locks b owner2 ttl=1h; "
                      "put locks c ttl=5s; put cache k v; get locks b; get cache k; "
                      "ttl run; ttl; scan locks; collmod cache expire_after=2h; "
                      "status collections; get locks c");
    CHECK(r.code == 0);
    auto o = r.objects();
    REQUIRE(o.size() == 14);
    CHECK(o[0] == json::parse(R"({"cmd":"create","session":"main","ok":true,"ns":"test.locks",
                                  "expireAfterSeconds":0})"));
    CHECK(o[1]["expireAfterSeconds"] == 3600);
    CHECK(o[2]["expiresAt"] == 1);  // 1 ms after the epoch: long expired
    const int64_t bExpires = o[3]["expiresAt"].get<int64_t>();
    CHECK(bExpires > 1'600'000'000'000);
    CHECK_FALSE(o[4].contains("expiresAt"));  // the value is "ttl=5s": the third word
    CHECK(o[6]["value"] == "owner2");
    CHECK(o[6]["expiresAt"] == bExpires);
    const int64_t kExpires = o[7]["expiresAt"].get<int64_t>();
    // The background monitor (a pass a second) may have taken some first.
    CHECK(o[8]["ok"] == true);
    CHECK(o[8]["deleted"].get<uint64_t>() <= 2);
    CHECK(o[8]["collections"] == 2);
    CHECK(o[9]["deletedDocuments"] == 2);  // a and c (c: written now, expire_after 0)
    CHECK(o[9]["sleepMs"] == 1000);
    CHECK(o[9]["secondary"] == false);
    CHECK(o[9]["collections"] == json::parse(R"([{"ns":"test.cache","expireAfterSeconds":3600},
                                                 {"ns":"test.locks","expireAfterSeconds":0}])"));
    CHECK(o[10]["items"] == json::parse(R"([{"key":"b","value":"owner2"}])"));
    CHECK(o[11] == json::parse(R"({"cmd":"collmod","session":"main","ok":true,"ns":"test.cache",
                                   "expireAfterSeconds":7200})"));
    CHECK(o[12]["status"]["test.cache"]["expireAfterSeconds"] == 7200);
    CHECK(o[12]["status"]["test.locks"]["expireAfterSeconds"] == 0);
    CHECK(o[13]["found"] == false);

    // A second run on the same directory: the options and the expiries.
    Result again =
        json_c(dir.path, "get cache k; get locks b; status collections; serverstatus metrics");
    CHECK(again.code == 0);
    auto a = again.objects();
    REQUIRE(a.size() == 4);
    CHECK(a[0]["expiresAt"] == kExpires + 3'600'000);  // collmod applies to it
    CHECK(a[1]["expiresAt"] == bExpires);              // an explicit expiry is kept
    CHECK(a[2]["status"]["test.cache"]["expireAfterSeconds"] == 7200);
    CHECK(a[3]["metrics"]["ttl"].contains("passes"));
    CHECK(a[3]["metrics"]["ttl"].contains("deletedDocuments"));

    // Human lines.
    Result h = human_c(dir.path,
                       "create h expire_after=90; put h k v expire_at=2030-01-31T12:00:00Z; "
                       "get h k; ttl run; collmod h expire_after=2m");
    CHECK(h.code == 0);
    CHECK(h.out.find("created TTL collection test.h: entries expire 90 s after their write") !=
          std::string::npos);
    CHECK(h.out.find("ok, expires at 2030-01-31T12:00:00.000Z") != std::string::npos);
    CHECK(h.out.find("(expires at 2030-01-31T12:00:00.000Z, in ") != std::string::npos);
    CHECK(h.out.find("expired entr") != std::string::npos);
    CHECK(h.out.find("test.h: entries now expire 120 s after their write") != std::string::npos);
}

TEST_CASE("issue 17: bad TTL input: one error each, nothing changed") {
    TempDir dir("mvkv-shell");
    Result setup = json_c(dir.path, "create t expire_after=30s; put t k v ttl=1h; create plain");
    REQUIRE(setup.code == 0);
    const json before = setup.objects()[1]["expiresAt"];
    struct Case {
        std::string command, code, inError;
    };
    const std::vector<Case> cases = {
        {"create x expire_after=-1", "InvalidArgument", "must be a duration"},
        {"create x expire_after=2147483648", "InvalidArgument", "at most 2147483647 s"},
        {"create x expire_after=1500ms", "InvalidArgument", "not whole seconds"},
        {"create x expire_after=abc", "InvalidArgument", "must be a duration"},
        {"create x capped size=100 expire_after=30", "InvalidArgument",
         "a capped collection cannot be a TTL collection"},
        {"put t k v2 ttl=0", "InvalidArgument", "ttl must be above 0"},
        {"put t k v2 ttl=-5", "InvalidArgument", "must be a duration"},
        {"put t k v2 ttl=99999999999", "InvalidArgument", "too long"},
        {"put t k v2 ttl=5x", "InvalidArgument", "must be a duration"},
        {"put t k v2 expire_at=0", "InvalidArgument", "is not a time"},
        {"put t k v2 expire_at=2030-02-30T00:00:00Z", "InvalidArgument", "ISO-8601"},
        {"put t k v2 \"ttl=5s\"", "InvalidArgument", "after the value"},
        {"put t k v2 ttl=5s expire_at=5", "InvalidArgument", "give one expiry"},
        {"update t k v2 size=5", "InvalidArgument", "after the value"},
        {"put plain k v ttl=5s", "InvalidArgument", "needs a TTL collection"},
        {"collmod plain expire_after=5", "InvalidArgument", "not a TTL collection"},
        {"collmod nope expire_after=5", "NamespaceNotFound", "test.nope"},
        {"collmod t expire_after=-1", "InvalidArgument", "must be a duration"},
        {"collmod t size=5", "InvalidArgument", "usage: collmod COLL expire_after=DURATION"},
        {"ttl stop", "InvalidArgument", "usage: ttl [run]"},
    };
    std::string script;
    for (const Case& c : cases)
        script += c.command + "\n";
    Result r =
        run({dir.path, "--json", "-c", script + "get t k\nshow collections\nstatus collections\n"});
    CHECK(r.code == 1);
    auto o = r.objects();
    REQUIRE(o.size() == cases.size() + 3);
    for (size_t i = 0; i < cases.size(); ++i) {
        CAPTURE(cases[i].command);
        CHECK(o[i]["ok"] == false);
        CHECK(o[i]["code"] == cases[i].code);
        CHECK(o[i]["error"].get<std::string>().find(cases[i].inError) != std::string::npos);
    }
    const json& got = o[cases.size()];
    CHECK(got["value"] == "v");
    CHECK(got["expiresAt"] == before);
    CHECK(o[cases.size() + 1]["collections"] == json::parse(R"(["plain","t"])"));
    CHECK(o[cases.size() + 2]["status"]["test.t"]["expireAfterSeconds"] == 30);
    CHECK_FALSE(o[cases.size() + 2]["status"]["test.plain"].contains("expireAfterSeconds"));
}

TEST_CASE("issue 17: the TTL commands are in help") {
    const std::string all = helpUsages();
    for (const char* usage : {"create COLL [capped size=BYTES [max=N]] [expire_after=DURATION]",
                              "put COLL KEY VALUE [ttl=DURATION | expire_at=TIME] [lock=OWNER:TOKEN]",
                              "collmod COLL expire_after=DURATION", "ttl [run]"})
        CHECK_MESSAGE(all.find(std::string(usage) + "\n") != std::string::npos, usage);
}

// ---- issue 17: document locks (lock, unlock, refresh, doclocks, lock=) ----

namespace {

/// The inprog entry of a sleeping acquisition, polled until it shows
/// (bounded: a hang guard, not a timing the test depends on).
json sleepingLock(Child& c, uint64_t opid) {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
        json e = inprogOf(ask(c, "currentop"), opid);
        if (!e.is_null() && e.value("waitingForDocumentLock", false))
            return e;
    }
    FAIL("opid " << opid << " never showed as waiting for a document lock");
    return nullptr;
}

}  // namespace

TEST_CASE("issue 17: lock, fenced writes, refresh, doclocks, unlock by key and by owner (--json)") {
    TempDir dir("mvkv-shell");
    Child c({dir.path, "--json", "--sync", "none"});
    REQUIRE(ask(c, "create work")["ok"] == true);
    REQUIRE(ask(c, "put work item7 v1")["ok"] == true);

    json l = ask(c, "lock work item7 ttl=30s owner=alice");
    REQUIRE(l["ok"] == true);
    CHECK(l["cmd"] == "lock");
    CHECK(l["ns"] == "test.work");
    CHECK(l["key"] == "item7");
    CHECK(l["owner"] == "alice");
    const uint64_t token = l["token"].get<uint64_t>();
    CHECK(token >= 1);
    CHECK(l["expiresAtMs"].get<int64_t>() > 0);
    CHECK(l["expiresAt"].get<std::string>().find("+00:00") != std::string::npos);
    CHECK(l["acquiredAt"].is_string());
    CHECK(l["remainingMs"].get<int64_t>() <= 30000);
    CHECK(l["tookOver"] == false);
    // Every field (the parse sorts them).
    std::vector<std::string> keys;
    for (auto it = l.begin(); it != l.end(); ++it)
        keys.push_back(it.key());
    CHECK(keys == std::vector<std::string>{"acquiredAt", "cmd", "expiresAt", "expiresAtMs", "key",
                                           "ns", "ok", "owner", "remainingMs", "session", "token",
                                           "tookOver"});

    json held = ask(c, "lock work item7 owner=bob");
    CHECK(held["ok"] == false);
    CHECK(held["code"] == "DocumentLocked");
    CHECK(held["error"].get<std::string>().find("alice") == std::string::npos);
    CHECK(held["hint"].get<std::string>().find("wait=") != std::string::npos);

    // A generated owner, 32 hex digits.
    json anon = ask(c, "lock work item8");
    REQUIRE(anon["ok"] == true);
    CHECK(anon["owner"].get<std::string>().size() == 32);

    // Fenced writes: the holder's pass, a wrong token's do not.
    const std::string fence = "lock=alice:" + std::to_string(token);
    CHECK(ask(c, "put work item7 v2 " + fence)["ok"] == true);
    CHECK(ask(c, "update work item7 v3 " + fence)["ok"] == true);
    json lost = ask(c, "put work item7 bad lock=alice:" + std::to_string(token + 100));
    CHECK(lost["code"] == "LockLost");
    CHECK(ask(c, "get work item7")["value"] == "v3");
    CHECK(ask(c, "put work item7 v4 lock=alice")["code"] == "InvalidArgument");
    CHECK(ask(c, "put work item7 v4 lock=alice:x")["code"] == "InvalidArgument");
    CHECK(ask(c, "put work item7 v4 ttl=5")["code"] == "InvalidArgument");
    CHECK(ask(c, "get work item7")["value"] == "v3");

    json r = ask(c, "refresh work item7 owner=alice ttl=1m");
    REQUIRE(r["ok"] == true);
    CHECK(r["token"] == token);
    CHECK(r["remainingMs"].get<int64_t>() > 30000);
    CHECK(ask(c, "refresh work item7 owner=bob")["code"] == "NotLockOwner");
    CHECK(ask(c, "refresh work item7")["code"] == "InvalidArgument");

    json list = ask(c, "doclocks work");
    REQUIRE(list["ok"] == true);
    REQUIRE(list["locks"].size() == 2);
    CHECK(list["locks"][0]["key"] == "item7");
    CHECK(list["locks"][0]["owner"] == "alice");
    CHECK(list["locks"][0]["token"] == token);
    CHECK(list["locks"][0]["expired"] == false);
    CHECK(list["locks"][1]["key"] == "item8");

    CHECK(ask(c, "unlock work item7 owner=bob")["code"] == "NotLockOwner");
    json u = ask(c, "unlock work item7 owner=alice");
    CHECK(u == json{{"cmd", "unlock"}, {"session", "main"}, {"ok", true}, {"ns", "test.work"},
                    {"key", "item7"}, {"released", 1}});
    CHECK(ask(c, "unlock work item7 owner=alice")["code"] == "NotFound");
    REQUIRE(ask(c, "lock work a owner=carol")["ok"] == true);
    REQUIRE(ask(c, "lock work b owner=carol")["ok"] == true);
    json all = ask(c, "unlock owner=carol");
    CHECK(all == json{{"cmd", "unlock"}, {"session", "main"}, {"ok", true}, {"owner", "carol"},
                      {"released", 2}});
    CHECK(ask(c, "doclocks work")["locks"].size() == 1);  // item8's
    json status = ask(c, "serverstatus documentLocks");
    CHECK(status["documentLocks"]["acquired"] == 4);
    CHECK(status["documentLocks"]["released"] == 3);
    c.finish();

    // The lock collections are data: a new run on the directory sees item8's lock.
    Result again = json_c(dir.path, "doclocks work; show collections");
    REQUIRE(again.code == 0);
    auto o = again.objects();
    REQUIRE(o.size() == 2);
    CHECK(o[0]["locks"][0]["key"] == "item8");
    CHECK(o[1]["collections"] == json::array({"work", "work.lock", "work.lock.owners"}));
}

TEST_CASE("issue 17: a waiting lock under bg: currentop shows it, unlock wakes it, killop stops it") {
    Child c({"--memory", "--json"});
    REQUIRE(ask(c, "create work")["ok"] == true);
    REQUIRE(ask(c, "lock work k owner=alice ttl=1h")["ok"] == true);
    REQUIRE(ask(c, "session s2")["ok"] == true);
    json bg = ask(c, "bg lock work k owner=bob wait=10m");
    REQUIRE(bg["ok"] == true);
    const uint64_t opid = bg["opid"].get<uint64_t>();
    REQUIRE(ask(c, "session main")["ok"] == true);
    json e = sleepingLock(c, opid);
    CHECK(e["client"] == "s2");
    CHECK(e["ns"] == "test.work");
    CHECK(e["command"]["acquireLock"] == "work");
    CHECK(e["command"]["key"] == "k");
    REQUIRE(ask(c, "unlock work k owner=alice")["ok"] == true);
    json got = ask(c, "wait " + std::to_string(opid));
    CHECK(got["cmd"] == "lock");
    CHECK(got["session"] == "s2");
    REQUIRE(got["ok"] == true);
    CHECK(got["owner"] == "bob");

    // Another waiter, stopped by killop: nothing changes.
    json bg2 = ask(c, "bg lock work k owner=carol wait=10m");
    const uint64_t opid2 = bg2["opid"].get<uint64_t>();
    sleepingLock(c, opid2);
    CHECK(ask(c, "killop " + std::to_string(opid2))["ok"] == true);
    json killed = ask(c, "wait " + std::to_string(opid2));
    CHECK(killed["ok"] == false);
    CHECK(killed["code"] == "Interrupted");
    json list = ask(c, "doclocks work");
    REQUIRE(list["locks"].size() == 1);
    CHECK(list["locks"][0]["owner"] == "bob");
    c.finish();
}

TEST_CASE("issue 17: bad input for the lock commands: one error each, nothing changed") {
    Child c({"--memory", "--json"});
    REQUIRE(ask(c, "create work")["ok"] == true);
    REQUIRE(ask(c, "put work k v")["ok"] == true);
    struct Case {
        std::string command, code, inError;
    };
    const std::vector<Case> cases = {
        {"lock work k ttl=0", "InvalidArgument", "positive"},
        {"lock work k ttl=-5s", "InvalidArgument", "must be a duration"},
        {"lock work k ttl=400d", "InvalidArgument", "too long"},
        {"lock work k ttl=99999999999999999999", "InvalidArgument", "too long"},
        {"lock work k ttl=9999999999999999d", "InvalidArgument", "too long"},
        {"lock work k ttl=30x", "InvalidArgument", "must be a duration"},
        {"lock work k ttl=", "InvalidArgument", "must be a duration"},
        {"lock work k wait=-1s", "InvalidArgument", "wait"},
        {"lock work k owner=", "InvalidArgument", "empty"},
        {"lock work k owner=a owner=b", "InvalidArgument", "twice"},
        {"lock work k colour=red", "InvalidArgument", "usage: lock COLL KEY"},
        {"lock work", "InvalidArgument", "usage: lock COLL KEY"},
        {"lock nope k", "NamespaceNotFound", "test.nope"},
        {"lock work.lock k", "InvalidArgument", "lock collection"},
        {"unlock work k", "InvalidArgument", "owner=ID"},
        {"unlock work", "InvalidArgument", "usage: unlock"},
        {"unlock owner=", "InvalidArgument", "empty"},
        {"unlock work k owner=x", "NotFound", "not locked"},
        {"refresh work k owner=x ttl=0", "InvalidArgument", "positive"},
        {"doclocks nope", "NamespaceNotFound", "test.nope"},
        {"del work k lock=:1", "InvalidArgument", "empty"},
        {"del work k lock=x:0", "InvalidArgument", "token 0"},
        {"del work k lock=x:1 lock=x:2", "InvalidArgument", "usage: del COLL KEY"},
    };
    for (const Case& cs : cases) {
        CAPTURE(cs.command);
        json r = ask(c, cs.command);
        CHECK(r["ok"] == false);
        CHECK(r["code"] == cs.code);
        CHECK(r["error"].get<std::string>().find(cs.inError) != std::string::npos);
    }
    CHECK(ask(c, "get work k")["value"] == "v");
    CHECK(ask(c, "show collections")["collections"] == json::array({"work"}));
    // Inside a transaction: refused, the transaction goes on.
    REQUIRE(ask(c, "begin")["ok"] == true);
    CHECK(ask(c, "lock work k")["code"] == "IllegalOperation");
    REQUIRE(ask(c, "put work k inside")["ok"] == true);
    REQUIRE(ask(c, "commit")["ok"] == true);
    CHECK(ask(c, "get work k")["value"] == "inside");
    Result r = c.finish();
    CHECK(r.code == 1);
}

TEST_CASE("issue 17: the lock commands are in help") {
    const std::string all = helpUsages();
    for (const char* usage :
         {"lock COLL KEY [ttl=30s] [owner=ID] [wait=5s]", "unlock COLL KEY owner=ID | unlock owner=ID",
          "refresh COLL KEY owner=ID [ttl=30s]", "doclocks COLL",
          "put COLL KEY VALUE [ttl=DURATION | expire_at=TIME] [lock=OWNER:TOKEN]",
          "del COLL KEY [lock=OWNER:TOKEN]"})
        CHECK_MESSAGE(all.find(std::string(usage) + "\n") != std::string::npos, usage);
}

TEST_CASE("issue 18: rs add/status/pause/resume, commit w=, begin read_concern= (--json)") {
    TempDir dir("mvkv-shell");
    Child c({dir.path, "--json", "--sync", "none"});
    json none = ask(c, "rs status");
    REQUIRE(none["ok"] == true);
    CHECK(none["members"] == json::array());
    CHECK(ask(c, "rs pause 1")["code"] == "NotFound");
    REQUIRE(ask(c, "create c")["ok"] == true);

    json a1 = ask(c, "rs add");
    REQUIRE(a1["ok"] == true);
    CHECK(a1["id"] == 1);
    json a2 = ask(c, "rs add");
    CHECK(a2["id"] == 2);
    CHECK(a2["members"] == 3);

    REQUIRE(ask(c, "begin")["ok"] == true);
    REQUIRE(ask(c, "put c k v0")["ok"] == true);
    json w3 = ask(c, "commit w=3 wtimeout=20000");
    REQUIRE(w3["ok"] == true);
    CHECK(w3["writeConcern"] == "{w: 3, wtimeout: 20000}");
    const uint64_t ts0 = w3["commitTs"].get<uint64_t>();

    json st = ask(c, "rs status");
    REQUIRE(st["members"].size() == 3);
    CHECK(st["members"][0] == json{{"id", 0}, {"state", "PRIMARY"}, {"lastApplied", st["members"][0]["lastApplied"]},
                                   {"lastDurable", st["members"][0]["lastDurable"]}, {"paused", false}});
    CHECK(st["members"][1]["state"] == "SECONDARY");
    CHECK(st["members"][2]["lastApplied"].get<uint64_t>() >= ts0);
    CHECK(st["majorityCommitPoint"].get<uint64_t>() >= ts0);

    // Two of three paused: a majority write times out, committed all the same.
    CHECK(ask(c, "rs pause 1") == json{{"cmd", "rs"}, {"session", "main"}, {"ok", true}, {"id", 1},
                                       {"paused", true}});
    REQUIRE(ask(c, "rs pause 2")["ok"] == true);
    CHECK(ask(c, "rs pause 2")["code"] == "IllegalOperation");
    CHECK(ask(c, "rs status")["members"][2]["state"] == "PAUSED");
    REQUIRE(ask(c, "begin")["ok"] == true);
    REQUIRE(ask(c, "put c k v1")["ok"] == true);
    json late = ask(c, "commit w=majority wtimeout=20");
    CHECK(late["ok"] == false);
    CHECK(late["code"] == "WriteConcernTimeout");
    CHECK(late["error"].get<std::string>().find("IS committed") != std::string::npos);
    CHECK(late["hint"].get<std::string>().find("committed") != std::string::npos);
    CHECK(ask(c, "get c k")["value"] == "v1");  // local: the write stands
    json rc = ask(c, "begin read_concern=majority");
    REQUIRE(rc["ok"] == true);
    CHECK(rc["readConcern"] == "majority");
    CHECK(ask(c, "get c k")["value"] == "v0");  // not majority-committed yet
    REQUIRE(ask(c, "commit")["ok"] == true);
    // The same for reads outside a transaction, by the session's read concern.
    CHECK(ask(c, "readconcern")["readConcern"] == "local");
    CHECK(ask(c, "readconcern majority")["readConcern"] == "majority");
    CHECK(ask(c, "get c k")["value"] == "v0");
    CHECK(ask(c, "count c")["count"] == 1);
    CHECK(ask(c, "readconcern bogus")["code"] == "InvalidArgument");
    CHECK(ask(c, "readconcern")["readConcern"] == "majority");
    CHECK(ask(c, "readconcern local")["readConcern"] == "local");
    CHECK(ask(c, "get c k")["value"] == "v1");

    // One back: 2 of 3 again; the next majority write waits for it.
    REQUIRE(ask(c, "rs resume 1")["ok"] == true);
    REQUIRE(ask(c, "begin")["ok"] == true);
    REQUIRE(ask(c, "put c k2 x")["ok"] == true);
    REQUIRE(ask(c, "commit w=majority")["ok"] == true);
    REQUIRE(ask(c, "begin read_concern=majority")["ok"] == true);
    CHECK(ask(c, "get c k")["value"] == "v1");
    REQUIRE(ask(c, "commit")["ok"] == true);
    json snap = ask(c, "begin read_concern=snapshot");
    CHECK(snap["readConcern"] == "snapshot");
    CHECK(snap["readTs"].is_number());
    REQUIRE(ask(c, "commit")["ok"] == true);

    json repl = ask(c, "serverstatus repl");
    REQUIRE(repl["ok"] == true);
    CHECK(repl["repl"]["members"].size() == 3);
    CHECK(repl["repl"]["members"][2]["paused"] == true);

    // Bad input: one error each, the transaction still open, nothing committed.
    REQUIRE(ask(c, "begin")["ok"] == true);
    REQUIRE(ask(c, "put c bad 1")["ok"] == true);
    CHECK(ask(c, "commit w=0")["code"] == "InvalidArgument");
    json four = ask(c, "commit w=4");
    CHECK(four["code"] == "InvalidArgument");
    CHECK(four["error"].get<std::string>().find("the replica set has 3") != std::string::npos);
    CHECK(ask(c, "commit wtimeout=5")["code"] == "InvalidArgument");
    CHECK(ask(c, "commit w=two")["code"] == "InvalidArgument");
    CHECK(ask(c, "commit j=1")["code"] == "InvalidArgument");
    REQUIRE(ask(c, "abort")["ok"] == true);
    CHECK(ask(c, "get c bad")["found"] == false);
    CHECK(ask(c, "begin read_concern=linearizable")["code"] == "InvalidArgument");
    CHECK(ask(c, "begin read_concern=majority read_ts=3")["code"] == "InvalidArgument");
    CHECK(ask(c, "rs")["code"] == "InvalidArgument");
    CHECK(ask(c, "rs bogus")["code"] == "InvalidArgument");
    CHECK(ask(c, "rs status 1")["code"] == "InvalidArgument");
    CHECK(ask(c, "rs pause")["code"] == "InvalidArgument");
    CHECK(ask(c, "rs pause x")["code"] == "InvalidArgument");
    CHECK(ask(c, "rs pause 0")["code"] == "IllegalOperation");
    CHECK(ask(c, "rs resume 9")["code"] == "NotFound");
    CHECK(ask(c, "rs resume 1")["code"] == "IllegalOperation");
    c.finish();
}

TEST_CASE("issue 18: a standalone shell: w>1 refused, w=majority met by itself") {
    Result r = json_c("--memory",
                      "create c; begin; put c k v; commit w=2; commit w=majority wtimeout=1000; "
                      "begin read_concern=majority; get c k; commit");
    auto o = r.objects();
    REQUIRE(o.size() == 8);
    CHECK(o[3]["code"] == "InvalidArgument");
    CHECK(o[3]["error"].get<std::string>().find("standalone") != std::string::npos);
    CHECK(o[4]["ok"] == true);
    CHECK(o[4]["writeConcern"] == "{w: \"majority\", wtimeout: 1000}");
    CHECK(o[6]["value"] == "v");
}

TEST_CASE("issue 18: rs add path=DIR adds a durable member that resumes after a restart (--json)") {
    TempDir dir("mvkv-shell"), member("mvkv-shell-member");
    const std::string memberDir = member.path + "/m1";
    uint64_t applied = 0;
    {
        Child c({dir.path, "--json", "--sync", "none"});
        REQUIRE(ask(c, "create c")["ok"] == true);
        CHECK(ask(c, "rs add path=")["ok"] == false);
        CHECK(ask(c, "rs add dir=" + memberDir)["ok"] == false);
        json a = ask(c, "rs add path=" + memberDir);
        REQUIRE_MESSAGE(a["ok"] == true, a.dump());
        CHECK(a["id"] == 1);
        REQUIRE(ask(c, "begin")["ok"] == true);
        REQUIRE(ask(c, "put c k v0")["ok"] == true);
        json w = ask(c, "commit w=2 wtimeout=20000");
        REQUIRE(w["ok"] == true);
        applied = w["commitTs"].get<uint64_t>();
        json st = ask(c, "rs status");
        CHECK(st["members"][1]["lastApplied"].get<uint64_t>() >= applied);
    }
    // A new shell on the same directories: the member resumes from its own log.
    Child c({dir.path, "--json", "--sync", "none"});
    REQUIRE(ask(c, "put c k2 v1")["ok"] == true);
    json a = ask(c, "rs add path=" + memberDir);
    REQUIRE_MESSAGE(a["ok"] == true, a.dump());
    REQUIRE(ask(c, "begin")["ok"] == true);
    REQUIRE(ask(c, "put c k3 v2")["ok"] == true);
    json w = ask(c, "commit w=2 wtimeout=20000");
    REQUIRE(w["ok"] == true);
    json st = ask(c, "rs status");
    CHECK(st["members"][1]["state"] == "SECONDARY");
    CHECK(st["members"][1]["lastApplied"].get<uint64_t>() >= w["commitTs"].get<uint64_t>());
    CHECK(st["members"][1]["lastDurable"].get<uint64_t>() <=
          st["members"][1]["lastApplied"].get<uint64_t>());
}

TEST_CASE("issue 18: rs, commit w= and begin read_concern= are in help") {
    const std::string all = helpUsages();
    for (const char* usage :
         {"rs add [path=DIR] | rs status | rs pause N | rs resume N",
          "commit [commit_ts=N] [durable_ts=N] [w=N|majority] [wtimeout=MS]",
          "begin [read_ts=N] [roundup] [read_concern=local|snapshot|majority] [ignore_prepare]"})
        CHECK_MESSAGE(all.find(std::string(usage) + "\n") != std::string::npos, usage);
}

TEST_CASE(
    "prepared transactions: prepare prepare_ts=N, a reader's PrepareConflict, begin "
    "ignore_prepare, commit commit_ts=N durable_ts=N") {
    TempDir dir("mvkv-shell");
    Result r = json_c(dir.path,
                      "create c; put c k v0\n"
                      "begin; put c k v1; prepare prepare_ts=100\n"
                      "put c k2 x\n"
                      "session r; begin; get c k; abort\n"
                      "begin ignore_prepare; get c k; commit\n"
                      "session main; sessions; commit commit_ts=99\n"
                      "commit commit_ts=150 durable_ts=160\n"
                      "session r; begin; get c k; commit\n"
                      "oplog");
    CHECK(r.code == 1);  // the refused commands
    auto o = r.objects();
    REQUIRE(o.size() == 22);
    CHECK(o[4]["cmd"] == "prepare");
    CHECK(o[4]["ok"] == true);
    CHECK(o[4]["prepareTs"] == 100);
    CHECK(o[4]["writes"] == 1);
    CHECK(o[4]["txnId"].get<uint64_t>() > 0);
    CHECK(o[5]["cmd"] == "put");  // no writes after prepare
    CHECK(o[5]["code"] == "IllegalOperation");
    CHECK(o[8]["cmd"] == "get");
    CHECK(o[8]["session"] == "r");
    CHECK(o[8]["ok"] == false);
    CHECK(o[8]["code"] == "PrepareConflict");
    CHECK(o[8]["error"].get<std::string>().find("prepared at timestamp 100") != std::string::npos);
    CHECK_FALSE(o[8]["hint"].get<std::string>().empty());
    CHECK(o[10]["cmd"] == "begin");
    CHECK(o[10]["ignorePrepare"] == true);
    CHECK(o[11]["value"] == "v0");  // as if the prepared write were absent
    CHECK(o[12]["cmd"] == "commit");
    CHECK(o[14]["cmd"] == "sessions");
    bool sawPrepared = false;
    for (const json& s : o[14]["sessions"])
        if (s["name"] == "main")
            sawPrepared = s["inTransaction"] == true && s["prepared"] == true;
    CHECK(sawPrepared);
    CHECK(o[15]["cmd"] == "commit");  // below the prepare timestamp: refused, still prepared
    CHECK(o[15]["ok"] == false);
    CHECK(o[15]["code"] == "InvalidArgument");
    CHECK(o[15]["error"].get<std::string>().find("stays prepared") != std::string::npos);
    CHECK(o[16]["cmd"] == "commit");
    CHECK(o[16]["ok"] == true);
    CHECK(o[16]["commitTs"] == 150);
    CHECK(o[16]["durableTs"] == 160);
    CHECK(o[16]["writes"] == 1);
    CHECK(o[19]["value"] == "v1");
    // The oplog shows the prepared transaction as its commit only, at 150.
    std::vector<std::pair<uint64_t, std::string>> logged;
    for (const json& entry : o[21]["entries"])
        logged.emplace_back(entry["ts"].get<uint64_t>(),
                            entry.value("key", entry.value("command", std::string())));
    REQUIRE(logged.size() == 3);  // create, put k v0, the commit
    CHECK(logged[2] == std::pair<uint64_t, std::string>{150, "k"});
    CHECK(getValue(dir.path, "c", "k") == "v1");
    // Bad input: one error each, nothing prepared.
    Result bad = json_c(dir.path,
                        "prepare prepare_ts=5\n"
                        "begin; put c k v2; prepare prepare_ts=0\n"
                        "prepare ts=200\n"
                        "commit durable_ts=300\n"
                        "prepare prepare_ts=10\n"
                        "get c k");
    auto b = bad.objects();
    REQUIRE(b.size() == 8);
    CHECK(b[0]["code"] == "IllegalOperation");  // no transaction
    CHECK(b[3]["code"] == "InvalidArgument");   // prepare_ts=0
    CHECK(b[4]["code"] == "InvalidArgument");   // not prepare_ts
    CHECK(b[5]["code"] == "InvalidArgument");   // durable_ts without commit_ts
    CHECK(b[6]["code"] == "InvalidArgument");   // not after the newest commit
    CHECK(b[7]["value"] == "v2");               // still open, not prepared: reads its own write
}

// ---- issue 19: failpoint NAME MODE [data], failpoints ----

TEST_CASE("issue 19: the shell closes its engine itself and tells a failed final flush") {
    TempDir dir("mvkv-shell");
    Result ok = json_c(dir.path, "create c; put c k v");
    CHECK(ok.code == 0);
    CHECK(ok.err.find("closing") == std::string::npos);
    // A failed fsync stops the engine's writes; the close's flush fails too.
    Result bad = json_c(dir.path, "failpoint failOplogFsync alwaysOn; put c k2 v");
    CHECK(bad.code == 1);
    CHECK(bad.err.find("mvkv: closing " + dir.path + ": IOError") != std::string::npos);
    Result after = json_c(dir.path, "get c k");
    CHECK(after.code == 0);
    CHECK(after.out.find("\"value\":\"v\"") != std::string::npos);
}

TEST_CASE("issue 19: failpoint forces a conflict on one key, failpoints lists it, bad input is refused (--json)") {
    Result r = json_c("--memory",
                      "create c\n"
                      "failpoint writeConflictOnKey times 1 \"key=a b\"\n"
                      "begin; put c other 1; put c \"a b\" 2\n"
                      "begin; put c \"a b\" 3; commit\n"
                      "failpoints\n"
                      "failpoint noSuchPoint alwaysOn\n"
                      "failpoint hangBeforeCommit sometimes\n"
                      "failpoint hangBeforeCommit times x\n"
                      "failpoint hangBeforeCommit activationProbability 2\n"
                      "failpoint hangBeforeCommit alwaysOn colour=red\n"
                      "get c \"a b\"; get c other");
    CHECK(r.code == 1);
    auto o = r.objects();
    REQUIRE(o.size() == 16);
    CHECK(o[1]["cmd"] == "failpoint");
    CHECK(o[1]["mode"] == "times 1");
    CHECK(o[1]["key"] == "a b");
    CHECK(o[4]["code"] == "WriteConflict");
    CHECK(o[4]["error"].get<std::string>().find("writeConflictOnKey") != std::string::npos);
    CHECK(o[7]["ok"] == true);  // times 1: used up
    bool listed = false;
    for (const json& f : o[8]["failpoints"]) {
        if (f["name"] == "writeConflictOnKey") {
            listed = true;
            CHECK(f["mode"] == "off");
            CHECK(f["timesEntered"].get<uint64_t>() >= 1);
        }
        CHECK_FALSE(f["description"].get<std::string>().empty());
    }
    CHECK(listed);
    CHECK(o[9]["code"] == "NotFound");
    for (size_t i = 10; i <= 13; ++i) {
        CAPTURE(i);
        CHECK(o[i]["code"] == "InvalidArgument");
    }
    CHECK(o[14]["value"] == "3");
    CHECK(o[15]["found"] == false);  // the aborted transaction's write
}

TEST_CASE("issue 19: a failed oplog fsync fails the write and every later one; a reopen keeps what was acknowledged") {
    TempDir dir("mvkv-shell");
    Result r = json_c(dir.path,
                      "create c; put c k1 v\n"
                      "failpoint failOplogFsync times 1\n"
                      "put c k2 v\nput c k3 v\nget c k1");
    CHECK(r.code == 1);
    auto o = r.objects();
    REQUIRE(o.size() == 6);
    CHECK(o[3]["code"] == "IOError");
    CHECK(o[4]["code"] == "IOError");
    CHECK(o[5]["value"] == "v");
    CHECK(getValue(dir.path, "c", "k1") == "v");
}

TEST_CASE("issue 19: failpoint and failpoints are in help") {
    const std::string all = helpUsages();
    for (const char* usage :
         {"failpoint NAME off|alwaysOn|times N|skip N|activationProbability P [key=K] [delay_ms=N] "
          "[error=eio|enospc|short]",
          "failpoints"})
        CHECK_MESSAGE(all.find(std::string(usage) + "\n") != std::string::npos, usage);
}
