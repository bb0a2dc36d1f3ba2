// Workload "history": mvkv's history store (docs/history.md), in memory.
//
// Cases (each measured at every --threads count):
//   read_newest  an implicit get of a random key: its newest version, at the
//                head of the chain (the baseline).
//   read_old     a get of a random key in a transaction at read timestamp 10,
//                begun before every key was overwritten at 20 and swept: the
//                chain holds only the newer version, so every read is served
//                by the history store (a cursor seekForPrev in its B+tree).
// ratio = ns/op over read_newest at the same thread count. Every read checks
// it got the version of its timestamp.
//
// Then, untimed, the memory figure of issue 5: --keys keys overwritten round
// after round (oldest and stable follow the newest commit, as mongod moves
// them), once with no reader and once with one reader pinned at the start;
// after each round: history entries, history MB and resident memory. The
// pinned reader then ends and one sweep runs, then one more round (freed
// memory is reused, not returned to the system, so resident memory stays
// where it was). Printed as a table under the results (and kept in --json
// as notes).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.h"
#include "keys.h"
#include "sysinfo.h"
#include "workload.h"
#include "mvkv/engine.h"

namespace mvkv::bench {
namespace {

constexpr std::string_view kWorkload = "history";
constexpr std::string_view kNs = "bench.history";
constexpr int kRounds = 5;

std::unique_ptr<Engine> openEngine() {
    EngineOptions options;
    options.historySweepInterval = std::chrono::milliseconds(0);  // sweeps on demand only
    // No oplog: each round commits its batches at one timestamp, which an
    // oplog (commits in timestamp order) would refuse.
    options.inMemoryOplogCapBytes = 0;
    return mustValue(Engine::open(options), "open");
}

/// The history store's size (serverStatus "historyStore").
struct HistoryFigures {
    uint64_t entries = 0;
    uint64_t bytes = 0;
    static HistoryFigures of(Engine& engine) {
        const std::string text =
            mustValue(engine.serverStatus("historyStore"), "serverStatus historyStore");
        const nlohmann::json h = nlohmann::json::parse(text).at("historyStore");
        return {h.at("entries").get<uint64_t>(), h.at("bytes").get<uint64_t>()};
    }
};

std::string valueFor(uint64_t i, int round, size_t size) {
    std::string v = fmt::format("k{}r{}", i, round);
    v.resize(std::max(size, v.size()), '.');
    return v;
}

// Writes every key once at `ts`, 1000 keys per transaction.
void writeRound(Session& s, const KeyFormat& keys, uint64_t count, size_t valueSize,
                int round, Timestamp ts) {
    std::string key(keys.size(), '\0');
    for (uint64_t i = 0; i < count; i += 1000) {
        must(s.begin(), "begin");
        for (uint64_t j = i; j < std::min(count, i + 1000); ++j) {
            keys.make(key.data(), j);
            must(s.put(kNs, key, valueFor(j, round, valueSize)), "put");
        }
        must(s.commit(ts).status(), "commit");
    }
}

Measurement runReads(Engine& engine, const KeyFormat& keys, const BenchConfig& config,
                     int threads, bool old) {
    return repeatRuns(config.repeat, [&] {
        return runParallel(threads, limitsFor(config), [&](int index) {
            std::shared_ptr<Session> session = mustValue(engine.openSession(), "open a session");
            if (old)
                must(session->begin({10}), "begin at ts 10");
            return [session, &keys, &config, old, rng = Rng(config.seed + 7 * uint64_t(index)),
                    key = std::string(keys.size(), '\0'), value = std::string(),
                    want = std::string()]() mutable {
                uint64_t i = rng.below(config.keys);
                keys.make(key.data(), i);
                must(session->get(kNs, key, &value), "get");
                // The round's stamp, without building the whole value.
                want = fmt::format("k{}r{}", i, old ? 0 : 1);
                if (value.compare(0, want.size(), want) != 0)
                    throw std::runtime_error("read the wrong version of " + want);
            };
        });
    });
}

// Overwrites every key kRounds times; with `pinned`, a reader at the first
// round's timestamp stays open throughout. One line per round.
std::vector<std::string> memoryOverTime(const BenchConfig& config, const KeyFormat& keys,
                                        bool pinned) {
    auto engine = openEngine();
    auto writer = mustValue(engine->openSession(), "open a session");
    auto reader = mustValue(engine->openSession(), "open a session");
    must(writer->createCollection(kNs), "create");
    Timestamp ts = 10;
    writeRound(*writer, keys, config.keys, config.valueSize, 0, ts);
    must(engine->setStableTimestamp(ts), "stable");
    must(engine->setOldestTimestamp(ts), "oldest");
    if (pinned)
        must(reader->begin({ts}), "begin pinned reader");
    std::vector<std::string> lines;
    auto sample = [&](const std::string& when) {
        const HistoryFigures h = HistoryFigures::of(*engine);
        lines.push_back(fmt::format("  {:<9} {:<22} {:>10} {:>11.1f} {:>10.1f} {:>8}",
                                    pinned ? "pinned" : "no reader", when, h.entries,
                                    double(h.bytes) / 1e6, currentRssMb(),
                                    engine->stats().maxChainLength));
    };
    sample("loaded");
    for (int round = 1; round <= kRounds; ++round) {
        ts += 10;
        writeRound(*writer, keys, config.keys, config.valueSize, round, ts);
        must(engine->setStableTimestamp(ts), "stable");
        must(engine->setOldestTimestamp(ts), "oldest");
        must(engine->sweepHistory(), "sweep");
        sample(fmt::format("after round {}", round));
    }
    if (pinned) {
        must(reader->commit().status(), "end pinned reader");
        must(engine->sweepHistory(), "sweep");
        sample("reader ended, 1 sweep");
        // Freed memory is reused, not given back to the system: one more
        // round does not grow the process.
        ts += 10;
        writeRound(*writer, keys, config.keys, config.valueSize, kRounds + 1, ts);
        must(engine->setStableTimestamp(ts), "stable");
        must(engine->setOldestTimestamp(ts), "oldest");
        must(engine->sweepHistory(), "sweep");
        sample("one more round");
    }
    return lines;
}

WorkloadResult runHistoryWorkload(const BenchConfig& config) {
    WorkloadResult result;
    KeyFormat keys(config.keySize);
    {
        // Keys at ts 10 (round 0), then all overwritten at ts 20 (round 1)
        // while readers may still read at 10; one sweep moves round 0 out.
        auto engine = openEngine();
        auto writer = mustValue(engine->openSession(), "open a session");
        auto pin = mustValue(engine->openSession(), "open a session");
        must(writer->createCollection(kNs), "create");
        writeRound(*writer, keys, config.keys, config.valueSize, 0, 10);
        must(pin->begin({10}), "begin");  // holds ts 10 until the reads are done
        writeRound(*writer, keys, config.keys, config.valueSize, 1, 20);
        must(engine->sweepHistory(), "sweep");
        const HistoryFigures st = HistoryFigures::of(*engine);
        if (st.entries < config.keys)
            throw std::runtime_error("the sweep did not move the old versions out");
        for (int threads : config.threads) {
            if (config.wantCase("read_newest"))
                result.rows.push_back(toRow(kWorkload, "read_newest", threads,
                                            runReads(*engine, keys, config, threads, false)));
            if (config.wantCase("read_old"))
                result.rows.push_back(toRow(kWorkload, "read_old", threads,
                                            runReads(*engine, keys, config, threads, true)));
        }
        must(pin->commit().status(), "end");
        result.notes.push_back(fmt::format(
            "read_old reads {} keys' versions at ts 10 from the history store ({} entries, "
            "{:.1f} MB); read_newest reads the chains' heads",
            config.keys, st.entries, double(st.bytes) / 1e6));
    }
    addRatioToBaseline(result.rows, "read_newest");
    addScaling(result.rows);

    result.notes.push_back(fmt::format(
        "memory over time: {} keys overwritten {} times, oldest following the newest commit, "
        "swept after each round",
        config.keys, kRounds));
    result.notes.push_back(fmt::format("  {:<9} {:<22} {:>10} {:>11} {:>10} {:>8}", "snapshot",
                                       "when", "hs_entries", "hs_mb", "rss_mb", "max_chain"));
    for (bool pinned : {false, true})
        for (std::string& line : memoryOverTime(config, keys, pinned))
            result.notes.push_back(std::move(line));
    return result;
}

}  // namespace

void registerHistoryWorkload(WorkloadRegistry& registry) {
    Workload w;
    w.name = std::string(kWorkload);
    w.description =
        "mvkv's history store: reads at an old snapshot (from the history store) against "
        "reads of the newest version; history and memory over rounds of overwrites, with and "
        "without a pinned reader";
    w.caseNames = {"read_newest", "read_old"};
    w.run = runHistoryWorkload;
    registry.add(std::move(w));
}

}  // namespace mvkv::bench
