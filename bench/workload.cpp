#include "workload.h"

#include <algorithm>
#include <stdexcept>

namespace mvkv::bench {

bool BenchConfig::wantCase(std::string_view caseName) const {
    return cases.empty() || std::find(cases.begin(), cases.end(), caseName) != cases.end();
}

void ResultRow::setMetric(std::string name, double value, std::string unit) {
    for (Metric& m : metrics) {
        if (m.name == name) {
            m.value = value;
            m.unit = std::move(unit);
            return;
        }
    }
    metrics.push_back({std::move(name), value, std::move(unit)});
}

std::optional<double> ResultRow::metric(std::string_view name) const {
    for (const Metric& m : metrics) {
        if (m.name == name)
            return m.value;
    }
    return std::nullopt;
}

void WorkloadRegistry::add(Workload workload) {
    if (workload.name.empty())
        throw std::invalid_argument("workload without a name");
    if (find(workload.name) != nullptr) {
        throw std::invalid_argument("workload '" + workload.name + "' registered twice");
    }
    workloads_.push_back(std::move(workload));
}

const Workload* WorkloadRegistry::find(std::string_view name) const {
    for (const Workload& w : workloads_) {
        if (w.name == name)
            return &w;
    }
    return nullptr;
}

const ResultRow* findRow(const std::vector<ResultRow>& rows, std::string_view caseName,
                         int threads) {
    for (const ResultRow& r : rows) {
        if (r.caseName == caseName && r.threads == threads && r.error.empty())
            return &r;
    }
    return nullptr;
}

void addRatioToBaseline(std::vector<ResultRow>& rows, std::string_view baselineCase,
                        const std::string& name) {
    for (ResultRow& r : rows) {
        const ResultRow* base = findRow(rows, baselineCase, r.threads);
        if (base == nullptr || base->nsPerOp <= 0 || !r.error.empty())
            continue;
        r.setMetric(name, r.nsPerOp / base->nsPerOp, "x");
    }
}

void addScaling(std::vector<ResultRow>& rows, const std::string& name) {
    for (ResultRow& r : rows) {
        if (r.threads <= 1 || !r.error.empty())
            continue;
        const ResultRow* one = findRow(rows, r.caseName, 1);
        if (one == nullptr || one->opsPerSec <= 0)
            continue;
        r.setMetric(name, r.opsPerSec / one->opsPerSec, "x");
    }
}

void registerBuiltinWorkloads(WorkloadRegistry& registry) {
    registerLockmgrWorkload(registry);
    // The storage workloads fork a child per case, which inherits this
    // process's resident memory: they run before the in-process workloads
    // that hold hundreds of MB (btree's 1M-key tree and std::map, history's
    // versions in the never-shrinking version arena), so each case's peak
    // RSS is its own engine's.
    registerStorageWorkloads(registry);
    registerBTreeWorkload(registry);
    registerHistoryWorkload(registry);
    registerOplogWorkload(registry);
    registerRecoveryWorkload(registry);
    registerCheckpointWorkload(registry);
    registerChangeStreamWorkload(registry);
    registerDoclockWorkload(registry);
    registerReplsetWorkload(registry);
    registerListAppendWorkload(registry);
}

}  // namespace mvkv::bench
