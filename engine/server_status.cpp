// Engine::serverStatus: MongoDB's section names over the engine's figures
// (docs/operations.md, "serverStatus").
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine/op_report.h"
#include "engine/session.h"

namespace mvkv::engine {

using OrderedJson = nlohmann::ordered_json;

namespace {

constexpr std::string_view kSections[] = {
    "globalLock", "locks",       "tickets",  "concurrentTransactions", "opcounters",
    "metrics",    "transactions", "historyStore", "oplog", "checkpoint", "profiler",
    "deadlocks",  "connections", "log", "documentLocks", "repl"};

}  // namespace

StatusWith<std::string> Engine::serverStatus(std::string_view section) {
    if (!section.empty() &&
        std::find(std::begin(kSections), std::end(kSections), section) == std::end(kSections)) {
        std::string names;
        for (std::string_view s : kSections)
            names += fmt::format("{}{}", names.empty() ? "" : ", ", s);
        return Status::InvalidArgument(
            fmt::format("serverStatus has no section '{}'; the sections are {}", section, names));
    }
    OrderedJson lockDoc = OrderedJson::parse(lockManager_.serverStatusJson());
    OrderedJson stats = OrderedJson::parse(statsJson());
    // The profiler's session is the engine's, not a client's: its writes
    // are in no opcounter and it is no connection (as in MongoDB).
    static const OpTally kNoTally;
    OpTotals totals = ops_.totals(
        [](const Session& s) -> const OpTally& { return s.monitored_ ? s.tally_ : kNoTally; });

    // Operations running now, by kind, and explicit transactions open.
    uint64_t readers = 0, writers = 0, open = 0, activeTxns = 0, clients = 0;
    ops_.forEach([&](Session& s) {
        if (!s.monitored_)
            return;
        ++clients;
        auto op = s.curOp_.snapshot(ops_.opidCounter());
        bool txnOpen = s.txnDesc_.open.load(std::memory_order_acquire);
        open += txnOpen;
        if (!op)
            return;
        activeTxns += txnOpen;
        bool reader = op->op == CurOpType::kQuery || op->op == CurOpType::kGetMore ||
                      op->command == "count";
        (reader ? readers : writers) += 1;
    });

    OrderedJson out;
    out["globalLock"] = lockDoc["globalLock"];
    out["globalLock"]["activeClients"] = {
        {"total", readers + writers}, {"readers", readers}, {"writers", writers}};
    out["locks"] = lockDoc["locks"];
    out["tickets"] = lockDoc["tickets"];
    out["concurrentTransactions"] = {{"read", lockDoc["tickets"]["read"]},
                                     {"write", lockDoc["tickets"]["write"]}};
    out["opcounters"] = {{"insert", totals.get(OpTally::kInsert)},
                         {"query", totals.get(OpTally::kQuery)},
                         {"update", totals.get(OpTally::kUpdate)},
                         {"delete", totals.get(OpTally::kDelete)},
                         {"getmore", totals.get(OpTally::kGetMore)},
                         {"command", totals.get(OpTally::kCommand)}};
    out["metrics"] = {
        {"operation",
         {{"writeConflicts", stats["transactions"]["writeConflicts"]},
          {"retries", stats["transactions"]["retries"]},
          {"killed", totals.get(OpTally::kKilled)},
          {"yields", totals.get(OpTally::kYields)},
          {"slowOps", totals.get(OpTally::kSlowOps)}}},
        {"queryExecutor",
         {{"scanned", totals.get(OpTally::kScanned)},
          {"scannedObjects", totals.get(OpTally::kScannedObjects)}}}};
    const TtlStats ttl = ttlStats();
    out["metrics"]["ttl"] = {{"passes", ttl.passes}, {"deletedDocuments", ttl.deletedDocuments}};
    out["transactions"] = {{"currentActive", activeTxns},
                           {"currentOpen", open},
                           {"currentInactive", open - activeTxns},
                           {"totalStarted", totals.get(OpTally::kTxnStarted)},
                           {"totalCommitted", totals.get(OpTally::kTxnCommitted)},
                           {"totalAborted", totals.get(OpTally::kTxnAborted)}};
    // MongoDB's names for prepared transactions (recovered ones included).
    const mvcc::TransactionManager::PreparedCounts prepared = txns_.preparedCounts();
    out["transactions"]["totalPrepared"] = prepared.total;
    out["transactions"]["totalPreparedThenCommitted"] = prepared.committed;
    out["transactions"]["totalPreparedThenAborted"] = prepared.aborted;
    out["transactions"]["currentPrepared"] = prepared.current;
    out["historyStore"] = stats["history"];
    if (stats.contains("oplog"))
        out["oplog"] = stats["oplog"];
    if (stats.contains("checkpoint"))
        out["checkpoint"] = stats["checkpoint"];
    out["profiler"] = profiler_->status();
    out["deadlocks"] = lockDoc["deadlocks"];
    out["connections"] = {{"current", clients}};
    out["log"] = {{"slowOpsLogged", slowLog_->linesWritten()},
                  {"file", slowLog_->filePath()},
                  {"fileErrors", slowLog_->fileErrors()}};
    out["documentLocks"] = OrderedJson::parse(docLocks_.statusJson());
    // Only while this engine is a replica set's primary (docs/replication.md).
    if (auto coordinator = replicationCoordinator())
        out["repl"] = OrderedJson::parse(coordinator->statusJson());
    if (section.empty()) {
        out["ok"] = 1;
        return out.dump();
    }
    OrderedJson one;
    std::string name(section);
    one[name] = out.contains(name) ? out[name] : OrderedJson(nullptr);
    one["ok"] = 1;
    return one.dump();
}

}  // namespace mvkv::engine
