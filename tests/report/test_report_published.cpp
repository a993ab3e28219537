// bench report --baseline results/NAME: a user's runs beside a published measurement (a folder
// with machine.json, as scripts/record_results.sh writes it), configuration by configuration.
#include <gtest/gtest.h>

#include <filesystem>

#include "report_folders.h"
#include "test_util.h"
#include "trainbench/report/report.h"

namespace trainbench {
namespace {

// Three repetitions of `label`'s runs under root/name: seq/s `seq - 2`, `seq`, `seq + 2`.
void three_(const testing::TempDir& root, const std::string& name, const std::string& model,
            int compile, double seq) {
  for (int k = 0; k < 3; ++k) {
    make_run(root, name + "/" + std::to_string(k), "", model, "bfloat16", compile, "completed",
             seq - 2 + 2 * k);
  }
}

TEST(ReportPublished, YourRunsStandBesideTheSameConfigurationsThere) {
  testing::TempDir root;
  three_(root, "pub/eager", "handcraft", 0, 100);
  testing::write_file(root / "pub/machine.json",
                      R"({"cpu_model": "AMD EPYC 9B14", "recorded_utc": "2026-12-06T03:00:00Z",
                          "commit": "0123456789abcdef", "gpu": null})");
  three_(root, "mine/eager", "handcraft", 0, 110);
  make_run(root, "mine/torch", "", "torch", "bfloat16", 0, "completed", 50);
  EXPECT_TRUE(is_published_folder(root / "pub"));
  EXPECT_FALSE(is_published_folder(root / "mine"));
  EXPECT_FALSE(is_published_folder("libtorch handcraft"));

  const auto r = testing::run_bench("report --baseline " + (root / "pub") + " " + (root / "mine"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Your runs against " + (root / "pub") +
                          " (AMD EPYC 9B14, recorded 2026-12-06 at 0123456)"),
            std::string::npos)
      << r.output;
  // 3 against 3, every one of yours faster: the two-sided U-test's smallest p.
  EXPECT_NE(r.output.find("| libtorch handcraft | bfloat16 | 110 (n=3, 108-112) | 100 (n=3, "
                          "98.0-102) | 1.10x | 0.100 |"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("| libtorch torch | bfloat16 | 50.0 | - | not published | - |"),
            std::string::npos)
      << r.output;

  const auto j =
      testing::run_bench("report --json --baseline " + (root / "pub") + " " + (root / "mine"));
  ASSERT_EQ(j.exit_code, 0) << j.output;
  const auto rows = nlohmann::json::parse(j.output)["rows"];
  ASSERT_EQ(rows.size(), 2u) << j.output;
  EXPECT_NEAR(rows[0]["ratio"].get<double>(), 1.1, 1e-12);
  EXPECT_EQ(rows[0]["published_n"], 3);
  EXPECT_TRUE(rows[1]["ratio"].is_null());

  const auto csv =
      testing::run_bench("report --csv --baseline " + (root / "pub") + " " + (root / "mine"));
  EXPECT_EQ(csv.exit_code, 2);
  EXPECT_NE(csv.output.find("bench report: error: --csv: not allowed with a published --baseline"),
            std::string::npos)
      << csv.output;
  // Yours at two shapes: each row is one shape, beside the published one of its shape.
  const std::string l2 =
      make_run(root, "mine/l2", "", "handcraft", "bfloat16", 0, "completed", 300);
  nlohmann::json config = nlohmann::json::parse(testing::read_file(l2 + "/config.json"));
  config["num_layer"] = 2;
  testing::write_file(l2 + "/config.json", config.dump());
  const auto two =
      testing::run_bench("report --baseline " + (root / "pub") + " " + (root / "mine"));
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_NE(two.output.find("| 110 (n=3, 108-112) | 100 (n=3, 98.0-102) | 1.10x |"),
            std::string::npos)
      << two.output;
  EXPECT_NE(two.output.find("| bfloat16 | 300 | - | not published | - |"), std::string::npos)
      << two.output;
  const auto nothing =
      testing::run_bench("report --baseline " + (root / "pub") + " " + (root / "no_such_folder"));
  EXPECT_EQ(nothing.exit_code, 2) << nothing.output;
  EXPECT_NE(nothing.output.find("no readable run folder of yours"), std::string::npos)
      << nothing.output;
  std::filesystem::create_directories(root / "empty");
  testing::write_file(root / "empty/machine.json", "{}");
  const auto none =
      testing::run_bench("report --baseline " + (root / "empty") + " " + (root / "mine"));
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.output.find("--baseline: '" + (root / "empty") + "' holds no readable run folder"),
            std::string::npos)
      << none.output;
}

// Five runs of `label` under root/name with seq/s seq + {-2, -1, 0, 1, 2}.
void five_(const testing::TempDir& root, const std::string& name, double seq) {
  for (int k = 0; k < 5; ++k) {
    make_run(root, name + "/" + std::to_string(k), "", "handcraft", "bfloat16", 0, "completed",
             seq - 2 + k);
  }
}

// The regression gate: exit 1 naming the row where yours are slower than R times the published
// ones with p < 0.05; exit 0 on the published runs themselves, on a slowdown the test cannot
// tell from noise, and without the flag; a bad R or a baseline that is not a published folder is
// one line, exit 2.
TEST(ReportPublished, FailBelowExitsOneOnASlowerConfigurationAndZeroOnThePublishedRuns) {
  testing::TempDir root;
  five_(root, "pub/eager", 100);
  testing::write_file(root / "pub/machine.json",
                      R"({"cpu_model": "AMD EPYC", "recorded_utc": "2026-12-07T03:00:00Z",
                          "commit": "0123456789abcdef", "build_revisions": ["0123456789ab"]})");
  five_(root, "slow/eager", 80);  // 0.80x, every run below 0.9 x every published one
  const std::string gate = " --fail_below 0.9 ";
  const auto slow =
      testing::run_bench("report --baseline " + (root / "pub") + gate + (root / "slow"));
  EXPECT_EQ(slow.exit_code, 1) << slow.output;
  EXPECT_NE(slow.output.find("recorded 2026-12-07 at 0123456789ab)"), std::string::npos)
      << slow.output;
  EXPECT_NE(slow.output.find("Regression gate (--fail_below 0.90): failed: 1 slower with p < 0.05"),
            std::string::npos)
      << slow.output;
  EXPECT_NE(slow.output.find("- libtorch handcraft bfloat16: 0.80x the published median, below "
                             "0.90x (p=0.008 against the published runs times 0.90)"),
            std::string::npos)
      << slow.output;
  EXPECT_NE(slow.output.find("1 configuration(s) slower than 0.90x"), std::string::npos);
  const auto json =
      testing::run_bench("report --json --baseline " + (root / "pub") + gate + (root / "slow"));
  EXPECT_EQ(json.exit_code, 1);
  const size_t brace = json.output.find('{');
  ASSERT_NE(brace, std::string::npos) << json.output;
  const nlohmann::json j =
      nlohmann::json::parse(json.output.substr(0, json.output.rfind('}') + 1).substr(brace));
  EXPECT_EQ(j["slower"].size(), 1u);
  EXPECT_NEAR(j["rows"][0]["p_below_fail_ratio"].get<double>(), 0.0079, 1e-3);
  // The published runs against themselves pass; so does a 0.88x that overlaps 0.9x's runs.
  const auto same =
      testing::run_bench("report --baseline " + (root / "pub") + gate + (root / "pub"));
  EXPECT_EQ(same.exit_code, 0) << same.output;
  EXPECT_NE(same.output.find("passed: no configuration is slower than that with p < 0.05"),
            std::string::npos)
      << same.output;
  five_(root, "near/eager", 89);
  EXPECT_EQ(
      testing::run_bench("report --baseline " + (root / "pub") + gate + (root / "near")).exit_code,
      0);
  EXPECT_EQ(
      testing::run_bench("report --baseline " + (root / "pub") + " " + (root / "slow")).exit_code,
      0);
  for (const char* bad : {"0", "-1", "11"}) {
    const auto r = testing::run_bench("report --baseline " + (root / "pub") + " --fail_below " +
                                      bad + " " + (root / "slow"));
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.output.find("--fail_below: " + std::string(bad) +
                            " is not allowed; give a ratio above 0 and at most 10"),
              std::string::npos)
        << r.output;
  }
  const auto label = testing::run_bench("report --fail_below 0.9 " + (root / "slow"));
  EXPECT_EQ(label.exit_code, 2);
  EXPECT_NE(label.output.find("--fail_below: needs --baseline results/NAME"), std::string::npos)
      << label.output;
}

// --manifest: a row per run from its summary.json's manifest; a run whose parameter count or
// first loss disagrees with its dtype's others is flagged, and so is a folder without one.
TEST(ReportPublished, ManifestPrintsEachRunsAndFlagsWhatDisagrees) {
  testing::TempDir root;
  const auto manifest = [](const std::string& framework, int64_t params, double first_loss) {
    return nlohmann::json{{"framework", framework}, {"implementation", "eager"},
                          {"compile_options", ""},  {"tf32", nullptr},
                          {"compute", "float32"},   {"master_weights", "float32"},
                          {"optimizer", "adam"},    {"threads", 2},
                          {"attention", "naive"},   {"data_in_timer", false},
                          {"params", params},       {"first_loss", first_loss}};
  };
  const auto plant = [&](const std::string& name, const std::string& framework, int64_t params,
                         double loss) {
    const std::string dir =
        make_run(root, name, framework, "handcraft", "float32", 0, "completed", 10);
    nlohmann::json s = nlohmann::json::parse(testing::read_file(dir + "/summary.json"));
    s["manifest"] = manifest(framework.empty() ? "libtorch" : framework, params, loss);
    testing::write_file(dir + "/summary.json", s.dump());
  };
  plant("a", "", 1000, 5.60);
  plant("b", "pytorch", 1000, 5.61);
  plant("c", "jax", 1000, 5.58);
  const auto ok = testing::run_bench("report --manifest " + (root / "a") + " " + (root / "b") +
                                     " " + (root / "c"));
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("| pytorch handcraft | float32 | eager | - | - | float32 | float32 | "
                           "adam | 2 | naive | no | 1000 | 5.6100 | - |"),
            std::string::npos)
      << ok.output;
  EXPECT_NE(ok.output.find("no run flagged"), std::string::npos) << ok.output;
  plant("d", "jax", 999, 6.5);
  make_run(root, "e", "", "torch", "float32", 0, "completed", 10);  // no manifest
  const auto bad = testing::run_bench("report --manifest " + root.path());
  ASSERT_EQ(bad.exit_code, 0) << bad.output;
  EXPECT_NE(bad.output.find("| 999 | 6.5000 | parameter counts differ; first loss 15.9% from "
                            "the median 5.6100 |"),
            std::string::npos)
      << bad.output;
  EXPECT_NE(bad.output.find("| no manifest (an older run folder) |"), std::string::npos);
  EXPECT_NE(bad.output.find("5 runs flagged"), std::string::npos) << bad.output;
  const auto csv = testing::run_bench("report --manifest --csv " + (root / "a"));
  EXPECT_EQ(csv.exit_code, 2);
  EXPECT_NE(csv.output.find("--csv: not allowed with --manifest"), std::string::npos);
}

}  // namespace
}  // namespace trainbench
