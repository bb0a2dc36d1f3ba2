#include "recovery/log_repair.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "oplog/log_format.h"
#include "util/file_sync.h"
#include "util/printable.h"

namespace mvkv::recovery {

namespace fs = std::filesystem;

namespace {

// A position with the segment header counted as "before any record", so
// that the damage at a segment's start and a position right after its
// header compare equal.
std::pair<uint64_t, uint64_t> ordered(oplog::LogPosition p) {
    return {p.segment, std::max<uint64_t>(p.offset, oplog::kSegmentHeaderBytes)};
}

bool before(oplog::LogPosition a, oplog::LogPosition b) {
    return ordered(a) < ordered(b);
}

std::string where(oplog::LogPosition p) {
    return fmt::format("segment {} offset {}", p.segment, p.offset);
}

// The log was whole up to `end` and is not: damage at the log's end.
void damageAtEnd(oplog::LogTail* tail, const std::string& dir, std::string reason) {
    tail->cut = true;
    tail->damage = oplog::LogDamage::kCorruption;
    tail->segment = tail->end.segment;
    tail->offset = tail->end.offset;
    tail->file = dir + "/" + oplog::segmentFileName(tail->end.segment);
    tail->bytesCut = 0;
    tail->reason = std::move(reason);
}

std::string utcNow(const char* format) {
    std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[64];
    std::strftime(buf, sizeof buf, format, &tm);
    return buf;
}

Status copyDurably(const std::string& from, const std::string& to) {
    std::error_code ec;
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
    if (ec)
        return Status::IOError(fmt::format("copy {} to {}: {}", from, to, ec.message()));
    int fd = ::open(to.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ioError("open", to);
    const bool synced = ::fsync(fd) == 0;
    Status s = synced ? Status::OK() : ioError("fsync", to);
    ::close(fd);
    return s;
}

nlohmann::json lostCommitJson(const DurableLog::Record& r) {
    nlohmann::json entries = nlohmann::json::array();
    for (const oplog::OplogEntry& e : r.entries) {
        nlohmann::json j = {{"op", std::string(1, static_cast<char>(e.op))}, {"ns", printable(e.ns, SIZE_MAX)}};
        if (e.op == oplog::OpType::kCommand)
            j["command"] = e.value;
        else
            j["key"] = printable(e.key, SIZE_MAX);
        entries.push_back(std::move(j));
    }
    return {{"ts", r.where.ts},
            {"txnId", r.entries.front().txnId},
            {"segment", r.where.segment},
            {"offset", r.where.offset},
            {"entries", std::move(entries)}};
}

// The shape repairLog writes, which readers (the shell) rely on.
bool validRepairRecord(const nlohmann::json& j) {
    auto str = [](const nlohmann::json& o, const char* k) {
        return o.contains(k) && o[k].is_string();
    };
    auto num = [](const nlohmann::json& o, const char* k) {
        return o.contains(k) && o[k].is_number_unsigned();
    };
    if (!j.is_array())
        return false;
    for (const auto& r : j) {
        if (!r.is_object() || !str(r, "time") || !str(r, "salvage") || !num(r, "lostCommitCount") ||
            !r.contains("damage") || !r["damage"].is_object() || !r.contains("lostCommits") ||
            !r["lostCommits"].is_array())
            return false;
        const auto& d = r["damage"];
        if (!str(d, "file") || !num(d, "offset") || !str(d, "reason") || !str(d, "kind"))
            return false;
        for (const auto& c : r["lostCommits"]) {
            if (!c.is_object() || !num(c, "ts") || !c.contains("entries") || !c["entries"].is_array())
                return false;
            for (const auto& e : c["entries"])
                if (!e.is_object() || !str(e, "op") || !str(e, "ns") ||
                    !(str(e, "key") || str(e, "command")))
                    return false;
        }
    }
    return true;
}

}  // namespace

void judgeDamage(const std::string& dir, DurableLog::Recovered* recovered,
                 const checkpoint::LoadedCheckpoint& checkpoint) {
    oplog::LogTail& tail = recovered->tail;
    if (tail.damage == oplog::LogDamage::kCorruption)
        return;
    // The oldest segments gone: the log must reach back to the checkpoint's
    // segment (capping never drops it), or to segment 1 without one.
    const uint64_t needFrom = checkpoint.loaded ? checkpoint.logEnd.segment : 1;
    if (tail.firstSegment > needFrom) {
        const uint64_t first = tail.firstSegment;
        tail.cut = true;
        tail.damage = oplog::LogDamage::kCorruption;
        tail.segment = first;  // a repair keeps none of what follows the gap
        tail.offset = 0;
        tail.file = dir + "/" + oplog::segmentFileName(first - 1);
        tail.reason = fmt::format(
            "segment {} is missing: the log starts at segment {}, but {} needs it from segment {}",
            first - 1, first,
            checkpoint.loaded ? fmt::format("checkpoint {}", checkpoint.number)
                              : std::string("a directory with no checkpoint"),
            needFrom);
        tail.bytesCut = 0;
        for (const DurableLog::Record& r : recovered->records)
            tail.bytesCut += oplog::kRecordHeaderBytes + r.where.length;
        tail.recordsAfter = recovered->records.size();
        tail.end = {first, 0};
        for (DurableLog::Record& r : recovered->records)
            recovered->after.push_back(std::move(r));
        recovered->records.clear();
        recovered->entries = 0;
        return;
    }
    if (tail.damage == oplog::LogDamage::kTornTail) {
        // A torn write can only be past everything that was synced.
        if (recovered->cleanEnd && before(tail.end, *recovered->cleanEnd)) {
            tail.damage = oplog::LogDamage::kCorruption;
            tail.reason += fmt::format(
                "; the log was closed cleanly at {}, past this point, so this is not a torn write",
                where(*recovered->cleanEnd));
        } else if (checkpoint.loaded && before(tail.end, checkpoint.logEnd)) {
            tail.damage = oplog::LogDamage::kCorruption;
            tail.reason += fmt::format(
                "; checkpoint {} began at {}, past this point, after the log up to there was "
                "synced, so this is not a torn write",
                checkpoint.number, where(checkpoint.logEnd));
        }
        return;
    }
    // The log reads cleanly to its end: is that end short?
    if (recovered->cleanEnd && before(tail.end, *recovered->cleanEnd)) {
        const oplog::LogPosition clean = *recovered->cleanEnd;
        damageAtEnd(&tail, dir,
                    fmt::format("the log ends at {}, but it was closed cleanly at {}: its end is "
                                "missing (a segment removed or cut short)",
                                where(tail.end), where(clean)));
    } else if (checkpoint.loaded && before(tail.end, checkpoint.logEnd)) {
        damageAtEnd(&tail, dir,
                    fmt::format("the log ends at {}, before checkpoint {}'s position {}: its end "
                                "is missing (a segment removed or cut short)",
                                where(tail.end), checkpoint.number, where(checkpoint.logEnd)));
    }
}

Status damageError(const std::string& dir, const DurableLog::Recovered& recovered) {
    const oplog::LogTail& t = recovered.tail;
    std::string follows =
        t.bytesCut == 0 && t.recordsAfter == 0
            ? std::string("nothing of the log is left after it")
            : fmt::format("{} good record{} ({} bytes from the damage to the end of the log) "
                          "follow it",
                          t.recordsAfter, t.recordsAfter == 1 ? "" : "s", t.bytesCut);
    return Status::Corruption(fmt::format(
        "{}: the oplog is damaged at {} offset {}: {}; {}. Nothing on disk was changed. To open "
        "it anyway, cutting the log at the damage (every segment cut is copied to {}/salvage/ "
        "first, and the commits lost are listed in {}/{}), open with --repair "
        "(EngineOptions::repair)",
        dir, t.file, t.offset, t.reason, follows, dir, dir, kRepairRecordName));
}

Status repairLog(DurableLog& log, const DurableLog::Recovered& recovered,
                 const checkpoint::LoadedCheckpoint& checkpoint, RepairOutcome* out) {
    *out = RepairOutcome{};
    const std::string& dir = log.dir();
    const oplog::LogTail& tail = recovered.tail;
    // Copies of every segment the cut touches, first.
    const std::string salvageRoot = dir + "/salvage";
    const std::string stamp = utcNow("%Y%m%dT%H%M%SZ");
    std::string salvage = salvageRoot + "/" + stamp;
    std::error_code ec;
    for (int n = 2; fs::exists(salvage, ec); ++n)  // two repairs within a second
        salvage = fmt::format("{}/{}-{}", salvageRoot, stamp, n);
    fs::create_directories(salvage, ec);
    if (ec)
        return Status::IOError(fmt::format("create {}: {}", salvage, ec.message()));
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        uint64_t n = 0;
        const std::string name = e.path().filename().string();
        if (oplog::parseSegmentFileName(name, &n) && n >= tail.segment)
            if (Status s = copyDurably(e.path().string(), salvage + "/" + name); !s.ok())
                return s;
    }
    if (ec)
        return Status::IOError(fmt::format("list {}: {}", dir, ec.message()));
    for (const std::string& d : {salvage, salvageRoot, dir})
        if (Status s = syncDirectory(d, "repair"); !s.ok())
            return s;
    out->salvageDir = salvage;
    // What the cut loses: the good records past the damage that the
    // checkpoint does not hold.
    nlohmann::json lost = nlohmann::json::array();
    uint64_t lostEntries = 0;
    for (const DurableLog::Record& r : recovered.after) {
        // As replay decides (engine/replay.cpp): the checkpoint holds every
        // data or prepare record at or below its timestamp, wherever it
        // lies, and the commands before its position; never a prepare above.
        const bool command = r.entries.front().op == oplog::OpType::kCommand &&
                             oplog::preparedRecordKind(r.entries) == oplog::PreparedRecord::kNone;
        const bool held =
            checkpoint.loaded &&
            (r.where.ts <= checkpoint.ts ||
             (command && before({r.where.segment, r.where.offset}, checkpoint.logEnd)));
        if (held) {
            ++out->heldByCheckpoint;
            continue;
        }
        ++out->lostCommits;
        lostEntries += r.entries.size();
        lost.push_back(lostCommitJson(r));
    }
    nlohmann::json repair = {
        {"time", utcNow("%Y-%m-%dT%H:%M:%SZ")},
        {"damage",
         {{"kind", std::string(oplog::logDamageName(tail.damage))},
          {"file", tail.file},
          {"segment", tail.segment},
          {"offset", tail.offset},
          {"reason", tail.reason},
          {"bytesCut", tail.bytesCut},
          {"recordsAfter", tail.recordsAfter}}},
        {"salvage", salvage},
        {"checkpoint", checkpoint.loaded ? nlohmann::json{{"number", checkpoint.number},
                                                          {"timestamp", checkpoint.ts}}
                                         : nlohmann::json(nullptr)},
        {"lostCommitCount", out->lostCommits},
        {"lostEntryCount", lostEntries},
        {"heldByCheckpoint", out->heldByCheckpoint},
        {"undecodableRecords", recovered.afterUndecodable},
        {"lostCommits", std::move(lost)}};
    auto previous = readRepairRecord(dir);
    nlohmann::json all = previous.ok() ? nlohmann::json::parse(previous.value())
                                       : nlohmann::json::array();
    all.push_back(std::move(repair));
    if (Status s = writeFileAtomically(
            dir, kRepairRecordName,
            all.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", "repair");
        !s.ok())
        return s;
    // Then the cut, once the clean-shutdown note is gone: a crash after the
    // cut must not find a note that says the log was longer.
    if (Status s = log.forgetCleanShutdown(); !s.ok())
        return s;
    if (Status s = log.cut(tail); !s.ok())
        return s;
    return Status::OK();
}

StatusWith<std::string> readRepairRecord(const std::string& dir) {
    const std::string path = dir + "/" + kRepairRecordName;
    std::ifstream in(path);
    if (!in)
        return std::string("[]");
    std::stringstream text;
    text << in.rdbuf();
    nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
    if (j.is_discarded() || !validRepairRecord(j))
        return Status::Corruption(fmt::format(
            "{} does not hold a repair record (an array of repairs as mvkv writes them); move it "
            "away to open the directory",
            path));
    return j.dump();
}

Status clearRepairRecord(const std::string& dir) {
    return removeFileDurably(dir, kRepairRecordName, "repair");
}

}  // namespace mvkv::recovery
