// fuzz/tokenizer: the shell's line tokenizer (tools/shell/tokenizer.h) on
// any bytes. Checks: no crash, no sanitizer report, a refused line says
// why, and a line that splits gives only commands of at least one word.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tools/shell/bytes.h"
#include "tools/shell/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view line(reinterpret_cast<const char*>(data), size);
    auto split = mvkv::tools::splitLine(line);
    if (!split.ok()) {
        if (split.status().message().empty())
            std::abort();  // every refusal says why
        return 0;
    }
    for (const auto& command : split.value()) {
        if (command.empty())
            std::abort();  // splitLine promises non-empty commands
        for (const auto& word : command)
            (void)mvkv::tools::displayBytes(word.text, 64);
    }
    return 0;
}
