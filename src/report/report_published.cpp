// What makes a comparison acceptable: `bench report --manifest` (each run's fairness manifest,
// the rows whose model or start disagree flagged) and `bench report --baseline results/NAME
// RUN_DIR...`: a user's runs against a published
// measurement of their machine class (a folder under results/, scripts/record_results.sh): each
// configuration and dtype of theirs beside the same configuration there, the ratio of medians
// within one model shape and, with 3 or more repetitions a side, the U-test's p; with
// --fail_below R, the regression gate: the rows slower than R times the published one.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <sstream>
#include <utility>

#include "speed_table.h"
#include "trainbench/core/errors.h"
#include "trainbench/report/report.h"
#include "trainbench/report/report_columns.h"
#include "trainbench/report/results.h"

namespace trainbench {
namespace {

const std::string kPublished = " [published]";

bool published_label_(const std::string& label) {
  return label.size() >= kPublished.size() &&
         label.compare(label.size() - kPublished.size(), std::string::npos, kPublished) == 0;
}

// "CPU model, recorded DATE at COMMIT" from the folder's machine.json, or "".
std::string machine_line_(const std::string& folder) {
  const std::string file = folder + "/machine.json";
  if (!std::filesystem::exists(file)) return "";
  try {
    const nlohmann::json m = read_json_file(file);
    std::string line = m.value("cpu_model", std::string());
    if (m.contains("gpu") && m.at("gpu").is_string()) line += ", " + m.at("gpu").get<std::string>();
    line += ", recorded " + m.value("recorded_utc", std::string("?")).substr(0, 10);
    // The binaries' revisions where the record names them, else the tree it was recorded from.
    std::string at = m.value("commit", std::string("?")).substr(0, 7);
    if (m.contains("build_revisions") && m.at("build_revisions").is_array() &&
        !m.at("build_revisions").empty()) {
      at.clear();
      for (const auto& r : m.at("build_revisions")) {
        at += (at.empty() ? "" : ", ") + (r.is_string() ? r.get<std::string>() : r.dump());
      }
    }
    return line + " at " + at;
  } catch (const std::exception&) {
    return "";
  }
}

}  // namespace

bool is_published_folder(const std::string& baseline) {
  std::error_code ec;
  return std::filesystem::is_directory(baseline, ec) &&
         std::filesystem::exists(baseline + "/machine.json", ec);
}

namespace {

// Both sides are needed: a published folder with runs and runs of yours.
void check_sides_(const std::vector<RunRecord>& yours, const std::vector<RunRecord>& published,
                  const std::string& folder) {
  if (published.empty()) {
    throw ConfigError("--baseline: '" + folder + "' holds no readable run folder");
  }
  if (yours.empty()) {
    throw ConfigError("no readable run folder of yours to set beside '" + folder +
                      "'; give RUN_DIR...");
  }
}

// One table of both sides: the published runs' labels carry kPublished; where the runs are
// of more than one model shape, every label carries its shape, so no cell pools two shapes.
std::vector<RunRecord> both_sides_(const std::vector<RunRecord>& yours,
                                   const std::vector<RunRecord>& published) {
  std::vector<RunRecord> all = yours;
  for (RunRecord r : published) {
    r.label += kPublished;
    all.push_back(std::move(r));
  }
  const bool shapes = std::any_of(all.begin(), all.end(),
                                  [&](const RunRecord& r) { return r.shape != all[0].shape; });
  for (RunRecord& r : all) {
    if (!shapes) break;
    const bool theirs = published_label_(r.label);
    r.label = r.label.substr(0, r.label.size() - (theirs ? kPublished.size() : 0)) + " [" +
              r.shape + "]" + (theirs ? kPublished : "");
  }
  return all;
}

// The gate's test: yours against the published runs' speeds times R (the U-test's p of the
// two samples), so "slower than R times the published" is what p < 0.05 speaks of.
std::vector<RunRecord> scaled_published_(std::vector<RunRecord> runs, double fail_below) {
  for (RunRecord& r : runs) {
    if (published_label_(r.label) && r.sequences_per_s.is_number())
      r.sequences_per_s = r.sequences_per_s.get<double>() * fail_below;
  }
  return runs;
}

// One row: label's runs of dtype (mine) beside other = label + kPublished (theirs), the ratio
// of medians, the U-test's p and, where the ratio is below fail_below, the gate's p.
struct PublishedRow {
  std::string dtype, label, other;
  Aggregate mine, theirs;
  std::optional<double> ratio, p, p_gate;
};

// t: both sides as measured; ts: the published speeds times fail_below (scaled_published_).
// mine.first is null where label has no run of dtype (no row; nothing else is read).
PublishedRow published_row_(const SpeedTable& t, const SpeedTable& ts, const std::string& dtype,
                            const std::string& label, double fail_below) {
  PublishedRow r;
  r.dtype = dtype;
  r.label = label;
  r.mine = aggregate(t, dtype, label);
  if (!r.mine.first) return r;
  r.other = label + kPublished;
  r.theirs = aggregate(t, dtype, r.other);
  r.ratio = ratio_value(t, dtype, label, r.other);
  r.p = u_test_p(t, dtype, label, r.other);
  if (fail_below > 0 && r.ratio && *r.ratio < fail_below) {
    r.p_gate = u_test_p(ts, dtype, label, r.other);
  }
  return r;
}

// The markdown header: the folder, its machine line and the columns.
void write_header_(std::ostream& md, const std::string& folder, const std::string& machine) {
  md << "Your runs against " << folder << (machine.empty() ? "" : " (" + machine + ")")
     << "; ratio: your median seq/s over the published one, within one model shape\n\n"
     << "| configuration | dtype | yours seq/s | published seq/s | ratio | p |\n"
     << "|---|---|---|---|---|---|\n";
}

// The row's markdown line; its ratio cell says why there is no ratio where there is none.
void write_row_(std::ostream& md, const SpeedTable& t, const PublishedRow& r) {
  std::string ratio_cell = "-";
  if (r.ratio) {
    ratio_cell = fixed_text(nlohmann::json(*r.ratio), 2) + "x";
  } else if (shapes_differ(t, r.dtype, r.label, r.other)) {
    ratio_cell = "n/a (other shape)";
  } else if (!r.theirs.first) {
    ratio_cell = "not published";
  }
  const std::string theirs_cell = speed_cell(t, r.dtype, r.other);
  md << "| " << r.label << " | " << r.dtype << " | " << speed_cell(t, r.dtype, r.label) << " | "
     << (theirs_cell.empty() ? "-" : theirs_cell) << " | " << ratio_cell << " | "
     << (r.p ? p_text(*r.p) : "-") << " |\n";
}

// The gate's line for a row slower than fail_below times the published (r.ratio, r.p_gate set).
std::string slower_line_(const PublishedRow& r, double fail_below) {
  return r.label + " " + r.dtype + ": " + fixed_text(nlohmann::json(*r.ratio), 2) +
         "x the published median, below " + fixed_text(nlohmann::json(fail_below), 2) +
         "x (p=" + p_text(*r.p_gate) + " against the published runs times " +
         fixed_text(nlohmann::json(fail_below), 2) + ")";
}

// The row in the JSON's "rows" (null where a side, the ratio or a p is missing).
nlohmann::json row_json_(const PublishedRow& r) {
  const Aggregate& mine = r.mine;
  const Aggregate& theirs = r.theirs;
  return {{"configuration", r.label},
          {"dtype", r.dtype},
          {"yours_sequences_per_s", mine.count ? nlohmann::json(mine.median) : nullptr},
          {"yours_n", mine.count},
          {"published_sequences_per_s", theirs.count ? nlohmann::json(theirs.median) : nullptr},
          {"published_n", theirs.count},
          {"ratio", r.ratio ? nlohmann::json(*r.ratio) : nullptr},
          {"p", r.p ? nlohmann::json(*r.p) : nullptr},
          {"p_below_fail_ratio", r.p_gate ? nlohmann::json(*r.p_gate) : nullptr}};
}

// The regression gate's verdict under the table, then its slower rows.
void write_gate_(std::ostream& md, double fail_below, const std::vector<std::string>& slower) {
  md << "\nRegression gate (--fail_below " << fixed_text(nlohmann::json(fail_below), 2) << "): "
     << (slower.empty() ? "passed: no configuration is slower than that with p < 0.05"
                        : "failed: " + std::to_string(slower.size()) + " slower with p < 0.05")
     << "\n";
  for (const std::string& line : slower) md << "- " << line << "\n";
}

// The comparison as JSON (format json): the folder, its machine line, the rows and the gate.
std::string comparison_json_(const std::string& folder, const std::string& machine,
                             const nlohmann::json& rows, double fail_below,
                             const std::vector<std::string>& slower) {
  nlohmann::json j = {{"schema_version", kSchemaVersion},
                      {"published", folder},
                      {"machine", machine},
                      {"rows", rows}};
  if (fail_below > 0) j["fail_below"] = fail_below, j["slower"] = slower;
  return j.dump(2) + "\n";
}

}  // namespace

PublishedComparison compare_with_published(const std::vector<RunRecord>& yours,
                                           const std::vector<RunRecord>& published,
                                           const std::string& folder, const std::string& format,
                                           double fail_below) {
  check_sides_(yours, published, folder);
  // The speed tables point into these runs: both stay alive while t and ts are read.
  const std::vector<RunRecord> all = both_sides_(yours, published);
  const SpeedTable t = speed_table(all);
  const std::vector<RunRecord> scaled = scaled_published_(all, fail_below);
  const SpeedTable ts = speed_table(scaled);
  PublishedComparison out;
  nlohmann::json rows = nlohmann::json::array();
  std::ostringstream md;
  const std::string machine = machine_line_(folder);
  write_header_(md, folder, machine);
  for (const std::string& dtype : t.dtypes) {
    for (const std::string& label : t.labels) {
      if (published_label_(label)) continue;
      const PublishedRow r = published_row_(t, ts, dtype, label, fail_below);
      if (!r.mine.first) continue;
      write_row_(md, t, r);
      if (r.p_gate && *r.p_gate < 0.05) out.slower.push_back(slower_line_(r, fail_below));
      rows.push_back(row_json_(r));
    }
  }
  if (fail_below > 0) write_gate_(md, fail_below, out.slower);
  if (format == "json") {
    out.text = comparison_json_(folder, machine, rows, fail_below, out.slower);
  } else {
    out.text = md.str();
  }
  return out;
}

namespace {

// The manifest's columns, in order: key and header.
constexpr std::pair<const char*, const char*> kManifestColumns[] = {
    {"implementation", "implementation"},
    {"compile_options", "compile options"},
    {"tf32", "TF32"},
    {"compute", "compute"},
    {"master_weights", "master weights"},
    {"optimizer", "optimizer"},
    {"threads", "threads"},
    {"attention", "attention"},
    {"data_in_timer", "data in timer"},
    {"params", "params"},
    {"first_loss", "first loss"}};

std::string manifest_cell_(const nlohmann::json& v) {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>().empty() ? "-" : v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_number_float()) return fixed_text(v, 4);
  return v.dump();
}

// What disagrees in run r against its dtype's other runs: "" when nothing.
std::string manifest_flag_(const RunRecord& r, const std::vector<RunRecord>& runs) {
  if (!r.manifest.is_object()) return "no manifest (an older run folder)";
  std::vector<double> losses;
  std::string flag;
  for (const RunRecord& o : runs) {
    if (o.dtype != r.dtype || o.shape != r.shape || !o.manifest.is_object()) continue;
    if (o.manifest.value("params", nlohmann::json()) !=
        r.manifest.value("params", nlohmann::json()))
      flag = "parameter counts differ";
    const nlohmann::json l = o.manifest.value("first_loss", nlohmann::json());
    if (l.is_number()) losses.push_back(l.get<double>());
  }
  const nlohmann::json mine = r.manifest.value("first_loss", nlohmann::json());
  if (!losses.empty() && mine.is_number()) {
    std::sort(losses.begin(), losses.end());
    const double median = losses[losses.size() / 2];
    const double off = std::abs(mine.get<double>() / median - 1);
    if (off > kFirstLossTolerance) {
      flag += std::string(flag.empty() ? "" : "; ") + "first loss " +
              fixed_text(nlohmann::json(off * 100), 1) + "% from the median " +
              fixed_text(nlohmann::json(median), 4);
    }
  }
  return flag;
}

}  // namespace

std::string render_manifest(const std::vector<RunRecord>& runs, const std::string& format) {
  nlohmann::json rows = nlohmann::json::array();
  std::ostringstream md;
  md << "Fairness manifest: what each run ran with, from its own summary.json (flagged: a run "
        "whose parameter count or first loss disagrees with its dtype's other runs of one shape)"
        "\n\n| configuration | dtype |";
  for (const auto& [key, header] : kManifestColumns) md << " " << header << " |";
  md << " flagged |\n|---|---|";
  for (size_t i = 0; i < std::size(kManifestColumns); ++i) md << "---|";
  md << "---|\n";
  size_t flagged = 0;
  for (const RunRecord& r : runs) {
    const std::string flag = manifest_flag_(r, runs);
    flagged += !flag.empty();
    md << "| " << r.label << " | " << r.dtype << " |";
    for (const auto& [key, header] : kManifestColumns) {
      md << " "
         << manifest_cell_(r.manifest.is_object() ? r.manifest.value(key, nlohmann::json())
                                                  : nlohmann::json())
         << " |";
    }
    md << " " << (flag.empty() ? "-" : flag) << " |\n";
    rows.push_back({{"dir", r.dir},
                    {"configuration", r.label},
                    {"dtype", r.dtype},
                    {"manifest", r.manifest},
                    {"flagged", flag.empty() ? nlohmann::json() : nlohmann::json(flag)}});
  }
  if (format == "json") {
    return nlohmann::json({{"schema_version", kSchemaVersion}, {"runs", rows}}).dump(2) + "\n";
  }
  md << "\n"
     << (flagged ? std::to_string(flagged) + " of " + std::to_string(runs.size()) + " runs flagged"
                 : "no run flagged: one parameter count and one first loss (within " +
                       fixed_text(nlohmann::json(kFirstLossTolerance * 100), 0) + "%) per dtype")
     << "\n";
  return md.str();
}

}  // namespace trainbench
