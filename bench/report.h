// Output of mvkv-bench: an aligned text table (in the spirit of LevelDB's
// db_bench: one line per measurement, columns lined up) and the JSON
// document written by --json.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "workload.h"

namespace mvkv::bench {

/// A text table: columns sized to their widest cell, numbers right-aligned.
class TextTable {
  public:
    enum class Align { kLeft, kRight };
    void addColumn(std::string header, Align align);
    /// Cells beyond the column count are dropped; missing ones print empty.
    void addRow(std::vector<std::string> cells);
    void print(std::FILE* out, const std::string& indent = "  ") const;

  private:
    struct Column {
        std::string header;
        Align align;
    };
    std::vector<Column> columns_;
    std::vector<std::vector<std::string>> rows_;
};

/// 12345678.9 -> "12,345,679".
std::string groupThousands(double value);

/// The rows of one workload as a table: case (headed `caseColumn`), threads,
/// ops/s, ns/op (per thread), then one column per metric name in first-seen
/// order. Failed and skipped rows say so instead of numbers.
TextTable resultTable(const std::vector<ResultRow>& rows, const std::string& caseColumn = "case");
/// A metric cell: two decimals, or grouped thousands when large, then its unit.
std::string formatMetric(const Metric& m);

nlohmann::ordered_json toJson(const ResultRow& row);

/// Every row as CSV (RFC 4180) with a header line: the fixed fields, one
/// column per metric name (first-seen order, empty where a row lacks it),
/// then error and skipped.
std::string toCsv(const std::vector<ResultRow>& rows);

}  // namespace mvkv::bench
