// failpoint and failpoints: MongoDB's configureFailPoint from the shell
// (docs/failpoints.md).
#include <fmt/format.h>

#include <optional>

#include "mvkv/failpoint.h"
#include "command_table.h"
#include "shell.h"

namespace mvkv::tools {

namespace {

using Json = nlohmann::ordered_json;

Json infoJson(const FailPointInfo& f) {
    Json j;
    j["name"] = f.name;
    j["mode"] = failPointModeText(f.mode);
    j["key"] = f.data.key;
    j["delayMs"] = f.data.delayMs;
    j["error"] = f.data.error;
    j["timesEntered"] = f.timesEntered;
    j["description"] = f.description;
    return j;
}

// failpoint NAME MODE [N|P] [key=K] [delay_ms=N]: a quoted key may hold spaces.
Reply failpoint(Shell&, const Args& a) {
    std::string modeText;
    std::optional<std::string> key;
    for (size_t i = 1; i < a.size(); ++i) {
        if (a[i].text.starts_with("key=")) {
            key = a[i].text.substr(4);
            continue;
        }
        modeText += (modeText.empty() ? "" : " ") + a[i].text;
    }
    auto setting = parseFailPointSetting(modeText);
    if (!setting.ok())
        return Reply::error(setting.status(), "e.g. failpoint writeConflictOnKey times 2 key=k1");
    FailPointSetting s = std::move(setting).value();
    if (key)
        s.data.key = *key;
    auto entered = configureFailPoint(a[0].text, s.mode, s.data);
    if (!entered.ok())
        return Reply::error(entered.status(), "`failpoints` lists every name");
    Reply r;
    r.fields["name"] = a[0].text;
    r.fields["mode"] = failPointModeText(s.mode);
    r.fields["key"] = s.data.key;
    r.fields["delayMs"] = s.data.delayMs;
    r.fields["error"] = s.data.error;
    r.fields["timesEntered"] = entered.value();
    r.lines.push_back(fmt::format("failpoint {}: {}{}{}{} (fired {} times so far)", a[0].text,
                                  failPointModeText(s.mode),
                                  s.data.key.empty() ? "" : " key=" + s.data.key,
                                  s.data.delayMs ? fmt::format(" delay_ms={}", s.data.delayMs) : "",
                                  s.data.error.empty() ? "" : " error=" + s.data.error,
                                  entered.value()));
    return r;
}

Reply failpoints(Shell&, const Args&) {
    Reply r;
    Json all = Json::array();
    for (const FailPointInfo& f : listFailPoints()) {
        r.lines.push_back(fmt::format("{:<28} {:<26} fired {:>6}  {}", f.name,
                                      failPointModeText(f.mode) +
                                          (f.data.key.empty() ? "" : " key=" + f.data.key),
                                      f.timesEntered, f.description));
        all.push_back(infoJson(f));
    }
    r.fields["failpoints"] = std::move(all);
    return r;
}

}  // namespace

void addFailPointCommands(CommandTable& t) {
    auto global = [&](CommandSpec spec) { t.add(std::move(spec)).usesSession = false; };
    global({"failpoint", "failpoint NAME off|alwaysOn|times N|skip N|activationProbability P [key=K] [delay_ms=N] [error=eio|enospc|short]",
            "set a failpoint (MongoDB's configureFailPoint); `failpoints` lists them", 2, 5,
            failpoint});
    global({"failpoints", "failpoints", "every failpoint: mode, data, times fired, what it does",
            0, 0, failpoints});
}

}  // namespace mvkv::tools
