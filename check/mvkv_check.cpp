// mvkv-check: checks a recorded history for isolation anomalies
// (docs/checker.md, "The command").
//
//   mvkv-check [--model snapshot-isolation|serializable] [--json] HISTORY_FILE
//
// Exit status: 0 when no anomaly is forbidden by the model, 1 when some is,
// 2 on bad usage or a history that cannot be read or checked (the message
// names the file, and the line and why, or the system's reason).
#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <string_view>

#include "mvkv/check.h"

namespace {

constexpr std::string_view kUsage =
    "usage: mvkv-check [--model snapshot-isolation|serializable] [--json] HISTORY_FILE\n";

int usage(const std::string& why) {
    fmt::print(stderr, "mvkv-check: {}\n{}", why, kUsage);
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    mvkv::check::Model model = mvkv::check::Model::kSnapshotIsolation;
    bool json = false;
    std::string path;
    for (int i = 1; i < argc; ++i) {
        std::string_view arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            fmt::print("{}", kUsage);
            return 0;
        }
        if (arg == "--json") {
            json = true;
        } else if (arg == "--model" || arg.starts_with("--model=")) {
            std::string_view name;
            if (arg == "--model") {
                if (++i == argc)
                    return usage("--model needs a value");
                name = argv[i];
            } else {
                name = arg.substr(8);
            }
            auto parsed = mvkv::check::parseModel(name);
            if (!parsed)
                return usage(fmt::format("unknown model \"{}\"", name));
            model = *parsed;
        } else if (arg.starts_with("-")) {
            return usage(fmt::format("unknown option {}", arg));
        } else if (path.empty()) {
            path = arg;
        } else {
            return usage("one history file only");
        }
    }
    if (path.empty())
        return usage("no history file given");
    const auto checked = mvkv::check::checkHistoryFile(path, model);
    if (!checked.ok()) {
        fmt::print(stderr, "mvkv-check: {}\n", checked.status().message());
        return 2;
    }
    const mvkv::check::CheckReport& report = checked.value();
    if (json)
        fmt::print("{}\n", report.toJson());
    else
        fmt::print("{}", report.toText());
    return report.valid() ? 0 : 1;
}
