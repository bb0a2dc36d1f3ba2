// The built mvkv-bench (MVKV_BENCH: its full path, set by tests/meson.build)
// run as a child process for the flags that answer without running a
// workload: --version, --list, --help, and a bad flag (exit status 2).
// The workloads themselves are smoke-run in-process by bench_workload_test.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tests/version_check.h"

namespace {

struct Result {
    int code = -1;  // the exit status; -1 when killed by a signal
    std::string out, err;
};

/// Runs mvkv-bench with `args`, stdin empty, and collects stdout, stderr and
/// the exit status.
Result runBench(const std::vector<std::string>& args) {
    const char* exe = std::getenv("MVKV_BENCH");
    REQUIRE_MESSAGE(exe != nullptr,
                    "MVKV_BENCH (the built mvkv-bench) is not set: run via meson test");
    int outPipe[2], errPipe[2];
    REQUIRE(::pipe2(outPipe, O_CLOEXEC) == 0);
    REQUIRE(::pipe2(errPipe, O_CLOEXEC) == 0);
    std::vector<std::string> argvStore = {exe};
    argvStore.insert(argvStore.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argvStore)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        int devNull = ::open("/dev/null", O_RDONLY);
        ::dup2(devNull, 0);
        ::dup2(outPipe[1], 1);
        ::dup2(errPipe[1], 2);
        ::execv(exe, argv.data());
        ::_exit(127);
    }
    ::close(outPipe[1]);
    ::close(errPipe[1]);
    Result r;
    pollfd fds[2] = {{outPipe[0], POLLIN, 0}, {errPipe[0], POLLIN, 0}};
    std::string* into[2] = {&r.out, &r.err};
    int open = 2;
    while (open > 0) {
        REQUIRE(::poll(fds, 2, 30'000) > 0);  // these flags answer at once
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || fds[i].revents == 0)
                continue;
            char buf[4096];
            ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
            if (n > 0) {
                into[i]->append(buf, static_cast<size_t>(n));
            } else {
                ::close(fds[i].fd);
                fds[i].fd = -1;  // poll ignores it from now on
                --open;
            }
        }
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

}  // namespace

TEST_CASE("mvkv-bench --version prints the version, git revision and build type, and exits 0") {
    Result r = runBench({"--version"});
    CHECK(r.code == 0);
    CHECK(r.err.empty());
    mvkv::testing::checkVersionOutput("mvkv-bench", r.out);
}

TEST_CASE("mvkv-bench --list and --help exit 0; a bad flag exits 2") {
    Result list = runBench({"--list"});
    CHECK(list.code == 0);
    CHECK(list.out.find("readrandom") != std::string::npos);
    Result help = runBench({"--help"});
    CHECK(help.code == 0);
    CHECK(help.out.find("--version") != std::string::npos);
    Result bad = runBench({"--no-such-flag"});
    CHECK(bad.code == 2);
    CHECK_FALSE(bad.err.empty());
}
