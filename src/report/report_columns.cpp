// bench report's detail columns (report/report_columns.h): the table, its cell and value
// functions, and the markdown, CSV and JSON made from it.
#include "trainbench/report/report_columns.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

namespace trainbench {

std::string fixed_text(const nlohmann::json& v, int precision, double scale) {
  if (!v.is_number()) return "-";
  std::ostringstream os;
  os << std::fixed << std::setprecision(precision) << v.get<double>() * scale;
  return os.str();
}

nlohmann::json percent_value(const nlohmann::json& fraction) {
  return fraction.is_number() ? nlohmann::json(std::round(fraction.get<double>() * 1e8) / 1e6)
                              : nlohmann::json();
}

namespace {

// Cells and values of one RunRecord field, named by the field.
template <std::string RunRecord::*f>
std::string same_(const RunRecord& r) {
  return r.*f;
}
template <std::string RunRecord::*f>
std::string or_dash_(const RunRecord& r) {
  return (r.*f).empty() ? "-" : r.*f;
}
template <std::string RunRecord::*f>
nlohmann::json text_(const RunRecord& r) {
  return r.*f;
}
// "" (what the peers do not write) is null in the JSON.
template <std::string RunRecord::*f>
nlohmann::json text_or_null_(const RunRecord& r) {
  return (r.*f).empty() ? nlohmann::json() : nlohmann::json(r.*f);
}
template <int64_t RunRecord::*f>
std::string count_cell_(const RunRecord& r) {
  return std::to_string(r.*f);
}
template <int64_t RunRecord::*f>
nlohmann::json count_(const RunRecord& r) {
  return r.*f;
}
template <nlohmann::json RunRecord::*f, int precision>
std::string fixed_(const RunRecord& r) {
  return fixed_text(r.*f, precision);
}
template <nlohmann::json RunRecord::*f>
nlohmann::json figure_(const RunRecord& r) {
  return r.*f;
}
template <nlohmann::json RunRecord::*f>
nlohmann::json percent_(const RunRecord& r) {
  return percent_value(r.*f);
}

// "unreliable" where the run outran its peak, else the MFU in percent.
std::string mfu_cell_(const RunRecord& r) {
  return r.peak_unreliable ? "unreliable" : fixed_text(r.mfu, 1, 100);
}
nlohmann::json peak_unreliable_(const RunRecord& r) { return r.peak_unreliable; }

// "onednn_native (auto 1.69x)": the path and how it was chosen.
std::string gemm_cell_(const RunRecord& r) {
  if (r.gemm_path.empty()) return "-";
  return r.gemm_path + (r.gemm_choice.empty() ? "" : " (" + r.gemm_choice + ")");
}

// summary.json's noise figures (measure/cpu_noise.h), null without them.
nlohmann::json noise_(const RunRecord& r, const char* key) {
  return r.noise.is_object() ? r.noise.value(key, nlohmann::json()) : nlohmann::json();
}
// "cv 3%, 10% disturbed[ (unstable)]"; "-" without noise figures.
std::string noise_cell_(const RunRecord& r) {
  if (!r.noise.is_object()) return "-";
  std::string t = "cv " + fixed_text(noise_(r, "step_time_cv"), 0, 100) + "%, " +
                  fixed_text(noise_(r, "disturbed_step_share"), 0, 100) + "% disturbed";
  return r.noise.value("unstable", false) ? t + " (unstable)" : t;
}
nlohmann::json cv_percent_(const RunRecord& r) { return percent_value(noise_(r, "step_time_cv")); }
nlohmann::json disturbed_percent_(const RunRecord& r) {
  return percent_value(noise_(r, "disturbed_step_share"));
}
nlohmann::json unstable_(const RunRecord& r) { return noise_(r, "unstable"); }

std::string peak_mb_cell_(const RunRecord& r) {
  return fixed_text(r.peak_memory_bytes, 0, 1.0 / (1 << 20));
}

std::string communication_share_cell_(const RunRecord& r) {
  const std::string share = fixed_text(r.communication_share, 1, 100);
  return share == "-" ? share : share + "%";
}

// "killed at step 40": a run without summary.json with the last step its metrics logged.
std::string status_cell_(const RunRecord& r) {
  return r.status + (r.last_step > 0 ? " at step " + std::to_string(r.last_step) : "");
}
nlohmann::json last_step_(const RunRecord& r) {
  return r.last_step > 0 ? nlohmann::json(r.last_step) : nlohmann::json();
}

// CSV text, and the columns shown only where a run has their figure.
constexpr bool kQuoted = true, kBare = false;
bool has_comm_(const RunRecord& r) { return r.communication_ms.is_number(); }
bool has_energy_(const RunRecord& r) { return r.tokens_per_joule.is_number(); }
using R = RunRecord;

constexpr ReportColumn kColumns[] = {
    // {markdown header, CSV/JSON key, unit, markdown cell, CSV/JSON value[, CSV quoting, comm]}
    {"configuration", "configuration", "", same_<&R::label>, text_<&R::label>, kQuoted},
    {"dtype", "dtype", "", same_<&R::dtype>, text_<&R::dtype>},
    {"layers", "num_layer", "", count_cell_<&R::num_layer>, count_<&R::num_layer>},
    {"batch", "batch_size", "", count_cell_<&R::batch_size>, count_<&R::batch_size>},
    {"seq/s", "sequences_per_s", "seq/s", fixed_<&R::sequences_per_s, 2>,
     figure_<&R::sequences_per_s>},
    {"tokens/s", "tokens_per_s", "tokens/s", fixed_<&R::tokens_per_s, 0>,
     figure_<&R::tokens_per_s>},
    {"MFU %", "mfu_percent", "%", mfu_cell_, percent_<&R::mfu>},
    {"", "peak_unreliable", "", nullptr, peak_unreliable_},
    {"GEMM", "gemm_path", "", gemm_cell_, text_or_null_<&R::gemm_path>},
    {"", "gemm_choice", "", nullptr, text_or_null_<&R::gemm_choice>},
    {"noise", "step_time_cv_percent", "%", noise_cell_, cv_percent_},
    {"", "disturbed_step_percent", "%", nullptr, disturbed_percent_},
    {"", "unstable", "", nullptr, unstable_},
    {"peak MB", "peak_memory_bytes", "bytes", peak_mb_cell_, figure_<&R::peak_memory_bytes>},
    {"tokens/J", "tokens_per_joule", "tokens/J", fixed_<&R::tokens_per_joule, 0>,
     figure_<&R::tokens_per_joule>, kBare, has_energy_},
    {"warm-up s", "warmup_seconds", "s", fixed_<&R::warmup_seconds, 1>,
     figure_<&R::warmup_seconds>},
    {"compile s", "compile_seconds", "s", fixed_<&R::compile_seconds, 1>,
     figure_<&R::compile_seconds>},
    {"train bpb", "final_train_bpb", "bits/byte", fixed_<&R::final_train_bpb, 4>,
     figure_<&R::final_train_bpb>},
    {"valid bpb", "final_valid_bpb", "bits/byte", fixed_<&R::final_valid_bpb, 4>,
     figure_<&R::final_valid_bpb>},
    {"comm ms/step", "communication_ms", "ms", fixed_<&R::communication_ms, 1>,
     figure_<&R::communication_ms>, kBare, has_comm_},
    {"comm share", "communication_percent", "%", communication_share_cell_,
     percent_<&R::communication_share>, kBare, has_comm_},
    {"status", "status", "", status_cell_, text_<&R::status>},
    {"", "last_step", "", nullptr, last_step_},
    {"machine", "machine", "", or_dash_<&R::machine>, text_<&R::machine>, kQuoted},
    {"date", "date", "", or_dash_<&R::date>, text_<&R::date>},
    {"revision", "revision", "", or_dash_<&R::revision>, text_<&R::revision>, kQuoted},
    {"folder", "dir", "", same_<&R::dir>, text_<&R::dir>, kQuoted},
};

constexpr bool well_formed_() {
  for (const ReportColumn& c : kColumns) {
    if ((c.header[0] != '\0') != (c.cell != nullptr) || c.value == nullptr) return false;
  }
  return kColumns[0].header[0] != '\0';
}
static_assert(well_formed_(),
              "a column with a header has a markdown cell, a key shown in the cell before has "
              "none, every key has a value, and the first column has a header");

// A value as a CSV field: null is empty, free text quoted ("" for a quote inside).
std::string csv_field_(const nlohmann::json& v, bool quoted) {
  if (v.is_null()) return "";
  if (!v.is_string()) return v.dump();
  const std::string s = v.get<std::string>();
  if (!quoted) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

std::span<const ReportColumn> report_columns() { return kColumns; }

std::vector<const ReportColumn*> shown_columns(const std::vector<RunRecord>& runs) {
  std::vector<const ReportColumn*> shown;
  for (const ReportColumn& c : kColumns) {
    if (!c.has || std::any_of(runs.begin(), runs.end(), c.has)) shown.push_back(&c);
  }
  return shown;
}

std::string detail_markdown(const std::vector<RunRecord>& runs) {
  std::vector<const ReportColumn*> columns;
  for (const ReportColumn* c : shown_columns(runs)) {
    if (c->cell) columns.push_back(c);
  }
  std::ostringstream os;
  os << "|";
  for (const ReportColumn* c : columns) os << " " << c->header << " |";
  os << "\n|";
  for (size_t i = 0; i < columns.size(); ++i) os << "---|";
  os << "\n";
  for (const RunRecord& r : runs) {
    os << "|";
    for (const ReportColumn* c : columns) os << " " << c->cell(r) << " |";
    os << "\n";
  }
  return os.str();
}

std::string detail_csv(const std::vector<RunRecord>& runs) {
  const std::vector<const ReportColumn*> columns = shown_columns(runs);
  std::ostringstream os;
  for (size_t i = 0; i < columns.size(); ++i) os << (i ? "," : "") << columns[i]->key;
  os << "\n";
  for (const RunRecord& r : runs) {
    for (size_t i = 0; i < columns.size(); ++i) {
      os << (i ? "," : "") << csv_field_(columns[i]->value(r), columns[i]->csv_quoted);
    }
    os << "\n";
  }
  return os.str();
}

nlohmann::ordered_json detail_json(const RunRecord& r) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const ReportColumn& c : kColumns) {
    if (!c.has || c.has(r)) j[c.key] = c.value(r);
  }
  return j;
}

}  // namespace trainbench
