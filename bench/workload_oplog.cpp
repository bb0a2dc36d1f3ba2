// Workload "oplog": the oplog's log writer alone (oplog/log_writer.h): one
// 100-byte record appended per op, into a fresh log directory under --dir.
//
// Cases (each at every --threads count):
//   append_none   SyncMode::kNone: buffered, written every 256 KiB
//   append_write  SyncMode::kWrite: write(2) before returning
//   append_fsync  SyncMode::kFsync: fdatasync before returning
// Group commit makes concurrent appenders share writes and syncs: the
// metrics records_per_sync (append_fsync) and records_per_write show how
// many records one batch carried; scaling compares with 1 thread. These are
// commits of the log alone: the engine does not write the oplog yet (the
// rest of the oplog issue).
#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include "bench/harness.h"
#include "bench/workload.h"
#include "oplog/log_writer.h"

namespace mvkv::bench {
namespace {

constexpr std::string_view kWorkload = "oplog";

struct Case {
    std::string_view name;
    oplog::SyncMode mode;
};

const Case kCases[] = {
    {"append_none", oplog::SyncMode::kNone},
    {"append_write", oplog::SyncMode::kWrite},
    {"append_fsync", oplog::SyncMode::kFsync},
};

ResultRow runCase(const Case& c, const BenchConfig& config, int threads) {
    std::filesystem::path dir =
        baseDirectory(config) / fmt::format("mvkv-bench-oplog-{}-t{}", c.name, threads);
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    std::filesystem::create_directories(dir, ec);
    if (ec) {
        ResultRow row;
        row.workload = std::string(kWorkload);
        row.caseName = std::string(c.name);
        row.threads = threads;
        row.error = fmt::format("cannot create {}: {}", dir.string(), ec.message());
        return row;
    }
    oplog::LogWriter::Stats stats;
    Measurement m = repeatRuns(config.repeat, [&] {
        auto created = oplog::LogWriter::create({dir.string()}, 1);
        if (!created.ok())
            throw std::runtime_error(created.status().toString());
        std::shared_ptr<oplog::LogWriter> writer = std::move(created).value();
        Measurement run = runParallel(threads, limitsFor(config), [&](int) {
            return [writer, mode = c.mode, payload = std::string(config.valueSize, 'r')] {
                Status s = writer->append(payload, mode);
                if (!s.ok())
                    throw std::runtime_error(s.toString());
            };
        });
        stats = writer->stats();
        writer->close().ignore();
        std::filesystem::remove_all(dir, ec);
        std::filesystem::create_directories(dir, ec);
        return run;
    });
    std::filesystem::remove_all(dir, ec);
    ResultRow row = toRow(kWorkload, c.name, threads, m);
    if (stats.batches > 0)
        row.setMetric("records_per_write", double(stats.records) / double(stats.batches));
    if (c.mode == oplog::SyncMode::kFsync && stats.syncs > 0)
        row.setMetric("records_per_sync", double(stats.records) / double(stats.syncs));
    return row;
}

WorkloadResult runOplogWorkload(const BenchConfig& config) {
    WorkloadResult result;
    for (int threads : config.threads) {
        for (const Case& c : kCases) {
            if (config.wantCase(c.name))
                result.rows.push_back(runCase(c, config, threads));
        }
    }
    addScaling(result.rows);
    result.notes.push_back(fmt::format(
        "records of {} bytes into 64 MiB segments under {}; the log writer alone, not yet "
        "engine commits",
        config.valueSize, baseDirectory(config).string()));
    return result;
}

}  // namespace

void registerOplogWorkload(WorkloadRegistry& registry) {
    Workload w;
    w.name = std::string(kWorkload);
    w.description =
        "the oplog's log writer: appends per second with sync none, write and fsync "
        "(group commit shares writes and syncs between threads)";
    for (const Case& c : kCases)
        w.caseNames.emplace_back(c.name);
    w.run = runOplogWorkload;
    registry.add(std::move(w));
}

}  // namespace mvkv::bench
