// checkHistory(): version orders, the dependency graph and the anomalies
// (docs/checker.md). List-append keys take their version order from the
// longest read; register keys from transactions that read a key and then
// wrote it (the value read precedes the value written).
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "check/dependency_graph.h"
#include "check/history.h"
#include "mvkv/check.h"

namespace mvkv::check {
namespace {

struct WriteRef {
    uint32_t txn;
    uint32_t op;
};

class Checker {
  public:
    Checker(const History& history, Model model)
        : h_(history), model_(model), graph_(history.txns.size()) {}

    StatusWith<CheckReport> run() {
        CheckReport report;
        report.model = model_;
        report.operations = h_.operations;
        report.transactions = h_.txns.size();
        for (const Transaction& t : h_.txns) {
            report.committed += t.status == TxnStatus::kOk;
            report.failed += t.status == TxnStatus::kFail;
            report.indeterminate += t.status == TxnStatus::kInfo;
        }
        if (Status s = indexWrites(); !s.ok())
            return s;
        if (h_.listAppend)
            listAppend();
        else
            registers();
        cycles();
        report.anomalies = std::move(anomalies_);
        return report;
    }

  private:
    const Transaction& txn(uint32_t i) const { return h_.txns[i]; }

    void add(AnomalyType type, std::string explanation, std::vector<uint32_t> txns) {
        Anomaly a;
        a.type = type;
        a.forbidden = forbids(model_, type);
        a.explanation = std::move(explanation);
        std::sort(txns.begin(), txns.end());
        txns.erase(std::unique(txns.begin(), txns.end()), txns.end());
        for (uint32_t t : txns)
            a.lines.push_back(txn(t).line);
        std::sort(a.lines.begin(), a.lines.end());
        anomalies_.push_back(std::move(a));
    }

    // Every written (key, value) -> its writer; values must be unique per key.
    Status indexWrites() {
        for (uint32_t t = 0; t < h_.txns.size(); ++t) {
            const Transaction& tx = txn(t);
            for (uint32_t o = 0; o < tx.ops.size(); ++o) {
                const Op& op = tx.ops[o];
                if (op.kind == Op::Kind::kRead)
                    continue;
                auto [it, inserted] = writers_[op.key].try_emplace(op.value, WriteRef{t, o});
                if (!inserted)
                    return Status::InvalidArgument(fmt::format(
                        "line {}: value {} is written to key {} twice (lines {} and {}): the "
                        "checker needs every value written to a key to be unique",
                        tx.line, op.value, op.key, txn(it->second.txn).line, tx.line));
                lastWrite_[{op.key, t}] = o;
            }
        }
        return Status::OK();
    }

    const WriteRef* writerOf(const std::string& key, const std::string& value) const {
        auto k = writers_.find(key);
        if (k == writers_.end())
            return nullptr;
        auto v = k->second.find(value);
        return v == k->second.end() ? nullptr : &v->second;
    }

    // Checks the writer of `value` (read from `key` by reader r) for
    // garbage and G1a; true when it is a write that may have committed.
    bool checkWriter(uint32_t r, const std::string& key, const std::string& value,
                     const WriteRef* w) {
        if (w == nullptr) {
            add(AnomalyType::kGarbageRead,
                fmt::format("{} read {} from key {}, which no transaction wrote",
                            describe(txn(r)), value, key),
                {r});
            return false;
        }
        if (w->txn == r)
            return true;
        if (txn(w->txn).status == TxnStatus::kFail) {
            if (reportedG1a_.insert({key, value}).second)
                add(AnomalyType::kG1a,
                    fmt::format("{} read {} of key {}, written by {}, which failed (aborted read)",
                                describe(txn(r)), value, key, describe(txn(w->txn))),
                    {r, w->txn});
            return false;
        }
        return true;
    }

    // G1b: the last value r read of `key` was not its writer's last write to it.
    void checkIntermediate(uint32_t r, const std::string& key, const std::string& value,
                           const WriteRef& w) {
        if (w.txn != r && txn(w.txn).maybeCommitted() && lastWrite_.at({key, w.txn}) != w.op)
            add(AnomalyType::kG1b,
                fmt::format("{} read {} of key {}, an intermediate value: {} wrote it and then "
                            "wrote key {} again in the same transaction (intermediate read)",
                            describe(txn(r)), value, key, describe(txn(w.txn)), key),
                {r, w.txn});
    }

    void listAppend() {
        struct Read {
            uint32_t txn;
            uint32_t op;
        };
        std::map<std::string, std::vector<Read>> reads;
        for (uint32_t t = 0; t < h_.txns.size(); ++t) {
            const Transaction& tx = txn(t);
            if (tx.status != TxnStatus::kOk)
                continue;
            for (uint32_t o = 0; o < tx.ops.size(); ++o)
                if (tx.ops[o].kind == Op::Kind::kRead && tx.ops[o].known)
                    reads[tx.ops[o].key].push_back({t, o});
        }
        std::map<std::string, std::vector<Read>> goodReads;
        for (auto& [key, list] : reads) {
            // Duplicates first: a list holding an element twice orders nothing.
            std::vector<Read> clean;
            for (const Read& r : list) {
                const std::vector<std::string>& l = txn(r.txn).ops[r.op].list;
                std::unordered_set<std::string> seen;
                std::string dup;
                for (const std::string& e : l)
                    if (!seen.insert(e).second) {
                        dup = e;
                        break;
                    }
                if (!dup.empty()) {
                    add(AnomalyType::kDuplicateElements,
                        fmt::format("{} read key {} holding {} more than once", describe(txn(r.txn)),
                                    key, dup),
                        {r.txn});
                    continue;
                }
                clean.push_back(r);
            }
            if (clean.empty())
                continue;
            Read longestRead = *std::max_element(clean.begin(), clean.end(), [&](auto& a, auto& b) {
                return txn(a.txn).ops[a.op].list.size() < txn(b.txn).ops[b.op].list.size();
            });
            const std::vector<std::string>& order = txn(longestRead.txn).ops[longestRead.op].list;
            std::vector<Read>& good = goodReads[key];
            for (const Read& r : clean) {
                const std::vector<std::string>& l = txn(r.txn).ops[r.op].list;
                if (!std::equal(l.begin(), l.end(), order.begin())) {
                    add(AnomalyType::kIncompatibleOrder,
                        fmt::format("{} read key {} as {}, which is not a prefix of {} read by {}: "
                                    "no single order of the appends explains both",
                                    describe(txn(r.txn)), key, fmt::join(l, ","),
                                    fmt::join(order, ","), describe(txn(longestRead.txn))),
                        {r.txn, longestRead.txn});
                    continue;
                }
                good.push_back(r);
            }
            orders_[key] = order;
        }
        // ww: consecutive elements of each version order.
        for (const auto& [key, order] : orders_) {
            for (size_t i = 0; i + 1 < order.size(); ++i) {
                const WriteRef* a = writerOf(key, order[i]);
                const WriteRef* b = writerOf(key, order[i + 1]);
                if (a && b && txn(a->txn).maybeCommitted() && txn(b->txn).maybeCommitted())
                    graph_.addEdge(a->txn, b->txn, kWW, {key, order[i], order[i + 1]});
            }
        }
        // wr and rw from each read; lost updates from read-then-append.
        std::map<std::pair<std::string, size_t>, std::vector<uint32_t>> readThenAppend;
        std::unordered_map<std::string, size_t> checkedUpTo;
        for (const auto& [key, list] : goodReads) {
            const std::vector<std::string>& order = orders_[key];
            for (const Read& r : list) {
                const std::vector<std::string>& l = txn(r.txn).ops[r.op].list;
                size_t visible = l.size();
                // The reader's own appends at the end are not another's write.
                while (visible > 0) {
                    const WriteRef* w = writerOf(key, l[visible - 1]);
                    if (w == nullptr || w->txn != r.txn)
                        break;
                    --visible;
                }
                // Every good read is a prefix of the order: each position's
                // writer is checked once per key, blaming the first reader.
                size_t& checked = checkedUpTo[key];
                for (; checked < visible; ++checked)
                    checkWriter(r.txn, key, l[checked], writerOf(key, l[checked]));
                const WriteRef* last = visible ? writerOf(key, l[visible - 1]) : nullptr;
                if (last) {
                    checkIntermediate(r.txn, key, l[visible - 1], *last);
                    if (txn(last->txn).maybeCommitted())
                        graph_.addEdge(last->txn, r.txn, kWR, {key, l[visible - 1], {}});
                }
                if (visible < order.size()) {
                    const WriteRef* next = writerOf(key, order[visible]);
                    // The next version by the writer of the one read is an
                    // intermediate read (G1b), not a missed write.
                    bool sameWriter = last && next && last->txn == next->txn;
                    if (next && !sameWriter && next->txn != r.txn &&
                        txn(next->txn).maybeCommitted())
                        graph_.addEdge(r.txn, next->txn, kRW,
                                       {key, visible ? l[visible - 1] : "", order[visible]});
                }
                if (visible == l.size() && appendsAfter(r.txn, r.op, key))
                    readThenAppend[{key, visible}].push_back(r.txn);
            }
        }
        lostUpdates(readThenAppend, [&](const std::pair<std::string, size_t>& kv) {
            const std::vector<std::string>& order = orders_[kv.first];
            return kv.second == 0 ? std::string("[]")
                                  : fmt::format("[{}]", fmt::join(order.begin(),
                                                                  order.begin() + long(kv.second),
                                                                  ","));
        });
    }

    bool appendsAfter(uint32_t t, uint32_t op, const std::string& key) const {
        const Transaction& tx = txn(t);
        bool wroteBefore = false, writesAfter = false;
        for (uint32_t o = 0; o < tx.ops.size(); ++o) {
            if (tx.ops[o].kind == Op::Kind::kRead || tx.ops[o].key != key)
                continue;
            (o < op ? wroteBefore : writesAfter) = true;
        }
        return !wroteBefore && writesAfter;
    }

    template <typename KeyT, typename Describe>
    void lostUpdates(const std::map<KeyT, std::vector<uint32_t>>& groups, Describe version) {
        for (const auto& [kv, txns] : groups) {
            std::vector<uint32_t> distinct = txns;
            std::sort(distinct.begin(), distinct.end());
            distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
            if (distinct.size() < 2)
                continue;
            std::string names;
            for (uint32_t t : distinct)
                names += (names.empty() ? "" : "; ") + describe(txn(t));
            add(AnomalyType::kLostUpdate,
                fmt::format("{} committed transactions read key {} at the same version {} and "
                            "each wrote it, so all but one update is lost: {}",
                            distinct.size(), kv.first, version(kv), names),
                distinct);
            lostPairs_.insert(distinct);
        }
    }

    void registers() {
        // Per key: the committed external reads of each value ("" + nil for none).
        std::map<std::pair<std::string, std::string>, std::vector<uint32_t>> readersOf;
        std::map<std::pair<std::string, std::string>, std::vector<uint32_t>> readThenWrite;
        struct Step {
            std::string key, from, to;
            uint32_t txn;
        };
        std::vector<Step> steps;
        for (uint32_t t = 0; t < h_.txns.size(); ++t) {
            const Transaction& tx = txn(t);
            std::unordered_map<std::string, std::string> firstRead;  // key -> value read first
            std::unordered_set<std::string> written;
            for (uint32_t o = 0; o < tx.ops.size(); ++o) {
                const Op& op = tx.ops[o];
                if (op.kind == Op::Kind::kWrite) {
                    if (tx.status == TxnStatus::kOk && !written.count(op.key))
                        if (auto it = firstRead.find(op.key); it != firstRead.end())
                            steps.push_back({op.key, it->second, op.value, t});
                    written.insert(op.key);
                    continue;
                }
                if (op.kind != Op::Kind::kRead || tx.status != TxnStatus::kOk ||
                    !(op.known || op.nil) || written.count(op.key))
                    continue;  // a read of its own write says nothing of others
                std::string v = op.nil ? std::string() : op.value;
                firstRead.try_emplace(op.key, v);
                readersOf[{op.key, v}].push_back(t);
                if (!v.empty()) {
                    const WriteRef* w = writerOf(op.key, v);
                    if (checkWriter(t, op.key, v, w)) {
                        checkIntermediate(t, op.key, v, *w);
                        graph_.addEdge(w->txn, t, kWR, {op.key, v, {}});
                    }
                }
            }
        }
        // A read of v then a write of v': v directly precedes v'.
        for (const Step& s : steps) {
            readThenWrite[{s.key, s.from}].push_back(s.txn);
            if (!s.from.empty())
                if (const WriteRef* w = writerOf(s.key, s.from); w && txn(w->txn).maybeCommitted())
                    graph_.addEdge(w->txn, s.txn, kWW, {s.key, s.from, s.to});
            for (uint32_t r : readersOf[{s.key, s.from}])
                if (r != s.txn)
                    graph_.addEdge(r, s.txn, kRW, {s.key, s.from, s.to});
        }
        lostUpdates(readThenWrite, [](const std::pair<std::string, std::string>& kv) {
            return kv.second.empty() ? std::string("null") : kv.second;
        });
    }

    std::string edgeText(const CycleEdge& e) const {
        const EdgeReason& why = graph_.reason(e);
        std::string a = txnName(txn(e.from)), b = txnName(txn(e.to));
        switch (e.type) {
            case kWW:
                return fmt::format("{} wrote {} to key {}, then {} wrote {} after it (ww)", a,
                                   why.fromValue, why.key, b, why.toValue);
            case kWR:
                return fmt::format("{} read {}'s write of {} to key {} (wr)", b, a, why.fromValue,
                                   why.key);
            case kRW:
            default:
                return fmt::format("{} read key {} at {} and did not see {}'s write of {}, the "
                                   "next version (rw)",
                                   a, why.key, why.fromValue.empty() ? "its start" : why.fromValue,
                                   b, why.toValue);
        }
    }

    void cycles() {
        for (const std::vector<uint32_t>& component : graph_.components()) {
            for (const std::vector<CycleEdge>& cycle : graph_.cyclesOf(component)) {
                int rw = 0, wr = 0;
                std::vector<uint32_t> txns;
                for (const CycleEdge& e : cycle) {
                    rw += e.type == kRW;
                    wr += e.type == kWR;
                    txns.push_back(e.from);
                }
                // Snapshot isolation allows a cycle only when two of its rw
                // edges follow one another (Adya's G-SI; Elle's G-nonadjacent).
                bool adjacentRw = false;
                for (size_t i = 0; i < cycle.size(); ++i)
                    adjacentRw |= cycle[i].type == kRW &&
                                  cycle[(i + 1) % cycle.size()].type == kRW;
                AnomalyType type = rw >= 2   ? (adjacentRw ? AnomalyType::kG2Item
                                                           : AnomalyType::kGNonadjacent)
                                   : rw == 1 ? AnomalyType::kGSingle
                                   : wr > 0  ? AnomalyType::kG1c
                                             : AnomalyType::kG0;
                std::vector<uint32_t> sorted = txns;
                std::sort(sorted.begin(), sorted.end());
                // A cycle of exactly a lost update's transactions is that
                // lost update, already explained better.
                if (lostPairs_.count(sorted))
                    continue;
                std::string text = fmt::format("a cycle of {} transactions:", cycle.size());
                for (uint32_t t : sorted)
                    text += "\n    " + describe(txn(t));
                text += "\n  where";
                for (const CycleEdge& e : cycle)
                    text += "\n    " + edgeText(e);
                add(type, std::move(text), txns);
            }
        }
    }

    const History& h_;
    Model model_;
    DependencyGraph graph_;
    std::unordered_map<std::string, std::unordered_map<std::string, WriteRef>> writers_;
    std::map<std::pair<std::string, uint32_t>, uint32_t> lastWrite_;  // (key, txn) -> op
    std::map<std::string, std::vector<std::string>> orders_;
    std::set<std::pair<std::string, std::string>> reportedG1a_;
    std::set<std::vector<uint32_t>> lostPairs_;
    std::vector<Anomaly> anomalies_;
};

}  // namespace

std::optional<Model> parseModel(std::string_view name) {
    if (name == "snapshot-isolation")
        return Model::kSnapshotIsolation;
    if (name == "serializable")
        return Model::kSerializable;
    return std::nullopt;
}

std::string_view modelName(Model model) {
    return model == Model::kSerializable ? "serializable" : "snapshot-isolation";
}

bool forbids(Model model, AnomalyType type) {
    return !(model == Model::kSnapshotIsolation && type == AnomalyType::kG2Item);
}

StatusWith<CheckReport> checkHistory(std::string_view historyText, Model model) {
    History history;
    ParseError err = parseHistory(historyText, &history);
    if (!err.message.empty())
        return Status::InvalidArgument(fmt::format("line {}: {}", err.line, err.message));
    std::sort(history.txns.begin(), history.txns.end(),
              [](const Transaction& a, const Transaction& b) { return a.line < b.line; });
    return Checker(history, model).run();
}

StatusWith<CheckReport> checkHistoryFile(const std::string& path, Model model) {
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (file == nullptr)
        return Status::IOError(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
    std::string text;
    char buffer[1 << 16];
    for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;)
        text.append(buffer, n);
    const bool failed = std::ferror(file) != 0;
    const int readErrno = errno;
    std::fclose(file);
    if (failed)
        return Status::IOError(fmt::format("cannot read {}: {}", path, std::strerror(readErrno)));
    StatusWith<CheckReport> checked = checkHistory(text, model);
    if (!checked.ok())  // name the file too: a caller may check several
        return Status(checked.status().code(),
                      fmt::format("{}: {}", path, checked.status().message()));
    return checked;
}

}  // namespace mvkv::check
