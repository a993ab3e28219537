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

}  // namespace
}  // namespace trainbench
