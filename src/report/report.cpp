// Run folders → reference-style comparison tables: the speed table, the detail rows
// (report_columns.h), the profile table; the `report` subcommand.
#include "trainbench/report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>

#include <cxxopts.hpp>
#include <filesystem>

#include "trainbench/core/errors.h"
#include "trainbench/core/run_files.h"
#include "trainbench/measure/profile.h"
#include "trainbench/report/report_columns.h"
#include "trainbench/report/results.h"

#include "speed_table.h"

namespace trainbench {

namespace {

// A category's row of summary.json's profile bounds (measure/step_bounds.h), or an empty object.
nlohmann::json bound_of_(const RunRecord& r, const std::string& category) {
  const nlohmann::json& b = r.profile.value("bounds", nlohmann::json());
  return b.is_object() && b.contains(category) && b[category].is_object()
             ? b[category]
             : nlohmann::json::object();
}

// Profiled runs side by side: ms per step (and share of the profiled step) by op category.
std::string profile_table_(const std::vector<RunRecord>& runs) {
  std::vector<const RunRecord*> p;
  for (const RunRecord& r : runs)
    if (r.profile.is_object() && r.profile.contains("ms_per_step")) p.push_back(&r);
  if (p.empty()) return "";
  std::ostringstream os;
  os << "\nTime per profiled step by op category, ms (share; times its bound: the category's "
        "FLOPs at the probed GEMM rate and bytes at the measured bandwidth)\n\n| category |";
  for (const RunRecord* r : p) os << " " << r->label << " " << r->dtype << " |";
  os << "\n|---|";
  for (size_t i = 0; i < p.size(); ++i) os << "---|";
  os << "\n";
  for (const std::string& c : profile_categories()) {
    os << "| " << c << " |";
    for (const RunRecord* r : p) {
      const nlohmann::json times = bound_of_(*r, c).value("times", nlohmann::json());
      os << " " << fixed_text(r->profile["ms_per_step"].value(c, nlohmann::json()), 1) << " ("
         << fixed_text(r->profile["share"].value(c, nlohmann::json()), 0, 100) << "%"
         << (times.is_number() ? ", " + fixed_text(times, 1) + "x bound" : std::string()) << ") |";
    }
    os << "\n";
  }
  os << "| step |";
  for (const RunRecord* r : p)
    os << " " << fixed_text(r->profile.value("step_ms", nlohmann::json()), 1) << " |";
  os << "\n| bound |";
  for (const RunRecord* r : p) {
    const nlohmann::json step = bound_of_(*r, "step");
    os << " " << fixed_text(step.value("bound_ms", nlohmann::json()), 1)
       << (step.value("times", nlohmann::json()).is_number()
               ? " (step " + fixed_text(step["times"], 2) + "x)"
               : std::string())
       << " |";
  }
  // Whose time: the CPU's ops, or a GPU's kernels by the op that launched them (measure/profile.h).
  os << "\n| time of |";
  for (const RunRecord* r : p) os << " " << r->profile.value("time_of", std::string("-")) << " |";
  os << "\n";
  return os.str();
}

// Each profiled run's GEMM products (CPU profiles): the in-step rate beside the probe's for the
// same product, so that where the step's GEMMs lose against the probe shows product by product.
std::string gemm_products_table_(const std::vector<RunRecord>& runs) {
  std::ostringstream os;
  for (const RunRecord& r : runs) {
    if (!r.profile.is_object() || !r.profile.contains("gemm_products")) continue;
    os << "\nGEMM products of " << r.label << " " << r.dtype
       << " per profiled step (the op's whole time; the probe's rate for the same product)\n\n"
          "| product ([batch x] M x K x N) | probe's | calls | ms | GFLOP/s | probe GFLOP/s | "
          "in step / probe |\n|---|---|---|---|---|---|---|\n";
    for (const nlohmann::json& p : r.profile["gemm_products"]) {
      const int64_t batch = p.value("batch", int64_t{1});
      const double rate = p.value("flops_per_s", 0.0), probe = p.value("probe_flops_per_s", 0.0);
      os << "| " << (batch > 1 ? std::to_string(batch) + " x " : std::string())
         << p.value("m", int64_t{0}) << " x " << p.value("k", int64_t{0}) << " x "
         << p.value("n", int64_t{0}) << " | " << p.value("probe_what", std::string("-")) << " | "
         << fixed_text(p.value("calls_per_step", nlohmann::json()), 0) << " | "
         << fixed_text(p.value("ms_per_step", nlohmann::json()), 1) << " | "
         << fixed_text(rate / 1e9, 1) << " | " << (probe > 0 ? fixed_text(probe / 1e9, 1) : "-")
         << " | " << (probe > 0 ? fixed_text(rate / probe, 2) + "x" : std::string("-")) << " |\n";
    }
  }
  return os.str();
}

std::string ratio_(const SpeedTable& t, const std::string& dtype, const std::string& label,
                   const std::string& baseline) {
  const auto r = ratio_value(t, dtype, label, baseline);
  if (!r) return shapes_differ(t, dtype, label, baseline) ? "n/a (other shape)" : "-";
  if (const auto p = u_test_p(t, dtype, label, baseline)) {
    return fixed_text(nlohmann::json(*r), 2) + "x (p=" + p_text(*p) + ")";
  }
  return fixed_text(nlohmann::json(*r), 2) + "x" +
         (within_spread(t, dtype, label, baseline) ? " ~" : "");
}

std::string markdown_(const std::vector<RunRecord>& runs, const SpeedTable& t,
                      const std::string& baseline, const std::string& caption) {
  std::ostringstream os;
  os << "Sequences per second (" << (caption.empty() ? "" : caption + "; ") << "ratios against "
     << baseline << ")\n\n| dtype |";
  for (const auto& l : t.labels) os << " " << l << " |";
  for (const auto& l : t.labels)
    if (l != baseline) os << " " << l << " vs " << baseline << " |";
  os << "\n|---|";
  for (size_t i = 0; i < 2 * t.labels.size() - 1; ++i) os << "---|";
  os << "\n";
  for (const auto& d : t.dtypes) {
    os << "| " << d << " |";
    for (const auto& l : t.labels) os << " " << speed_cell(t, d, l) << " |";
    for (const auto& l : t.labels)
      if (l != baseline) os << " " << ratio_(t, d, l, baseline) << " |";
    os << "\n";
  }
  bool any_within = false, any_repeated = false, any_p = false, any_other_shape = false;
  for (const auto& d : t.dtypes) {
    for (const auto& l : t.labels) {
      const bool tested = l != baseline && u_test_p(t, d, l, baseline).has_value();
      any_p |= tested;
      any_within |= l != baseline && !tested && within_spread(t, d, l, baseline);
      any_repeated |= aggregate(t, d, l).count > 1;
      any_other_shape |= l != baseline && shapes_differ(t, d, l, baseline);
    }
  }
  if (any_repeated) {
    os << "\nRepeated configurations: the median of their completed runs (n=count, min-max)"
       << (any_p ? "; p: a two-sided Mann-Whitney U-test of the two configurations' "
                   "repetitions (as google/benchmark's compare.py), below 0.05 they differ "
                   "(3 against 3 gives at best p=0.1: use 5 or more)"
                 : "")
       << (any_within ? "; ~: the two ranges overlap, no difference beyond their spread" : "")
       << ".\n";
  }
  if (any_other_shape) {
    os << "\nn/a: a configuration of another model shape than the baseline's has no ratio "
          "(compare it with a baseline of its own shape: --baseline LABEL).\n";
  }
  os << target_table(t, baseline);
  os << "\n" << detail_markdown(runs) << profile_table_(runs) << gemm_products_table_(runs);
  return os.str();
}

// Each configuration's completed repetitions: count, median, range, spread and, against the
// baseline, the U-test's p-value and whether the two ranges are apart.
nlohmann::ordered_json aggregates_json_(const SpeedTable& t, const std::string& baseline) {
  using Json = nlohmann::ordered_json;
  Json out = Json::array();
  for (const auto& d : t.dtypes) {
    for (const auto& l : t.labels) {
      const Aggregate a = aggregate(t, d, l);
      if (a.count == 0) continue;
      const auto p = l == baseline ? std::nullopt : u_test_p(t, d, l, baseline);
      out.push_back({{"configuration", l},
                     {"dtype", d},
                     {"count", a.count},
                     {"sequences_per_s_median", a.median},
                     {"sequences_per_s_min", a.min},
                     {"sequences_per_s_max", a.max},
                     {"sequences_per_s_cv_percent", Json(percent_value(a.cv))},
                     {"u_test_p", p ? Json(*p) : Json(nullptr)},
                     {"differs_from_baseline_beyond_spread",
                      l == baseline ? Json(nullptr)
                                    : Json(a.count > 1 && aggregate(t, d, baseline).count > 1 &&
                                           !within_spread(t, d, l, baseline))}});
    }
  }
  return out;
}

// The JSON document: the runs (report_columns.h's keys, in its order), the aggregates and
// the speed-ups as the markdown shows them.
nlohmann::ordered_json json_(const std::vector<RunRecord>& runs, const SpeedTable& t,
                             const std::string& baseline) {
  nlohmann::ordered_json j;
  j["schema_version"] = kSchemaVersion;
  j["baseline"] = baseline;
  j["runs"] = nlohmann::ordered_json::array();
  for (const RunRecord& r : runs) j["runs"].push_back(detail_json(r));
  j["aggregates"] = aggregates_json_(t, baseline);
  j["speedup"] = nlohmann::ordered_json::object();
  for (const auto& d : t.dtypes) {
    for (const auto& l : t.labels) {
      const auto r = ratio_value(t, d, l, baseline);
      if (l != baseline && r) j["speedup"][d][l] = std::round(*r * 100) / 100;  // as shown
    }
  }
  return j;
}

}  // namespace

std::string render_report(const std::vector<RunRecord>& input, const ReportOptions& options) {
  if (input.empty()) throw ConfigError("report: no readable run folder; give RUN_DIR...");
  // CSV and JSON keep whole labels (with the shape where shapes differ); the markdown shows
  // the short ones. --baseline takes either.
  std::vector<RunRecord> runs = input, shortened = input;
  const bool mixed = std::any_of(runs.begin(), runs.end(),
                                 [&](const RunRecord& r) { return r.shape != runs[0].shape; });
  if (mixed) {
    for (RunRecord& r : runs) r.label += " [" + r.shape + "]";
  }
  const std::string caption = shorten_labels(shortened);
  const bool markdown = options.format != "csv" && options.format != "json";
  std::string baseline = options.baseline;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (baseline == runs[i].label || baseline == shortened[i].label) {
      baseline = markdown ? shortened[i].label : runs[i].label;
    }
  }
  if (markdown) runs = shortened;
  const SpeedTable t = speed_table(runs);
  if (baseline.empty()) baseline = t.labels.front();
  if (std::find(t.labels.begin(), t.labels.end(), baseline) == t.labels.end()) {
    std::string allowed;
    for (const auto& l : t.labels) allowed += (allowed.empty() ? "'" : ", '") + l + "'";
    throw ConfigError("--baseline: '" + baseline + "' is not a configuration; use one of " +
                      allowed);
  }
  if (options.format == "csv") return detail_csv(runs);
  if (options.format == "json") return json_(runs, t, baseline).dump(2) + "\n";
  return markdown_(runs, t, baseline, caption);
}

namespace {

const char* const kReportHelp =
    "\nEach RUN_DIR is a run folder (it holds config.json) or a folder searched below for them,\n"
    "as tensorboard --logdir searches; a folder of repetitions (bench --repeat N) stands for\n"
    "its rep-K folders. The speed table has a row per dtype and a column per configuration;\n"
    "repetitions of one configuration are aggregated: the median seq/s with n=count and the\n"
    "min-max range. Ratios divide medians by the baseline's, within one model shape (others:\n"
    "n/a). With 3 or more repetitions on both sides a ratio carries p=, the two-sided\n"
    "Mann-Whitney U-test's p-value (below 0.05: the two differ); with fewer, ~ marks two\n"
    "ranges that overlap. --baseline results/NAME (a published measurement, a folder with\n"
    "machine.json: scripts/record_results.sh) sets each configuration of yours beside the same\n"
    "configuration there instead: your median over the published one, and p= as above;\n"
    "with --fail_below R also a regression gate: exit 1, naming the rows, where one of your\n"
    "configurations is slower than R times the published one (its median ratio below R and\n"
    "p < 0.05 against the published runs' speeds times R; 4 or more repetitions a side).\n"
    "--manifest prints each run's fairness manifest (what makes frameworks comparable) and\n"
    "flags rows whose parameter counts or first losses disagree.\n"
    "Exit status: 0; 1 where --fail_below found a slower configuration; 2 for bad flags or no\n"
    "readable run folder.\n";

// The runs of the folders under `paths`; a path that holds none, or a folder that cannot be
// read, is skipped with a warning naming it.
std::vector<RunRecord> read_runs_(const std::vector<std::string>& paths) {
  std::vector<RunRecord> runs;
  for (const auto& dir : run_folders(paths)) {
    std::error_code ec;
    if (!std::filesystem::exists(dir, ec)) {
      std::fprintf(stderr, "bench report: warning: skipping '%s': no such file or folder\n",
                   dir.c_str());
      continue;
    }
    if (std::filesystem::is_directory(dir, ec) &&
        !std::filesystem::exists(run_file(dir, RunFile::kConfig), ec)) {
      std::fprintf(stderr,
                   "bench report: warning: skipping '%s': no run folder in it (none holds a "
                   "config.json)\n",
                   dir.c_str());
      continue;
    }
    try {
      runs.push_back(read_run(dir));
    } catch (const RunError& e) {
      std::fprintf(stderr, "bench report: warning: skipping %s\n", e.what());
    }
  }
  return runs;
}

}  // namespace

int report_main(int argc, const char* const* argv) {
  cxxopts::Options options("bench report", "comparison tables from run folders");
  options
      .custom_help("[--csv|--json] [--baseline LABEL|results/NAME [--fail_below R]] [--manifest]")
      .positional_help("RUN_DIR...");
  options.add_options()("csv", "CSV detail rows instead of markdown")(
      "json", "JSON (runs and speed-up ratios) instead of markdown")(
      "baseline",
      "configuration column the ratios divide by (default: the first column), or results/NAME: "
      "a published measurement to set your runs beside",
      cxxopts::value<std::string>())(
      "fail_below",
      "with --baseline results/NAME: exit 1 where a configuration is slower than R times the "
      "published one with p < 0.05 (a regression gate), e.g. 0.9",
      cxxopts::value<double>())("manifest", "each run's fairness manifest instead of the tables")(
      "h,help", "print this help")(
      "dirs", "run folders, or folders to search for them (as tensorboard --logdir)",
      cxxopts::value<std::vector<std::string>>());
  options.parse_positional({"dirs"});
  try {
    const auto args = options.parse(argc, argv);
    if (args.count("help")) {
      std::cout << options.help() << kReportHelp;
      return 0;
    }
    if (args.count("csv") && args.count("json")) {
      throw ConfigError("report: --csv and --json exclude each other; choose one");
    }
    std::vector<RunRecord> runs;
    if (args.count("dirs")) runs = read_runs_(args["dirs"].as<std::vector<std::string>>());
    ReportOptions ro;
    ro.format = args.count("csv") ? "csv" : args.count("json") ? "json" : "markdown";
    ro.baseline = args.count("baseline") ? args["baseline"].as<std::string>() : "";
    const double fail_below = args.count("fail_below") ? args["fail_below"].as<double>() : 0;
    if (args.count("fail_below") && !(fail_below > 0 && fail_below <= 10)) {
      std::ostringstream given;
      given << fail_below;
      throw ConfigError("--fail_below: " + given.str() +
                        " is not allowed; give a ratio above 0 and at most 10, e.g. 0.9");
    }
    if (args.count("manifest")) {
      if (ro.format == "csv") throw ConfigError("--csv: not allowed with --manifest; use --json");
      if (runs.empty()) throw ConfigError("report: no readable run folder; give RUN_DIR...");
      std::cout << render_manifest(runs, ro.format);
      return 0;
    }
    if (is_published_folder(ro.baseline)) {
      if (ro.format == "csv") {
        throw ConfigError("--csv: not allowed with a published --baseline ('" + ro.baseline +
                          "'); use the markdown table or --json");
      }
      const std::vector<RunRecord> published = read_runs_({ro.baseline});
      const PublishedComparison c =
          compare_with_published(runs, published, ro.baseline, ro.format, fail_below);
      std::cout << c.text;
      if (!c.slower.empty()) {
        std::fprintf(stderr, "bench report: %zu configuration(s) slower than %.2fx %s\n",
                     c.slower.size(), fail_below, ro.baseline.c_str());
        return 1;
      }
      return 0;
    }
    if (fail_below > 0) {
      throw ConfigError(
          "--fail_below: needs --baseline results/NAME (a published folder with "
          "machine.json); '" +
          ro.baseline + "' is not one");
    }
    std::cout << render_report(runs, ro);
    return 0;
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "bench report: error: %s\n", e.what());
    return 2;
  } catch (const cxxopts::exceptions::no_such_option& e) {
    // bench's own wording, without cxxopts' typographic quotes.
    std::string name = e.what();
    const size_t a = name.find("\xe2\x80\x98"), b = name.find("\xe2\x80\x99");
    name = a != std::string::npos && b != std::string::npos ? name.substr(a + 3, b - a - 3) : name;
    std::fprintf(stderr,
                 "bench report: error: --%s: unknown flag; allowed: --csv, --json, --baseline "
                 "LABEL, --fail_below R, --manifest, --help (see bench report --help)\n",
                 name.c_str());
    return 2;
  } catch (const cxxopts::exceptions::exception& e) {
    std::fprintf(stderr, "bench report: error: %s; see bench report --help\n", e.what());
    return 2;
  }
}

}  // namespace trainbench
