// HistoryRecorder: JSON lines as checkHistory() reads them.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>

#include "mvkv/check.h"

namespace mvkv::check {

std::string HistoryRecorder::formatLine(int64_t process, std::string_view type,
                                        const std::vector<MicroOp>& ops) {
    nlohmann::json value = nlohmann::json::array();
    for (const MicroOp& op : ops) {
        nlohmann::json result;  // null unless known
        std::string f;
        switch (op.kind) {
            case MicroOp::Kind::kAppend: f = "append"; break;
            case MicroOp::Kind::kWrite: f = "w"; break;
            case MicroOp::Kind::kRead: f = "r"; break;
        }
        if (op.kind != MicroOp::Kind::kRead) {
            if (op.value)
                result = *op.value;
        } else if (op.listRead) {
            if (op.list)
                result = *op.list;
        } else if (op.value) {
            result = *op.value;
        }
        value.push_back({f, op.key, result});
    }
    nlohmann::json line = {
        {"process", process}, {"type", std::string(type)}, {"f", "txn"}, {"value", value}};
    return line.dump();
}

Status HistoryRecorder::openFile(const std::string& path) {
    std::lock_guard lock(mu_);
    if (file_.is_open())
        return Status::IllegalOperation(
            fmt::format("the history is already written to {}: one file per recorder", path_));
    file_.open(path, std::ios::out | std::ios::trunc | std::ios::binary);
    if (!file_) {
        const int openErrno = errno;
        file_.clear();
        return Status::IOError(
            fmt::format("cannot open {} for writing: {}", path, std::strerror(openErrno)));
    }
    path_ = path;
    file_ << text_;
    return Status::OK();
}

void HistoryRecorder::record(int64_t process, std::string_view type,
                             const std::vector<MicroOp>& ops) {
    std::string line = formatLine(process, type, ops);
    line += '\n';
    std::lock_guard lock(mu_);
    text_ += line;
    ++lines_;
    if (file_.is_open())
        file_ << line;
}

std::string HistoryRecorder::text() const {
    std::lock_guard lock(mu_);
    return text_;
}

uint64_t HistoryRecorder::lines() const {
    std::lock_guard lock(mu_);
    return lines_;
}

Status HistoryRecorder::flush() {
    std::lock_guard lock(mu_);
    if (!file_.is_open())
        return Status::OK();
    file_.flush();
    if (!file_)
        return Status::IOError(fmt::format(
            "writing the history to {} failed ({}): the file may lack lines; text() has them all",
            path_, std::strerror(errno)));
    return Status::OK();
}

}  // namespace mvkv::check
