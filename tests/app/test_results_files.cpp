// Published figures as data: scripts/record_results.sh keeps a measurement's small files under
// results/, and scripts/results_tables.py generates the docs' measured tables from them (the
// docs in the tree are held to results/ here).
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "trainbench/core/cpu_isa.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;

// record_results.sh keeps a measurement's small files (the runs' config/env/summary, the
// reports) with machine.json and command.txt, none of the large ones; a NAME that exists, or an
// OUT_DIR without runs, is refused with one line and changes nothing.
TEST(Scripts, RecordResultsKeepsTheSmallFilesAndNeverOverwrites) {
  testing::TempDir dir;
  const std::string run = dir / "cmp/bench/1_handcraft_layer2_float32";
  fs::create_directories(run);
  for (const char* f : {"config.json", "env.json", "summary.json", "checkpoint-4.pt",
                        "metrics.jsonl", "events.out.tfevents.1.h.bench"}) {
    testing::write_file(run + "/" + f, std::string("{\"file\": \"") + f + "\"}");
  }
  testing::write_file(dir / "cmp/report.json", "{}");
  testing::write_file(dir / "cmp/notes.txt", "not a result file");
  const std::string record = "RESULTS_DIR=" + (dir / "results") +
                             " bash " TB_SOURCE_DIR "/scripts/record_results.sh " + (dir / "cmp");
  const auto r = testing::run_command(record + " m-1 'scripts/compare.sh runs/cmp'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string kept = dir / "results/m-1";
  EXPECT_NE(r.output.find("recorded 6 files"), std::string::npos) << r.output;
  for (const char* f :
       {"bench/1_handcraft_layer2_float32/config.json", "bench/1_handcraft_layer2_float32/env.json",
        "bench/1_handcraft_layer2_float32/summary.json", "report.json", "machine.json",
        "command.txt"}) {
    EXPECT_TRUE(fs::exists(kept + "/" + f)) << f;
  }
  for (const char* f : {"bench/1_handcraft_layer2_float32/checkpoint-4.pt",
                        "bench/1_handcraft_layer2_float32/metrics.jsonl", "notes.txt"}) {
    EXPECT_FALSE(fs::exists(kept + "/" + f)) << f;
  }
  EXPECT_EQ(testing::read_file(kept + "/command.txt"), "scripts/compare.sh runs/cmp\n");
  const auto machine = nlohmann::json::parse(testing::read_file(kept + "/machine.json"));
  EXPECT_EQ(machine["cpu_model"], cpuinfo_field("model name"));
  EXPECT_FALSE(machine["cpu_flags"].empty());
  const auto again = testing::run_command(record + " m-1 other 2>&1");
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.output.find("record_results.sh: " + kept + " exists; nothing is overwritten"),
            std::string::npos)
      << again.output;
  EXPECT_EQ(testing::read_file(kept + "/command.txt"), "scripts/compare.sh runs/cmp\n");
  fs::create_directories(dir / "empty");
  const auto none = testing::run_command("RESULTS_DIR=" + (dir / "results") +
                                         " bash " TB_SOURCE_DIR "/scripts/record_results.sh " +
                                         (dir / "empty") + " m-3 x 2>&1");
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_NE(none.output.find("holds no run folder (no summary.json): nothing recorded"),
            std::string::npos)
      << none.output;
  EXPECT_FALSE(fs::exists(dir / "results/m-3"));
}

const std::string kTables = TB_PYTHON " " TB_SOURCE_DIR "/scripts/results_tables.py";

// The tree's README and BENCHMARKS agree with results/; a doc's block is rebuilt from a
// folder's machine.json and report.json (one summary row per dtype: LibTorch eager, bench's
// best, the best peer, their ratio); a torn folder is named and changes nothing.
TEST(Scripts, ResultsTablesAreGeneratedFromResults) {
  const auto tree = testing::run_command(kTables + " --check 2>&1");
  EXPECT_EQ(tree.exit_code, 0) << tree.output;

  testing::TempDir dir;
  fs::create_directories(dir / "results/m-1");
  testing::write_file(dir / "results/m-1/machine.json",
                      R"({"cpu_model": "AMD EPYC 9B14", "cpu_flags": ["avx2", "avx512f",
                          "avx512_bf16"], "recorded_utc": "2026-12-06T03:00:00Z",
                          "commit": "0123456789", "gpu": null})");
  auto run = [](const char* c, const char* d, double s) {
    return nlohmann::json{{"configuration", c},    {"dtype", d},     {"sequences_per_s", s},
                          {"status", "completed"}, {"num_layer", 8}, {"batch_size", 8}};
  };
  testing::write_file(dir / "results/m-1/report.json",
                      nlohmann::json{{"runs",
                                      {run("libtorch handcraft", "bfloat16", 2.0),
                                       run("bench handcraft fused fused_adam", "bfloat16", 4.0),
                                       run("bench handcraft fused fused_adam", "bfloat16", 5.0),
                                       run("pytorch handcraft compiled", "bfloat16", 3.0),
                                       run("jax handcraft", "bfloat16", 2.5)}}}
                          .dump());
  const std::string begin =
      "<!-- results: generated by scripts/results_tables.py from results/; edit the files "
      "there -->";
  const std::string end = "<!-- end of generated results -->";
  const std::string doc = dir / "doc.md";
  testing::write_file(doc, "# Doc\n" + begin + "\n" + end + "\nafter\n");
  const std::string cmd = kTables + " --results " + (dir / "results") + " " + doc + " 2>&1";
  EXPECT_EQ(testing::run_command(kTables + " --check --results " + (dir / "results") + " " + doc +
                                 " 2>&1")
                .exit_code,
            1);
  const auto made = testing::run_command(cmd);
  ASSERT_EQ(made.exit_code, 0) << made.output;
  const std::string text = testing::read_file(doc);
  EXPECT_NE(text.find("| AMD EPYC 9B14 (avx2, avx512f, avx512_bf16) | 2026-12-06 | 8 layers, "
                      "batch 8 | bfloat16 | "
                      "2.00 | 4.50 (bench handcraft fused fused_adam) | 3.00 (pytorch handcraft "
                      "compiled) | 1.50x | [m-1](results/m-1) |"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("| bench handcraft fused fused_adam | bfloat16 | 4.50 |"), std::string::npos)
      << text;
  EXPECT_EQ(text.rfind("\nafter\n"), text.size() - 7) << text;
  EXPECT_EQ(testing::run_command(kTables + " --check --results " + (dir / "results") + " " + doc)
                .exit_code,
            0);
  // A torn report.json: named, and the doc keeps its last good table.
  fs::create_directories(dir / "results/m-2");
  testing::write_file(dir / "results/m-2/machine.json", "{}");
  testing::write_file(dir / "results/m-2/report.json", "{\"runs\": [");
  const auto torn = testing::run_command(cmd);
  EXPECT_EQ(torn.exit_code, 1);
  EXPECT_NE(torn.output.find("results_tables.py: " + (dir / "results/m-2") + ": JSONDecodeError"),
            std::string::npos)
      << torn.output;
  EXPECT_EQ(testing::read_file(doc), text);
}

}  // namespace
}  // namespace trainbench
