// bench report's detail columns as one table, one row per CSV/JSON key: the markdown detail
// table, the CSV and each JSON run object are all made from it, in its order, so the three
// formats cannot show different columns. A new column is one row (and its line in
// docs/COMPARING.md's column list, which tests/report/test_report_columns.cpp holds against this
// table).
#pragma once

#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainbench/report/report.h"

namespace trainbench {

struct ReportColumn {
  // The markdown column's header; "" for a key the markdown shows in the cell of the column
  // before it (peak_unreliable is the MFU % cell's "unreliable").
  const char* header;
  // The CSV header and the JSON key (the two formats name every column alike).
  const char* key;
  // What the CSV/JSON value counts in ("%", "s", "bytes", ...); "" for text, flags and counts.
  // The markdown's header says its own unit, which may differ (peak MB of peak_memory_bytes).
  const char* unit;
  // The markdown cell of a column with a header (nullptr for a key shown in the cell before).
  std::string (*cell)(const RunRecord&);
  // The CSV/JSON value: null where the run has none (an empty CSV field).
  nlohmann::json (*value)(const RunRecord&);
  // Free text (labels, machine names, revisions, folders) is quoted in the CSV.
  bool csv_quoted = false;
  // Or null: a column shown only when a run has its figure (the communication of multi-process
  // runs, a GPU's energy) says whether r has it; a JSON run object has its key only then.
  bool (*has)(const RunRecord&) = nullptr;
};

// Every column, in the order all three formats show them.
std::span<const ReportColumn> report_columns();

// The columns a report of `runs` shows: those with has() only when a run has their figure.
std::vector<const ReportColumn*> shown_columns(const std::vector<RunRecord>& runs);

// The markdown's number: v × scale in fixed notation with `precision` decimals; "-" where v is
// no number (null: the run has no such figure).
std::string fixed_text(const nlohmann::json& v, int precision, double scale = 1.0);

// A fraction (summary.json's form) in percent as every format shows shares, rounded to 1e-6 so
// that 0.018 reads 1.8, not 1.7999999999999998; null where it is no number.
nlohmann::json percent_value(const nlohmann::json& fraction);

// The detail table (a header, its separator, a row per run), the CSV (a header line, a line
// per run) and one run's JSON object, each from report_columns().
std::string detail_markdown(const std::vector<RunRecord>& runs);
std::string detail_csv(const std::vector<RunRecord>& runs);
nlohmann::ordered_json detail_json(const RunRecord& r);

}  // namespace trainbench
