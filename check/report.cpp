// CheckReport's JSON and text forms, and the anomalies' names.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "mvkv/check.h"

namespace mvkv::check {

std::string_view anomalyName(AnomalyType type) {
    switch (type) {
        case AnomalyType::kG0: return "G0";
        case AnomalyType::kG1a: return "G1a";
        case AnomalyType::kG1b: return "G1b";
        case AnomalyType::kG1c: return "G1c";
        case AnomalyType::kGSingle: return "G-single";
        case AnomalyType::kG2Item: return "G2-item";
        case AnomalyType::kGNonadjacent: return "G-nonadjacent";
        case AnomalyType::kLostUpdate: return "lost-update";
        case AnomalyType::kIncompatibleOrder: return "incompatible-order";
        case AnomalyType::kDuplicateElements: return "duplicate-elements";
        case AnomalyType::kGarbageRead: return "garbage-read";
    }
    return "unknown";
}

bool CheckReport::valid() const {
    for (const Anomaly& a : anomalies)
        if (a.forbidden)
            return false;
    return true;
}

std::string CheckReport::toJson() const {
    nlohmann::json j;
    j["valid"] = valid();
    j["model"] = std::string(modelName(model));
    j["operations"] = operations;
    j["transactions"] = transactions;
    j["committed"] = committed;
    j["failed"] = failed;
    j["indeterminate"] = indeterminate;
    j["anomalies"] = nlohmann::json::array();
    for (const Anomaly& a : anomalies)
        j["anomalies"].push_back({{"type", std::string(anomalyName(a.type))},
                                  {"forbidden", a.forbidden},
                                  {"explanation", a.explanation},
                                  {"lines", a.lines}});
    return j.dump();
}

std::string CheckReport::toText() const {
    std::string out;
    size_t forbidden = 0;
    for (const Anomaly& a : anomalies) {
        forbidden += a.forbidden;
        out += fmt::format("{} ({} under {}): {}\n", anomalyName(a.type),
                           a.forbidden ? "forbidden" : "allowed", modelName(model), a.explanation);
    }
    out += fmt::format(
        "{}: {} transactions ({} ok, {} fail, {} info), {} anomalies, {} forbidden under {}\n",
        valid() ? "valid" : "INVALID", transactions, committed, failed, indeterminate,
        anomalies.size(), forbidden, modelName(model));
    return out;
}

}  // namespace mvkv::check
