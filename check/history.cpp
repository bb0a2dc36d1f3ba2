// Parsing a JSON-lines history (docs/checker.md, "History format").
#include "check/history.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <unordered_map>

namespace mvkv::check {
namespace {

using json = nlohmann::json;

bool isScalar(const json& j) { return j.is_number_integer() || j.is_string(); }

// Checks one micro-op ["append"|"r"|"w", key, value] into `*op`; returns why it is bad.
std::string readOp(const json& j, Op* op) {
    if (!j.is_array() || j.size() != 3 || !j[0].is_string())
        return fmt::format("micro-op {} is not [f, key, value] with f \"append\", \"r\" or \"w\"",
                           j.dump());
    const std::string f = j[0].get<std::string>();
    if (!isScalar(j[1]))
        return fmt::format("micro-op {}: the key must be an integer or a string", j.dump());
    op->key = j[1].dump();
    const json& v = j[2];
    if (f == "append" || f == "w") {
        op->kind = f == "append" ? Op::Kind::kAppend : Op::Kind::kWrite;
        if (!isScalar(v))
            return fmt::format("micro-op {}: the value written must be an integer or a string",
                               j.dump());
        op->value = v.dump();
        return {};
    }
    if (f != "r")
        return fmt::format("micro-op {}: unknown f \"{}\" (append, r or w)", j.dump(), f);
    op->kind = Op::Kind::kRead;
    if (v.is_array()) {
        op->known = true;
        op->list.reserve(v.size());
        for (const json& e : v) {
            if (!isScalar(e))
                return fmt::format("micro-op {}: list elements must be integers or strings",
                                   j.dump());
            op->list.push_back(e.dump());
        }
    } else if (isScalar(v)) {
        op->known = true;
        op->value = v.dump();
    } else if (v.is_null()) {
        op->nil = true;  // a register read of nothing, or a list read not yet known
    } else {
        return fmt::format("micro-op {}: a read's value must be null, a list or a scalar",
                           j.dump());
    }
    return {};
}

}  // namespace

std::string txnName(const Transaction& txn) { return fmt::format("T{}", txn.line); }

std::string describe(const Transaction& txn) {
    std::string_view status = txn.status == TxnStatus::kOk     ? "ok"
                              : txn.status == TxnStatus::kFail ? "fail"
                                                               : "info";
    return fmt::format("T{} (line {}, process {}, {}: {})", txn.line, txn.line, txn.process,
                       status, txn.opsText);
}

ParseError parseHistory(std::string_view text, History* out) {
    *out = History{};
    struct Pending {
        uint64_t line;
        json value;
    };
    std::unordered_map<std::string, Pending> open;  // by process
    bool sawAppend = false, sawWrite = false, sawListRead = false, sawRegisterRead = false;
    uint64_t lineNo = 0;
    size_t pos = 0;
    while (pos <= text.size()) {
        size_t end = text.find('\n', pos);
        if (end == std::string_view::npos)
            end = text.size();
        std::string_view line = text.substr(pos, end - pos);
        pos = end + 1;
        ++lineNo;
        if (line.find_first_not_of(" \t\r") == std::string_view::npos) {
            if (end == text.size())
                break;
            continue;
        }
        auto bad = [&](std::string why) { return ParseError{std::move(why), lineNo}; };
        json j = json::parse(line, nullptr, false);
        if (j.is_discarded())
            return bad("not a JSON object (one operation per line)");
        if (!j.is_object())
            return bad("not a JSON object (one operation per line)");
        ++out->operations;
        if (!j.contains("process") || !isScalar(j["process"]))
            return bad("\"process\" is missing or not an integer or string");
        if (!j.contains("type") || !j["type"].is_string())
            return bad("\"type\" is missing (invoke, ok, fail or info)");
        if (j.contains("f") && j["f"] != "txn")
            return bad(fmt::format("\"f\" is {}: only \"txn\" operations are checked",
                                   j["f"].dump()));
        const std::string process = j["process"].dump();
        const std::string type = j["type"].get<std::string>();
        json value = j.contains("value") ? j["value"] : json();
        if (!value.is_null() && !value.is_array())
            return bad("\"value\" must be a list of micro-ops");
        if (type == "invoke") {
            if (value.is_null())
                return bad("an invoke needs its micro-ops in \"value\"");
            auto it = open.find(process);
            if (it != open.end())
                return bad(fmt::format("process {} invokes again while its invoke at line {} "
                                       "has not completed",
                                       process, it->second.line));
            open.emplace(process, Pending{lineNo, std::move(value)});
            continue;
        }
        TxnStatus status;
        if (type == "ok")
            status = TxnStatus::kOk;
        else if (type == "fail")
            status = TxnStatus::kFail;
        else if (type == "info")
            status = TxnStatus::kInfo;
        else
            return bad(fmt::format("unknown type \"{}\" (invoke, ok, fail or info)", type));
        auto it = open.find(process);
        if (it == open.end())
            return bad(fmt::format("a completion ({}) of process {} with no invoke before it",
                                   type, process));
        Transaction txn;
        txn.line = lineNo;
        txn.process = process;
        txn.status = status;
        // An info or fail completion may leave the results out: the invoke's
        // micro-ops (no read results) stand.
        const json& ops = value.is_null() ? it->second.value : value;
        if (ops.size() != it->second.value.size())
            return bad(fmt::format("the completion has {} micro-ops, its invoke at line {} has {}",
                                   ops.size(), it->second.line, it->second.value.size()));
        txn.opsText = ops.dump();
        for (const json& o : ops) {
            Op op;
            if (std::string why = readOp(o, &op); !why.empty())
                return bad(why);
            if (status != TxnStatus::kOk && op.kind == Op::Kind::kRead)
                op.known = false;  // only a committed transaction's reads are evidence
            sawAppend |= op.kind == Op::Kind::kAppend;
            sawWrite |= op.kind == Op::Kind::kWrite;
            if (op.kind == Op::Kind::kRead && op.known) {
                bool isList = o[2].is_array();
                sawListRead |= isList;
                sawRegisterRead |= !isList;
            }
            txn.ops.push_back(std::move(op));
        }
        if ((sawAppend || sawListRead) && (sawWrite || sawRegisterRead))
            return bad("the history mixes list-append (append, list reads) and register (w, "
                       "scalar reads) micro-ops; check them as two histories");
        open.erase(it);
        out->txns.push_back(std::move(txn));
    }
    // Invokes never completed: indeterminate, with their writes possibly applied.
    for (auto& [process, pending] : open) {
        Transaction txn;
        txn.line = pending.line;
        txn.process = process;
        txn.status = TxnStatus::kInfo;
        txn.opsText = pending.value.dump();
        for (const json& o : pending.value) {
            Op op;
            if (std::string why = readOp(o, &op); !why.empty())
                return ParseError{why, pending.line};
            op.known = false;
            txn.ops.push_back(std::move(op));
        }
        out->txns.push_back(std::move(txn));
    }
    out->listAppend = sawAppend || sawListRead || !(sawWrite || sawRegisterRead);
    return {};
}

}  // namespace mvkv::check
