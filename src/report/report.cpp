// Run folders → reference-style comparison tables.
#include "trainbench/report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <type_traits>

#include <cxxopts.hpp>
#include <filesystem>
#include <fstream>

#include "trainbench/core/config.h"
#include "trainbench/core/errors.h"
#include "trainbench/core/timing.h"
#include "trainbench/report/profile.h"
#include "trainbench/report/results.h"
#include "trainbench/report/run_lock.h"

#include "speed_table.h"

namespace trainbench {

namespace {

std::string num_(const nlohmann::json& v, int precision, double scale = 1.0) {
  if (!v.is_number()) return "-";
  std::ostringstream os;
  os << std::fixed << std::setprecision(precision) << v.get<double>() * scale;
  return os.str();
}

// Whether any run has communication figures (their columns are shown only then).
bool any_communication_(const std::vector<RunRecord>& runs) {
  return std::any_of(runs.begin(), runs.end(),
                     [](const RunRecord& r) { return r.communication_ms.is_number(); });
}

// Profiled runs side by side: ms per step (and share of the profiled step) by op category.
// A category's row of summary.json's profile bounds (model/step_bounds.h), or an empty object.
nlohmann::json bound_of_(const RunRecord& r, const std::string& category) {
  const nlohmann::json& b = r.profile.value("bounds", nlohmann::json());
  return b.is_object() && b.contains(category) && b[category].is_object()
             ? b[category]
             : nlohmann::json::object();
}

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
      os << " " << num_(r->profile["ms_per_step"].value(c, nlohmann::json()), 1) << " ("
         << num_(r->profile["share"].value(c, nlohmann::json()), 0, 100) << "%"
         << (times.is_number() ? ", " + num_(times, 1) + "x bound" : std::string()) << ") |";
    }
    os << "\n";
  }
  os << "| step |";
  for (const RunRecord* r : p)
    os << " " << num_(r->profile.value("step_ms", nlohmann::json()), 1) << " |";
  os << "\n| bound |";
  for (const RunRecord* r : p) {
    const nlohmann::json step = bound_of_(*r, "step");
    os << " " << num_(step.value("bound_ms", nlohmann::json()), 1)
       << (step.value("times", nlohmann::json()).is_number()
               ? " (step " + num_(step["times"], 2) + "x)"
               : std::string())
       << " |";
  }
  os << "\n";
  return os.str();
}

// "unreliable" where the run outran its peak, else the MFU in percent.
std::string mfu_text_(const RunRecord& r) {
  return r.peak_unreliable ? "unreliable" : num_(r.mfu, 1, 100);
}

// "cv 3%, 10% disturbed" from summary.json's noise; "-" without it.
std::string noise_text_(const RunRecord& r) {
  if (!r.noise.is_object()) return "-";
  std::string t = "cv " + num_(r.noise.value("step_time_cv", nlohmann::json()), 0, 100) + "%, " +
                  num_(r.noise.value("disturbed_step_share", nlohmann::json()), 0, 100) +
                  "% disturbed";
  return r.noise.value("unstable", false) ? t + " (unstable)" : t;
}

// CSV and JSON give shares in percent as the markdown does (summary.json keeps fractions):
// mfu_percent, step_time_cv_percent, disturbed_step_percent, communication_percent.
nlohmann::json percent_(const nlohmann::json& fraction) {
  // Rounded to 1e-6 so that 0.018 reads 1.8, not 1.7999999999999998.
  return fraction.is_number() ? nlohmann::json(std::round(fraction.get<double>() * 1e8) / 1e6)
                              : nlohmann::json();
}

nlohmann::json noise_(const RunRecord& r, const char* key) {
  return r.noise.is_object() ? r.noise.value(key, nlohmann::json()) : nlohmann::json();
}

// Three significant figures or whole numbers: 1093, 98.1, 3.53.
std::string speed_text_(double v) {
  return num_(nlohmann::json(v), v >= 100 ? 0 : v >= 10 ? 1 : 2);
}

// A p-value in three decimals, "<0.001" below.
std::string p_text_(double p) { return p < 0.001 ? "<0.001" : num_(nlohmann::json(p), 3); }

std::string cell_(const SpeedTable& t, const std::string& dtype, const std::string& label) {
  const Aggregate a = aggregate(t, dtype, label);
  if (!a.first) return "";
  if (a.count == 0) return a.first->status;
  if (a.count == 1) return speed_text_(a.median);
  // The median of the repetitions, with their count and range.
  return speed_text_(a.median) + " (n=" + std::to_string(a.count) + ", " + speed_text_(a.min) +
         "-" + speed_text_(a.max) + ")";
}

std::string ratio_(const SpeedTable& t, const std::string& dtype, const std::string& label,
                   const std::string& baseline) {
  const auto r = ratio_value(t, dtype, label, baseline);
  if (!r) return shapes_differ(t, dtype, label, baseline) ? "n/a (other shape)" : "-";
  if (const auto p = u_test_p(t, dtype, label, baseline)) {
    return num_(nlohmann::json(*r), 2) + "x (p=" + p_text_(*p) + ")";
  }
  return num_(nlohmann::json(*r), 2) + "x" + (within_spread(t, dtype, label, baseline) ? " ~" : "");
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
    for (const auto& l : t.labels) os << " " << cell_(t, d, l) << " |";
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
  const bool comm = any_communication_(runs);
  os << "\n| configuration | dtype | layers | batch | seq/s | tokens/s | MFU % | GEMM | noise | "
        "peak MB | warm-up s | compile s | train bpb | valid bpb | "
     << (comm ? "comm ms/step | comm share | " : "")
     << "status | machine | date | revision | folder |\n"
     << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
     << (comm ? "---|---|" : "") << "\n";
  for (const RunRecord& r : runs) {
    os << "| " << r.label << " | " << r.dtype << " | " << r.num_layer << " | " << r.batch_size
       << " | " << num_(r.sequences_per_s, 2) << " | " << num_(r.tokens_per_s, 0) << " | "
       << mfu_text_(r) << " | "
       << (r.gemm_path.empty()
               ? "-"
               : r.gemm_path + (r.gemm_choice.empty() ? "" : " (" + r.gemm_choice + ")"))
       << " | " << noise_text_(r) << " | " << num_(r.peak_memory_bytes, 0, 1.0 / (1 << 20)) << " | "
       << num_(r.warmup_seconds, 1) << " | " << num_(r.compile_seconds, 1) << " | "
       << num_(r.final_train_bpb, 4) << " | " << num_(r.final_valid_bpb, 4) << " | ";
    if (comm) {
      const std::string share = num_(r.communication_share, 1, 100);
      os << num_(r.communication_ms, 1) << " | " << (share == "-" ? share : share + "%") << " | ";
    }
    auto or_dash = [](const std::string& v) { return v.empty() ? std::string("-") : v; };
    os << r.status << (r.last_step > 0 ? " at step " + std::to_string(r.last_step) : std::string())
       << " | " << or_dash(r.machine) << " | " << or_dash(r.date) << " | " << or_dash(r.revision)
       << " | " << r.dir << " |\n";
  }
  os << profile_table_(runs);
  return os.str();
}

std::string csv_(const std::vector<RunRecord>& runs) {
  std::ostringstream os;
  const bool comm = any_communication_(runs);
  os << "configuration,dtype,num_layer,batch_size,sequences_per_s,tokens_per_s,mfu_percent,"
        "peak_unreliable,gemm_path,gemm_choice,step_time_cv_percent,disturbed_step_percent,peak_"
        "memory_bytes,"
        "final_train_bpb,final_valid_bpb,"
     << (comm ? "communication_ms,communication_percent," : "")
     << "status,machine,date,revision,dir\n";
  auto field = [](const nlohmann::json& v) { return v.is_number() ? v.dump() : std::string(); };
  auto pct = [&](const nlohmann::json& v) { return field(percent_(v)); };
  auto quoted = [](const std::string& s) {
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  for (const RunRecord& r : runs) {
    os << quoted(r.label) << "," << r.dtype << "," << r.num_layer << "," << r.batch_size << ","
       << field(r.sequences_per_s) << "," << field(r.tokens_per_s) << "," << pct(r.mfu) << ","
       << (r.peak_unreliable ? "true" : "false") << "," << r.gemm_path << "," << r.gemm_choice
       << "," << pct(noise_(r, "step_time_cv")) << "," << pct(noise_(r, "disturbed_step_share"))
       << "," << field(r.peak_memory_bytes) << "," << field(r.final_train_bpb) << ","
       << field(r.final_valid_bpb) << ",";
    if (comm) os << field(r.communication_ms) << "," << pct(r.communication_share) << ",";
    os << r.status << "," << quoted(r.machine) << "," << r.date << "," << quoted(r.revision) << ","
       << quoted(r.dir) << "\n";
  }
  return os.str();
}

nlohmann::json json_(const std::vector<RunRecord>& runs, const SpeedTable& t,
                     const std::string& baseline) {
  nlohmann::json j;
  j["schema_version"] = kSchemaVersion;
  j["baseline"] = baseline;
  j["runs"] = nlohmann::json::array();
  for (const RunRecord& r : runs) {
    j["runs"].push_back(
        {{"configuration", r.label},
         {"dtype", r.dtype},
         {"num_layer", r.num_layer},
         {"batch_size", r.batch_size},
         {"sequences_per_s", r.sequences_per_s},
         {"tokens_per_s", r.tokens_per_s},
         {"mfu_percent", percent_(r.mfu)},
         {"peak_unreliable", r.peak_unreliable},
         {"gemm_path", r.gemm_path.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.gemm_path)},
         {"gemm_choice",
          r.gemm_choice.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.gemm_choice)},
         {"step_time_cv_percent", percent_(noise_(r, "step_time_cv"))},
         {"disturbed_step_percent", percent_(noise_(r, "disturbed_step_share"))},
         {"unstable", r.noise.is_object() ? r.noise.value("unstable", nlohmann::json(nullptr))
                                          : nlohmann::json(nullptr)},
         {"peak_memory_bytes", r.peak_memory_bytes},
         {"final_train_bpb", r.final_train_bpb},
         {"final_valid_bpb", r.final_valid_bpb},
         {"status", r.status},
         {"machine", r.machine},
         {"date", r.date},
         {"revision", r.revision},
         {"dir", r.dir}});
    if (r.communication_ms.is_number()) {
      j["runs"].back()["communication_ms"] = r.communication_ms;
      j["runs"].back()["communication_percent"] = percent_(r.communication_share);
    }
  }
  j["aggregates"] = nlohmann::json::array();
  for (const auto& d : t.dtypes) {
    for (const auto& l : t.labels) {
      const Aggregate a = aggregate(t, d, l);
      if (a.count == 0) continue;
      j["aggregates"].push_back(
          {{"configuration", l},
           {"dtype", d},
           {"count", a.count},
           {"sequences_per_s_median", a.median},
           {"sequences_per_s_min", a.min},
           {"sequences_per_s_max", a.max},
           {"sequences_per_s_cv_percent", percent_(a.cv)},
           {"u_test_p", l == baseline ? nlohmann::json(nullptr) : [&] {
              const auto p = u_test_p(t, d, l, baseline);
              return p ? nlohmann::json(*p) : nlohmann::json(nullptr);
            }()},
           {"differs_from_baseline_beyond_spread",
            l == baseline ? nlohmann::json(nullptr)
                          : nlohmann::json(a.count > 1 && aggregate(t, d, baseline).count > 1 &&
                                           !within_spread(t, d, l, baseline))}});
    }
  }
  j["speedup"] = nlohmann::json::object();
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
  if (options.format == "csv") return csv_(runs);
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
    "ranges that overlap. Exit status: 0, or 2 for bad flags or no readable run folder.\n";

}  // namespace

int report_main(int argc, const char* const* argv) {
  cxxopts::Options options("bench report", "comparison tables from run folders");
  options.custom_help("[--csv|--json] [--baseline LABEL]").positional_help("RUN_DIR...");
  options.add_options()("csv", "CSV detail rows instead of markdown")(
      "json", "JSON (runs and speed-up ratios) instead of markdown")(
      "baseline", "configuration column the ratios divide by (default: the first column)",
      cxxopts::value<std::string>())("h,help", "print this help")(
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
    if (args.count("dirs")) {
      for (const auto& dir : run_folders(args["dirs"].as<std::vector<std::string>>())) {
        std::error_code ec;
        if (!std::filesystem::exists(dir, ec)) {
          std::fprintf(stderr, "bench report: warning: skipping '%s': no such file or folder\n",
                       dir.c_str());
          continue;
        }
        if (std::filesystem::is_directory(dir, ec) &&
            !std::filesystem::exists(dir + "/config.json", ec)) {
          std::fprintf(stderr,
                       "bench report: warning: skipping '%s': no run folder in it (none holds "
                       "a config.json)\n",
                       dir.c_str());
          continue;
        }
        try {
          runs.push_back(read_run(dir));
        } catch (const RunError& e) {
          std::fprintf(stderr, "bench report: warning: skipping %s\n", e.what());
        }
      }
    }
    ReportOptions ro;
    ro.format = args.count("csv") ? "csv" : args.count("json") ? "json" : "markdown";
    ro.baseline = args.count("baseline") ? args["baseline"].as<std::string>() : "";
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
                 "LABEL, --help (see bench report --help)\n",
                 name.c_str());
    return 2;
  } catch (const cxxopts::exceptions::exception& e) {
    std::fprintf(stderr, "bench report: error: %s; see bench report --help\n", e.what());
    return 2;
  }
}

}  // namespace trainbench
