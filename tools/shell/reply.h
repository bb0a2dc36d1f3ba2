// Reply: what one shell command produced, before it is printed. The same
// Reply prints as human text (output.h) or as exactly one JSON object
// (--json): {"cmd":..., "session":..., "ok":true, ...fields} or
// {"cmd":..., "session":..., "ok":false, "code":"WriteConflict", "error":..., "hint":...}.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mvkv/status.h"

namespace mvkv::tools {

struct Reply {
    std::string cmd;      // the command word, lower case ("" for an empty line)
    std::string session;  // the session it ran in
    Status status;        // !ok: an error line (human) or ok:false (JSON)
    std::string hint;     // what to do about the error, when there is something to say
    nlohmann::ordered_json fields = nlohmann::ordered_json::object();  // JSON fields after "ok"
    std::vector<std::string> lines;  // human output, one line each (stdout)
    bool quit = false;               // quit / exit

    static Reply error(Status s, std::string hint = {}) {
        Reply r;
        r.status = std::move(s);
        r.hint = std::move(hint);
        return r;
    }
};

}  // namespace mvkv::tools
