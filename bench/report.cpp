#include "bench/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace mvkv::bench {

void TextTable::addColumn(std::string header, Align align) {
    columns_.push_back({std::move(header), align});
}

void TextTable::addRow(std::vector<std::string> cells) {
    cells.resize(columns_.size());
    rows_.push_back(std::move(cells));
}

void TextTable::print(std::FILE* out, const std::string& indent) const {
    std::vector<size_t> widths;
    for (const Column& c : columns_)
        widths.push_back(c.header.size());
    for (const auto& row : rows_) {
        for (size_t i = 0; i < row.size(); ++i)
            widths[i] = std::max(widths[i], row[i].size());
    }
    auto printLine = [&](const std::vector<std::string>& cells) {
        std::string line = indent;
        for (size_t i = 0; i < columns_.size(); ++i) {
            if (i > 0)
                line += "  ";
            if (columns_[i].align == Align::kLeft) {
                line += fmt::format("{:<{}}", cells[i], widths[i]);
            } else {
                line += fmt::format("{:>{}}", cells[i], widths[i]);
            }
        }
        while (!line.empty() && line.back() == ' ')
            line.pop_back();
        fmt::print(out, "{}\n", line);
    };
    std::vector<std::string> headers;
    size_t total = 0;
    for (size_t i = 0; i < columns_.size(); ++i) {
        headers.push_back(columns_[i].header);
        total += widths[i] + (i > 0 ? 2 : 0);
    }
    printLine(headers);
    fmt::print(out, "{}{}\n", indent, std::string(total, '-'));
    for (const auto& row : rows_)
        printLine(row);
}

std::string groupThousands(double value) {
    if (!std::isfinite(value))
        return "-";
    std::string digits = fmt::format("{:.0f}", std::fabs(value));
    std::string out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0)
            out += ',';
        out += digits[i];
    }
    return value < 0 ? "-" + out : out;
}

TextTable resultTable(const std::vector<ResultRow>& rows) {
    std::vector<std::string> metricNames;
    for (const ResultRow& r : rows) {
        for (const Metric& m : r.metrics) {
            if (std::find(metricNames.begin(), metricNames.end(), m.name) == metricNames.end()) {
                metricNames.push_back(m.name);
            }
        }
    }
    bool anyCpu =
        std::any_of(rows.begin(), rows.end(), [](const ResultRow& r) { return r.cpuPercent >= 0; });
    TextTable t;
    t.addColumn("case", TextTable::Align::kLeft);
    t.addColumn("threads", TextTable::Align::kRight);
    t.addColumn("ops/s", TextTable::Align::kRight);
    t.addColumn("ns/op/thread", TextTable::Align::kRight);
    for (const std::string& name : metricNames)
        t.addColumn(name, TextTable::Align::kRight);
    if (anyCpu)
        t.addColumn("cpu%", TextTable::Align::kRight);
    for (const ResultRow& r : rows) {
        std::vector<std::string> cells{r.caseName, fmt::format("{}", r.threads)};
        if (!r.error.empty()) {
            cells.push_back("FAILED");
            t.addRow(std::move(cells));
            continue;
        }
        cells.push_back(groupThousands(r.opsPerSec));
        cells.push_back(fmt::format("{:.1f}", r.nsPerOp));
        for (const std::string& name : metricNames) {
            auto it = std::find_if(r.metrics.begin(), r.metrics.end(),
                                   [&](const Metric& m) { return m.name == name; });
            cells.push_back(it == r.metrics.end() ? std::string()
                                                  : fmt::format("{:.2f}{}", it->value, it->unit));
        }
        if (anyCpu)
            cells.push_back(r.cpuPercent >= 0 ? fmt::format("{:.0f}", r.cpuPercent) : "");
        t.addRow(std::move(cells));
    }
    return t;
}

nlohmann::ordered_json toJson(const ResultRow& row) {
    nlohmann::ordered_json j = {{"workload", row.workload}, {"case", row.caseName},
                                {"threads", row.threads},   {"ops", row.ops},
                                {"seconds", row.seconds},   {"ops_per_sec", row.opsPerSec},
                                {"ns_per_op", row.nsPerOp}};
    if (row.cpuPercent >= 0)
        j["cpu_pct"] = row.cpuPercent;
    for (const Metric& m : row.metrics)
        j[m.name] = m.value;
    if (!row.error.empty())
        j["error"] = row.error;
    return j;
}

}  // namespace mvkv::bench
