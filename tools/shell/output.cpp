#include "output.h"

#include <fmt/format.h>

namespace mvkv::tools {

nlohmann::ordered_json replyJson(const Reply& reply) {
    nlohmann::ordered_json j;
    j["cmd"] = reply.cmd;
    j["session"] = reply.session;
    j["ok"] = reply.status.ok();
    if (!reply.status.ok()) {
        j["code"] = std::string(statusCodeName(reply.status.code()));
        j["error"] = reply.status.message();
        if (!reply.hint.empty())
            j["hint"] = reply.hint;
        return j;
    }
    for (const auto& [k, v] : reply.fields.items())
        j[k] = v;
    return j;
}

void printReply(const Reply& reply, bool json, std::FILE* out, std::FILE* err) {
    if (json) {
        // Byte strings are already UTF-8 or $binary; messages may quote a
        // key: replace anything invalid rather than fail.
        std::string line =
            replyJson(reply).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
        fmt::print(out, "{}\n", line);
        std::fflush(out);
        return;
    }
    if (!reply.status.ok()) {
        fmt::print(err, "error: {}: {}\n", statusCodeName(reply.status.code()),
                   reply.status.message());
        if (!reply.hint.empty())
            fmt::print(err, "hint: {}\n", reply.hint);
        std::fflush(err);
        return;
    }
    for (const std::string& l : reply.lines)
        fmt::print(out, "{}\n", l);
    std::fflush(out);
}

}  // namespace mvkv::tools
