// fuzz/shell_line: the shell's command layer (tools/shell/) driven by a
// script of lines on a fresh in-memory engine per input, as `mvkv --memory`
// runs one: each line tokenized, each command run and its reply printed in
// both forms. Checks: no crash, no sanitizer report, no hang (libFuzzer's
// -timeout), and every failed command says why.
//
// Left out, as they start threads that outlive a command or wait on
// purpose: bg, wait, tail, watch, rs (a replica set), failpoint (it can
// abort the process by design), lock (document locks can wait); and `set`
// of the wait limits, which the harness keeps at 1 ms in every session so
// a lock held by another of the script's sessions costs 1 ms, not 5 s.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "mvkv/engine.h"
#include "shell/output.h"
#include "shell/shell.h"
#include "shell/tokenizer.h"

namespace {

std::string lowerWord(const mvkv::tools::Command& command, size_t i) {
    std::string word(command[i].text.substr(0, 32));
    for (char& c : word)
        c = char(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    return word;
}

std::string firstWord(const mvkv::tools::Command& command) {
    return lowerWord(command, 0);
}

bool leftOut(const mvkv::tools::Command& command) {
    const std::string word = firstWord(command);
    for (const char* name : {"bg", "wait", "tail", "watch", "rs", "failpoint", "lock"})
        if (word == name)
            return true;
    if (word != "set" || command.size() < 2)
        return false;
    const std::string what = lowerWord(command, 1);  // `set` ignores case too
    return what.find("timeout") != std::string::npos || what.find("retry") != std::string::npos;
}

mvkv::tools::Command words(std::initializer_list<const char*> ws) {
    mvkv::tools::Command c;
    for (const char* w : ws)
        c.push_back({w, false});
    return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size > 4096)
        return 0;  // a script, not a value: long values are the tokenizer's target
    mvkv::EngineOptions options;  // empty path: in memory
    options.writeConflictRetryTimeout = std::chrono::milliseconds(1);
    auto opened = mvkv::Engine::open(options);
    if (!opened.ok())
        std::abort();
    std::unique_ptr<mvkv::Engine> engine = std::move(opened).value();
    static std::FILE* devnull = std::fopen("/dev/null", "w");
    {
        mvkv::tools::Shell shell(*engine);
        auto limitWaits = [&] {
            shell.execute(words({"set", "lock_timeout_ms", "1"}));
            shell.execute(words({"set", "retry_ms", "1"}));
        };
        limitWaits();
        std::string_view script(reinterpret_cast<const char*>(data), size);
        int lines = 0;
        while (!script.empty() && ++lines <= 64) {
            size_t nl = script.find('\n');
            std::string_view line = script.substr(0, nl);
            script = nl == std::string_view::npos ? std::string_view() : script.substr(nl + 1);
            auto split = mvkv::tools::splitLine(line);
            if (!split.ok())
                continue;
            for (const mvkv::tools::Command& command : split.value()) {
                if (command.empty() || leftOut(command))
                    continue;
                mvkv::tools::Reply reply = shell.execute(command);
                if (!reply.status.ok() && reply.status.message().empty())
                    std::abort();
                mvkv::tools::printReply(reply, false, devnull, devnull);
                mvkv::tools::printReply(reply, true, devnull, devnull);
                if (reply.quit)
                    return 0;
                if (firstWord(command) == "session" && reply.status.ok())
                    limitWaits();  // a new session starts with the shell's 5 s
            }
        }
    }
    return 0;
}
