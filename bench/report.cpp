#include "report.h"

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

std::string formatMetric(const Metric& m) {
    // Large counts and rates read better grouped than with two decimals.
    if (std::fabs(m.value) >= 10000)
        return groupThousands(m.value) + m.unit;
    return fmt::format("{:.2f}{}", m.value, m.unit);
}

TextTable resultTable(const std::vector<ResultRow>& rows, const std::string& caseColumn) {
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
    t.addColumn(caseColumn, TextTable::Align::kLeft);
    t.addColumn("threads", TextTable::Align::kRight);
    t.addColumn("ops/s", TextTable::Align::kRight);
    t.addColumn("ns/op/thread", TextTable::Align::kRight);
    for (const std::string& name : metricNames)
        t.addColumn(name, TextTable::Align::kRight);
    if (anyCpu)
        t.addColumn("cpu%", TextTable::Align::kRight);
    for (const ResultRow& r : rows) {
        std::vector<std::string> cells{r.caseName, fmt::format("{}", r.threads)};
        if (!r.error.empty() || !r.skipped.empty()) {
            cells.push_back(r.error.empty() ? "skipped" : "FAILED");
            t.addRow(std::move(cells));
            continue;
        }
        cells.push_back(groupThousands(r.opsPerSec));
        cells.push_back(fmt::format("{:.1f}", r.nsPerOp));
        for (const std::string& name : metricNames) {
            auto it = std::find_if(r.metrics.begin(), r.metrics.end(),
                                   [&](const Metric& m) { return m.name == name; });
            cells.push_back(it == r.metrics.end() ? std::string() : formatMetric(*it));
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
    if (!row.skipped.empty())
        j["skipped"] = row.skipped;
    return j;
}

namespace {

// RFC 4180: quote a field holding a comma, quote or line break.
std::string csvField(const std::string& s) {
    if (s.find_first_of(",\"\r\n") == std::string::npos)
        return s;
    std::string out = "\"";
    for (char c : s)
        out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}

}  // namespace

std::string toCsv(const std::vector<ResultRow>& rows) {
    std::vector<std::string> metricNames;
    for (const ResultRow& r : rows) {
        for (const Metric& m : r.metrics) {
            if (std::find(metricNames.begin(), metricNames.end(), m.name) == metricNames.end())
                metricNames.push_back(m.name);
        }
    }
    std::string out = "workload,case,threads,ops,seconds,ops_per_sec,ns_per_op,cpu_pct";
    for (const std::string& name : metricNames)
        out += "," + csvField(name);
    out += ",error,skipped\n";
    for (const ResultRow& r : rows) {
        out += fmt::format("{},{},{},{},{},{},{},{}", csvField(r.workload), csvField(r.caseName),
                           r.threads, r.ops, r.seconds, r.opsPerSec, r.nsPerOp,
                           r.cpuPercent >= 0 ? fmt::format("{}", r.cpuPercent) : "");
        for (const std::string& name : metricNames) {
            std::optional<double> v = r.metric(name);
            out += "," + (v ? fmt::format("{}", *v) : std::string());
        }
        out += "," + csvField(r.error) + "," + csvField(r.skipped) + "\n";
    }
    return out;
}

}  // namespace mvkv::bench
