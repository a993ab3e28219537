// The matrix runner (scripts/sweep.sh): runs each MATRIX entry, skips with bench's own reason
// what bench refuses, and prints every finished run through `bench report`.
#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;

const std::string kSweep =
    "BENCH=" TB_BENCH_EXE " PYTHON=" TB_PYTHON " bash " TB_SOURCE_DIR "/scripts/sweep.sh ";

TEST(Sweep, RunsTheMatrixSkipsWhatBenchRefusesAndReportsThroughBench) {
  testing::TempDir dir;
  const auto r = testing::run_command(
      "MATRIX='handcraft:float32:0:0 torch:float32:0:1' " + kSweep + (dir / "s") +
      " --num_layer 1 --d_model 32 --num_heads 2 --ff_dim 64 --seq_len 32 --batch_size 4"
      " --steps 3 --warmup_steps 1 --eval_batches 1 --threads 1 --device cpu --peak_tflops 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("done: handcraft float32 compile=0 flash=0"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("skipped: torch float32 compile=0 flash=1: --flash"), std::string::npos)
      << r.output;
  const std::string report = testing::read_file(dir / "s/report.md");
  EXPECT_NE(report.find("| float32 |"), std::string::npos) << report;
  EXPECT_NE(report.find("libtorch handcraft"), std::string::npos) << report;
  EXPECT_EQ(report.find("libtorch torch"), std::string::npos) << report;
  EXPECT_TRUE(fs::exists(dir / "s/report.csv"));
  EXPECT_TRUE(fs::exists(dir / "s/report.json"));
  EXPECT_TRUE(fs::exists(dir / "s/throughput.png"));
}

TEST(Sweep, ABadMatrixEntryIsOneLineAndRunsNothing) {
  testing::TempDir dir;
  const auto r = testing::run_command("MATRIX='handcraft:float32:0' " + kSweep + (dir / "s"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output,
            "sweep.sh: MATRIX entry 'handcraft:float32:0': use "
            "model:dtype:compile:flash[:fused_adam:cuda_graph]\n");
  EXPECT_FALSE(fs::exists(dir / "s"));
}

}  // namespace
}  // namespace trainbench
