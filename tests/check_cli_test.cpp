// The built mvkv-check (MVKV_CHECK: its full path, set by tests/meson.build)
// run as a child process: its output and exit status (0 valid, 1 a
// forbidden anomaly, 2 bad usage or input).
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

struct Result {
    int code = -1;
    std::string out;  // stdout and stderr
};

Result runCheck(const std::string& args) {
    const char* exe = std::getenv("MVKV_CHECK");
    REQUIRE_MESSAGE(exe != nullptr, "MVKV_CHECK (the built mvkv-check) is not set: run via meson test");
    std::string command = std::string(exe) + " " + args + " 2>&1";
    FILE* pipe = ::popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    Result r;
    char buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof buf, pipe))
        r.out.append(buf, n);
    int status = ::pclose(pipe);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

std::string writeHistory(const std::string& name, const std::string& text) {
    std::filesystem::path p = std::filesystem::temp_directory_path() /
                              ("mvkv-check-cli-" + std::to_string(::getpid()) + "-" + name);
    std::ofstream(p) << text;
    return p.string();
}

// Write skew: allowed under snapshot isolation, forbidden under serializable.
const char* kWriteSkew =
    R"({"process":0,"type":"invoke","value":[["r","x",null],["r","y",null],["append","x",1]]}
{"process":1,"type":"invoke","value":[["r","x",null],["r","y",null],["append","y",2]]}
{"process":0,"type":"ok","value":[["r","x",[]],["r","y",[]],["append","x",1]]}
{"process":1,"type":"ok","value":[["r","x",[]],["r","y",[]],["append","y",2]]}
{"process":2,"type":"invoke","value":[["r","x",null],["r","y",null]]}
{"process":2,"type":"ok","value":[["r","x",[1]],["r","y",[2]]]}
)";

}  // namespace

TEST_CASE("mvkv-check: exit status by model, --json, bad input") {
    std::string path = writeHistory("skew.jsonl", kWriteSkew);
    Result si = runCheck(path);
    CHECK(si.code == 0);
    CHECK(si.out.find("G2-item (allowed under snapshot-isolation)") != std::string::npos);
    Result ser = runCheck("--model serializable --json " + path);
    CHECK(ser.code == 1);
    CHECK(ser.out.find(R"("type":"G2-item")") != std::string::npos);
    CHECK(ser.out.find(R"("valid":false)") != std::string::npos);

    std::string bad = writeHistory("bad.jsonl", std::string(kWriteSkew) + "{oops\n");
    Result b = runCheck(bad);
    CHECK(b.code == 2);
    CHECK(b.out.find("mvkv-check: " + bad + ": line 7: ") != std::string::npos);
    Result missing = runCheck("/nonexistent/history.jsonl");
    CHECK(missing.code == 2);
    CHECK(missing.out.find(
              "mvkv-check: cannot read /nonexistent/history.jsonl: No such file or directory") !=
          std::string::npos);
    CHECK(runCheck("--model linearizable " + path).code == 2);
    CHECK(runCheck("").code == 2);
    std::filesystem::remove(path);
    std::filesystem::remove(bad);
}
