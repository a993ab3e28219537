// `bench report --baseline results/NAME RUN_DIR...`: a user's runs against a published
// measurement of their machine class (a folder under results/, scripts/record_results.sh): each
// configuration and dtype of theirs beside the same configuration there, the ratio of medians
// within one model shape and, with 3 or more repetitions a side, the U-test's p.
#include <algorithm>
#include <filesystem>
#include <sstream>

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
    return line + " at " + m.value("commit", std::string("?")).substr(0, 7);
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

std::string render_against_published(const std::vector<RunRecord>& yours,
                                     const std::vector<RunRecord>& published,
                                     const std::string& folder, const std::string& format) {
  if (published.empty()) {
    throw ConfigError("--baseline: '" + folder + "' holds no readable run folder");
  }
  if (yours.empty()) {
    throw ConfigError("no readable run folder of yours to set beside '" + folder +
                      "'; give RUN_DIR...");
  }
  // One table of both sides: the published runs' labels carry kPublished; where the runs are
  // of more than one model shape, every label carries its shape, so no cell pools two shapes.
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
  const SpeedTable t = speed_table(all);
  nlohmann::json rows = nlohmann::json::array();
  std::ostringstream md;
  const std::string machine = machine_line_(folder);
  md << "Your runs against " << folder << (machine.empty() ? "" : " (" + machine + ")")
     << "; ratio: your median seq/s over the published one, within one model shape\n\n"
     << "| configuration | dtype | yours seq/s | published seq/s | ratio | p |\n"
     << "|---|---|---|---|---|---|\n";
  for (const std::string& dtype : t.dtypes) {
    for (const std::string& label : t.labels) {
      if (published_label_(label)) continue;
      const Aggregate mine = aggregate(t, dtype, label);
      if (!mine.first) continue;
      const std::string other = label + kPublished;
      const Aggregate theirs = aggregate(t, dtype, other);
      const auto ratio = ratio_value(t, dtype, label, other);
      const auto p = u_test_p(t, dtype, label, other);
      std::string ratio_cell = "-";
      if (ratio) {
        ratio_cell = fixed_text(nlohmann::json(*ratio), 2) + "x";
      } else if (shapes_differ(t, dtype, label, other)) {
        ratio_cell = "n/a (other shape)";
      } else if (!theirs.first) {
        ratio_cell = "not published";
      }
      const std::string theirs_cell = speed_cell(t, dtype, other);
      md << "| " << label << " | " << dtype << " | " << speed_cell(t, dtype, label) << " | "
         << (theirs_cell.empty() ? "-" : theirs_cell) << " | " << ratio_cell << " | "
         << (p ? p_text(*p) : "-") << " |\n";
      rows.push_back(
          {{"configuration", label},
           {"dtype", dtype},
           {"yours_sequences_per_s", mine.count ? nlohmann::json(mine.median) : nullptr},
           {"yours_n", mine.count},
           {"published_sequences_per_s", theirs.count ? nlohmann::json(theirs.median) : nullptr},
           {"published_n", theirs.count},
           {"ratio", ratio ? nlohmann::json(*ratio) : nullptr},
           {"p", p ? nlohmann::json(*p) : nullptr}});
    }
  }
  if (format == "json") {
    return nlohmann::json({{"schema_version", kSchemaVersion},
                           {"published", folder},
                           {"machine", machine},
                           {"rows", rows}})
               .dump(2) +
           "\n";
  }
  return md.str();
}

}  // namespace trainbench
