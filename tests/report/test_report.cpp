// bench report on hand-made run folders: tables, ratios, unfinished and malformed runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <filesystem>
#include <tuple>

#include "report_folders.h"
#include "test_util.h"
#include "trainbench/core/config.h"
#include "trainbench/report/progress.h"
#include "trainbench/report/report.h"

namespace trainbench {
namespace {

class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dirs = {make_run(root, "a", "", "torch", "bfloat16", 0, "completed", 1093),
            make_run(root, "b", "", "handcraft", "bfloat16", 0, "completed", 1273),
            make_run(root, "c", "", "handcraft", "float32", 0, "completed", 672),
            make_run(root, "d", "", "torch", "float32", 0, "interrupted", 100),
            make_run(root, "e", "pytorch", "handcraft", "float32", 1, "completed", 736)};
    for (const auto& d : dirs) runs.push_back(read_run(d));
  }
  testing::TempDir root;
  std::vector<std::string> dirs;
  std::vector<RunRecord> runs;
};

TEST(Progress, DurationsReadAsDaysHoursMinutesSeconds) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(42.4), "42s");
  EXPECT_EQ(format_duration(59.6), "1m 00s");
  EXPECT_EQ(format_duration(190), "3m 10s");
  EXPECT_EQ(format_duration(3600), "1h 00m");
  EXPECT_EQ(format_duration(2 * 3600 + 5 * 60 + 59), "2h 05m");
  EXPECT_EQ(format_duration(167195), "1d 22h");
  EXPECT_EQ(format_duration(-1), "?");
  EXPECT_EQ(format_duration(NAN), "?");
}

// A run stopped before its speed existed (in memory: NaN; no timed step) shows "-" where
// bench report does, never "nan" or "0.0 (0.0-0.0)".
TEST(Progress, AnInterruptedRunsTableShowsDashesAsTheReportDoes) {
  const nlohmann::json config = {{"model", "handcraft"}, {"dtype", "float32"}, {"num_layer", 1},
                                 {"flash", false},       {"compile", "none"},  {"device", "cpu"}};
  const nlohmann::json summary = {{"status", "interrupted"}, {"sequences_per_s", NAN},
                                  {"tokens_per_s", NAN},     {"step_time_ms", nullptr},
                                  {"mfu", nullptr},          {"peak_memory_bytes", 1 << 20},
                                  {"final_train_bpb", NAN},  {"final_valid_bpb", NAN}};
  const std::string t = summary_table(config, summary);
  EXPECT_NE(t.find("| cpu | - | - | - | - | 1 | - | - | interrupted |"), std::string::npos) << t;
  EXPECT_EQ(t.find("nan"), std::string::npos) << t;
}

TEST_F(ReportTest, SpeedTableHasDtypeRowsConfigurationColumnsAndRatios) {
  const std::string md = render_report(runs, {});
  EXPECT_NE(md.find("| dtype | libtorch torch | libtorch handcraft | pytorch handcraft compiled | "
                    "libtorch handcraft vs libtorch torch | pytorch handcraft compiled vs "
                    "libtorch torch |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| bfloat16 | 1093 | 1273 |  | 1.16x | - |"), std::string::npos) << md;
  // The interrupted torch float32 run is shown as such and never enters a ratio.
  EXPECT_NE(md.find("| float32 | interrupted | 672 | 736 | - | - |"), std::string::npos) << md;
  EXPECT_NE(md.find("| libtorch torch | float32 | 8 | 100 | 100.00 | 25600 | 25.0 | - | - | 3 | - "
                    "| - | - | - "
                    "| interrupted |"),
            std::string::npos)
      << md;
}

TEST_F(ReportTest, BaselineColumnIsSelectable) {
  ReportOptions o;
  o.baseline = "libtorch handcraft";
  const std::string md = render_report(runs, o);
  EXPECT_NE(md.find("| float32 | interrupted | 672 | 736 | - | 1.10x |"), std::string::npos) << md;
  o.baseline = "nope";
  try {
    render_report(runs, o);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--baseline: 'nope' is not a configuration; use one of "
                                         "'libtorch torch', 'libtorch handcraft'"),
              std::string::npos);
  }
}

TEST_F(ReportTest, RunsOfDifferentShapesAreNeverDividedIntoEachOther) {
  runs[0].shape = "24 layers, d_model 512, seq_len 256, batch 100";
  const std::string md = render_report(runs, {});
  // The caption names what every run shares; a label only what sets its shape apart.
  EXPECT_NE(md.find("Sequences per second (batch 100; ratios against"), std::string::npos) << md;
  EXPECT_NE(md.find("| libtorch torch [24 layers, d_model 512, seq_len 256] |"), std::string::npos)
      << md;
  // The 24-layer torch run and the 8-layer torch run are different columns now.
  EXPECT_NE(md.find("| libtorch torch [8 layers, d_model 0, seq_len 0] |"), std::string::npos)
      << md;
  // CSV keeps the whole shape in the label.
  ReportOptions csv;
  csv.format = "csv";
  EXPECT_NE(render_report(runs, csv).find("\"libtorch torch [8 layers, d_model 0, seq_len 0, "
                                          "batch 100]\""),
            std::string::npos);
}

TEST_F(ReportTest, CsvAndJsonCarryTheSameRuns) {
  ReportOptions o;
  o.format = "csv";
  const std::string csv = render_report(runs, o);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 6);  // header + 5 runs
  EXPECT_NE(
      csv.find("\"libtorch handcraft\",bfloat16,8,100,1273.0,325888.0,25.0,false,,,,,,3145728,,,,"
               "1.5,completed,,\"\",,\"\","),
      std::string::npos)
      << csv;
  o.format = "json";
  const auto j = nlohmann::json::parse(render_report(runs, o));
  EXPECT_EQ(j["runs"].size(), 5u);
  EXPECT_NEAR(j["speedup"]["bfloat16"]["libtorch handcraft"].get<double>(), 1.16, 1e-9);
  EXPECT_TRUE(j["runs"][3]["final_valid_bpb"].is_null());
  // Shares in percent in every format, as the markdown's "MFU %" column.
  EXPECT_DOUBLE_EQ(j["runs"][1]["mfu_percent"].get<double>(), 25.0);
  EXPECT_FALSE(j["runs"][1].contains("mfu"));
  EXPECT_NE(csv.find(",mfu_percent,"), std::string::npos) << csv;
  EXPECT_NE(render_report(runs, {}).find("| MFU % |"), std::string::npos);
}

TEST_F(ReportTest, MalformedAndMismatchedFoldersAreWarnedAboutAndSkipped) {
  const std::string bad = root / "bad";
  std::filesystem::create_directories(bad);
  testing::write_file(bad + "/config.json", "{not json");
  testing::write_file(bad + "/summary.json", "{}");
  const std::string v1 = make_run(root, "v1", "", "torch", "float32", 0, "completed", 1, 1);
  EXPECT_THROW(read_run(bad), RunError);
  EXPECT_THROW(read_run(v1), RunError);
  const auto r =
      testing::run_bench("report " + dirs[1] + " " + bad + " " + v1 + " " + (root / "missing"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: skipping '" + bad + "/config.json' is not valid JSON"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("warning: skipping '" + v1 + "': schema_version 1; this bench reads " +
                          std::to_string(kSchemaVersion) +
                          " only: run that configuration again with this bench"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("warning: skipping '" + root / "missing" + "': no such file or folder\n"),
            std::string::npos)
      << r.output;
  // A folder with no run folder in it says so, not "cannot read its config.json".
  std::filesystem::create_directories(root / "empty");
  const auto empty = testing::run_bench("report " + dirs[1] + " " + (root / "empty"));
  EXPECT_NE(empty.output.find("warning: skipping '" + root / "empty" +
                              "': no run folder in it (none holds a config.json)\n"),
            std::string::npos)
      << empty.output;
  EXPECT_NE(r.output.find("| bfloat16 | 1273 |"), std::string::npos) << r.output;
  const auto none = testing::run_bench("report " + bad);
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.output.find("bench report: error: report: no readable run folder"),
            std::string::npos);
}

// A folder of run folders is searched (as tensorboard --logdir); report's errors and help read
// as bench's do.
TEST_F(ReportTest, AFolderOfRunsIsSearchedAndBadFlagsAreOneLineErrors) {
  const std::vector<std::string> found = run_folders({root.path()});
  EXPECT_EQ(found.size(), dirs.size());
  for (const std::string& d : dirs) {
    EXPECT_NE(std::find(found.begin(), found.end(), d), found.end()) << d;
  }
  const auto all = testing::run_bench("report " + root.path());
  EXPECT_EQ(all.exit_code, 0) << all.output;
  EXPECT_NE(all.output.find("| bfloat16 | 1093 | 1273 |"), std::string::npos) << all.output;
  const auto bad = testing::run_bench("report --md " + root.path());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.output,
            "bench report: error: --md: unknown flag; allowed: --csv, --json, --baseline LABEL, "
            "--fail_below R, --manifest, --help (see bench report --help)\n");
  const auto help = testing::run_bench("report --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.output.find("(default: \"\")"), std::string::npos) << help.output;
  EXPECT_NE(help.output.find("bench report [--csv|--json] [--baseline LABEL|results/NAME "
                             "[--fail_below R]] [--manifest] RUN_DIR...\n"),
            std::string::npos)
      << help.output;
}

// Repetitions of one configuration are aggregated (google/benchmark's median and spread): the
// cell shows the median, the count and the range; a ratio whose two ranges overlap is marked
// as no difference beyond the spread; the JSON carries the aggregates.
TEST_F(ReportTest, RepetitionsAreAggregatedAndOverlappingRangesAreMarked) {
  std::vector<RunRecord> rs = runs;
  for (const auto& [name, model, seq] :
       {std::tuple<const char*, const char*, double>{"a2", "torch", 1100},
        {"a3", "torch", 1080},
        {"b2", "handcraft", 1290},
        {"b3", "handcraft", 1260},
        {"f1", "handcraft", 700},
        {"f2", "handcraft", 660}}) {
    const std::string dtype = std::string(name)[0] == 'f' ? "float32" : "bfloat16";
    rs.push_back(read_run(make_run(root, name, "", model, dtype, 0, "completed", seq)));
  }
  const std::string md = render_report(rs, ReportOptions{});
  // torch bf16: 1093, 1100, 1080; handcraft bf16: 1273, 1290, 1260 (apart); handcraft f32: 672,
  // 700, 660 against the interrupted torch f32 (no ratio).
  EXPECT_NE(md.find("| bfloat16 | 1093 (n=3, 1080-1100) | 1273 (n=3, 1260-1290) |"),
            std::string::npos)
      << md;
  // Three against three: the U-test's p-value (scipy: 0.1, the smallest 3 against 3 can give).
  EXPECT_NE(md.find("| 1.16x (p=0.100) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| float32 | interrupted | 672 (n=3, 660-700) |"), std::string::npos) << md;
  EXPECT_NE(md.find("Repeated configurations: the median"), std::string::npos) << md;
  EXPECT_NE(md.find("p: a two-sided Mann-Whitney U-test"), std::string::npos) << md;
  EXPECT_EQ(md.find(" ~ |"), std::string::npos) << md;
  rs.push_back(read_run(make_run(root, "a4", "", "torch", "bfloat16", 0, "completed", 1300)));
  const std::string four = render_report(rs, ReportOptions{});
  EXPECT_NE(four.find("x (p=0.400) |"), std::string::npos) << four;  // scipy: 0.4
  // Two repetitions a side: no test, "~" where the ranges overlap.
  std::vector<RunRecord> two;
  for (const auto& [name, model, seq] :
       {std::tuple<const char*, const char*, double>{"t1", "torch", 100},
        {"t2", "torch", 110},
        {"h1", "handcraft", 105},
        {"h2", "handcraft", 120}}) {
    two.push_back(read_run(make_run(root, name, "", model, "float32", 0, "completed", seq)));
  }
  const std::string overlap = render_report(two, ReportOptions{});
  EXPECT_NE(overlap.find("x ~ |"), std::string::npos) << overlap;
  EXPECT_NE(overlap.find("~: the two ranges overlap"), std::string::npos) << overlap;
  EXPECT_EQ(overlap.find("(p="), std::string::npos) << overlap;
  ReportOptions o;
  o.format = "json";
  const auto j = nlohmann::json::parse(render_report(rs, o));
  bool seen = false;
  for (const auto& a : j["aggregates"]) {
    if (a["configuration"] == "libtorch torch" && a["dtype"] == "bfloat16") {
      seen = true;
      EXPECT_EQ(a["count"], 4);
      EXPECT_DOUBLE_EQ(a["sequences_per_s_median"].get<double>(), (1093.0 + 1100.0) / 2);
      EXPECT_DOUBLE_EQ(a["sequences_per_s_max"].get<double>(), 1300.0);
      EXPECT_TRUE(a["u_test_p"].is_null());  // the baseline
    }
    if (a["configuration"] == "libtorch handcraft" && a["dtype"] == "bfloat16") {
      EXPECT_DOUBLE_EQ(a["u_test_p"].get<double>(), 0.4);
    }
  }
  EXPECT_TRUE(seen) << j.dump();
}

// Five repetitions a side that never overlap: p = 2 / C(10, 5) = 0.0079 (scipy's value).
TEST_F(ReportTest, FiveRepetitionsASideThatDifferGetASmallPValue) {
  std::vector<RunRecord> rs;
  const std::vector<std::tuple<std::string, std::string, double>> reps = {
      {"t1", "torch", 1093.0},     {"t2", "torch", 1100.0},     {"t3", "torch", 1080.0},
      {"t4", "torch", 1090.0},     {"t5", "torch", 1111.0},     {"h1", "handcraft", 1273.0},
      {"h2", "handcraft", 1290.0}, {"h3", "handcraft", 1260.0}, {"h4", "handcraft", 1281.0},
      {"h5", "handcraft", 1277.0}};
  for (const auto& [name, model, seq] : reps) {
    rs.push_back(read_run(make_run(root, name, "", model, "bfloat16", 0, "completed", seq)));
  }
  const std::string md = render_report(rs, ReportOptions{});
  EXPECT_NE(md.find("| 1.17x (p=0.008) |"), std::string::npos) << md;
}

// A ratio never divides runs of different model shapes: other shapes read "n/a (other shape)",
// and a baseline of their own shape gives their ratios.
TEST_F(ReportTest, RatiosAcrossModelShapesAreNotGiven) {
  std::vector<RunRecord> rs = {runs[0], runs[1]};
  rs[1].shape = "2 layers, d_model 128, seq_len 128, batch 16";
  const std::string md = render_report(rs, ReportOptions{});
  EXPECT_NE(md.find("| n/a (other shape) |"), std::string::npos) << md;
  EXPECT_EQ(md.find("1.16x"), std::string::npos) << md;
  EXPECT_NE(md.find("n/a: a configuration of another model shape"), std::string::npos) << md;
  ReportOptions o;
  o.format = "json";
  const auto j = nlohmann::json::parse(render_report(rs, o));
  EXPECT_TRUE(j["speedup"].empty()) << j.dump();
}

TEST_F(ReportTest, PlotScriptWritesThreePngsAndSkipsUnreadableFolders) {
  const std::string out = root / "plots";
  const auto r =
      testing::run_command(TB_PYTHON " " + std::string(TB_SOURCE_DIR) +
                           "/scripts/plot_runs.py --bench " TB_BENCH_EXE " --out " + out + " " +
                           dirs[0] + " " + dirs[3] + " " + (root / "missing"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: skipping " + root / "missing"), std::string::npos) << r.output;
  for (const char* png : {"loss_by_step.png", "loss_by_time.png", "throughput.png"}) {
    const std::string bytes = testing::read_file(out + "/" + png);
    ASSERT_GT(bytes.size(), 1000u) << png;
    EXPECT_EQ(bytes.substr(0, 8), "\x89PNG\r\n\x1a\n") << png;
  }
  const auto none = testing::run_command(TB_PYTHON " " + std::string(TB_SOURCE_DIR) +
                                         "/scripts/plot_runs.py --bench " TB_BENCH_EXE " --out " +
                                         out + " " + (root / "missing"));
  EXPECT_EQ(none.exit_code, 2);
}

}  // namespace
}  // namespace trainbench
