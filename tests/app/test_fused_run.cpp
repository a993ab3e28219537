// --compile fused end to end: the result files name the path, a resumed fused run (fused Adam,
// bfloat16 weight copies) equals the straight run bit for bit (dropout 0.1), and the quick
// preset learns as eager does.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"
#include "trainbench/app/run.h"
#include "trainbench/app/run_figures.h"
#include "trainbench/app/validate.h"
#include "trainbench/core/log.h"
#include "trainbench/report/report.h"
#include "trainbench/report/results.h"
#include "trainbench/train/checkpoint.h"

namespace trainbench {
namespace {

class FusedRun : public ::testing::Test {
 protected:
  void SetUp() override { log_set_quiet(true); }
  void TearDown() override { log_set_quiet(false); }
  RunConfig config() {
    RunConfig c = testing::tiny_config();
    c.compile = CompilePath::kFused;
    c.save_dir = dir / "run";
    return c;
  }
  testing::TempDir dir;
};

TEST_F(FusedRun, ResultFilesNameTheFusedPath) {
  const RunResult r = run_benchmark(config());
  EXPECT_EQ(r.status, RunStatus::kCompleted);
  EXPECT_TRUE(r.run_dir.ends_with("_handcraft_layer1_float32_fused")) << r.run_dir;
  const nlohmann::json cfg = read_json_file(r.run_dir + "/config.json");
  EXPECT_EQ(cfg["compile"], "fused");
  EXPECT_EQ(cfg["dropout_impl"], "fused");  // the resolved choice: the kernels' own masks
  EXPECT_EQ(r.summary["compile_backend"], "fused");
  EXPECT_EQ(read_run(r.run_dir).label, "bench handcraft fused");
}

// --flash 1 on the fused path below seq_len 1024 warns with the measured figures; at 1024 and
// on the other paths nothing.
TEST_F(FusedRun, FlashOnTheFusedPathWarnsBelowTheMeasuredCrossover) {
  RunConfig c = config();
  c.flash = true;
  c.device = DeviceChoice::kCpu;
  const std::string line = warn_about_fused_flash(make_plan(c));
  EXPECT_NE(line.find("--flash 1 with --compile fused runs LibTorch's CPU flash kernel, measured "
                      "slower than the fused naive attention (--flash 0) below seq_len 1024"),
            std::string::npos)
      << line;
  c.seq_len = 1024;
  EXPECT_EQ(warn_about_fused_flash(make_plan(c)), "");
  c.seq_len = 64;
  c.compile = CompilePath::kNone;
  EXPECT_EQ(warn_about_fused_flash(make_plan(c)), "");
  c.compile = CompilePath::kFused;
  c.flash = false;
  EXPECT_EQ(warn_about_fused_flash(make_plan(c)), "");
}

TEST_F(FusedRun, TwentyStepsPlusResumePlusTwentyEqualFortyStraightWithDropout) {
  RunConfig c = config();
  c.dropout = 0.1;
  c.dtype = Precision::kBFloat16;
  // One route for all three runs: --lowp_gemm auto measures, and on a busy machine two runs'
  // probes can pick different routes, whose bits differ.
  c.lowp_gemm = GemmRoute::kNative;
  // Fused Adam keeps the weights' bfloat16 copies: the resumed run's are rebuilt from the
  // loaded parameters (their version counters moved) before its first forward.
  c.fused_adam = true;
  const auto [straight, first] = testing::straight_and_split(c, dir);
  c.log_every = 1;
  c.checkpoint_every = 10;
  c.save_dir = dir / "split";
  c.resume = first.run_dir;
  c.steps = 40;
  const RunResult resumed = run_benchmark(c);
  const auto a = testing::window_values(straight.run_dir),
             b = testing::window_values(resumed.run_dir);
  ASSERT_EQ(a.size(), 40u);
  ASSERT_EQ(b.size(), 40u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << "step " << i + 1;
}

// `bench --resume DIR` alone continues a fused run with its recorded flags (config.json holds
// the resolved dropout kernel, "fused", which must read back), and a profiled fused run writes
// its breakdown and trace.
TEST_F(FusedRun, ResumeAloneContinuesAndProfileStepsWriteTheBreakdown) {
  const std::string flags =
      " --num_layer 1 --d_model 32 --num_heads 2 --ff_dim 64 --seq_len 32 --batch_size 4"
      " --warmup_steps 1 --log_every 1 --threads 1 --device cpu --peak_tflops 1 --compile fused"
      " --eval_batches 1 --checkpoint_every 2 --profile_steps 2 --save_dir " +
      (dir / "cli");
  const auto first = testing::run_bench(flags + " --steps 4");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const std::string run = dir / "cli_handcraft_layer1_float32_fused";
  const nlohmann::json summary = read_json_file(run + "/summary.json");
  ASSERT_TRUE(summary["profile"].is_object()) << summary.dump();
  EXPECT_EQ(summary["profile"]["steps"], 2);
  EXPECT_EQ(summary["steps_timed"], 1);  // 4 steps: 1 warm-up, 2 profiled, 1 timed
  EXPECT_GT(summary["profile"]["ms_per_step"]["gemm"].get<double>(), 0);
  EXPECT_GT(summary["profile"]["ms_per_step"]["normalisation"].get<double>(), 0);
  EXPECT_GT(summary["profile"]["ms_per_step"]["optimizer"].get<double>(), 0);
  EXPECT_TRUE(std::filesystem::file_size(run + "/trace.json") > 100);
  const auto report = testing::run_bench("report " + run);
  EXPECT_NE(report.output.find("Time per profiled step by op category"), std::string::npos)
      << report.output;
  const auto resumed = testing::run_bench("--resume " + run + " --steps 6");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(read_json_file(run + "/summary.json")["steps_done"], 6);
  const auto bad = testing::run_bench(
      testing::merge_flags(flags, " --steps 4 --profile_steps 3 --save_dir " + (dir / "x")));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("--profile_steps: 3 leaves no timed step"), std::string::npos)
      << bad.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "x_handcraft_layer1_float32_fused"));
}

// The quick preset (dropout 0.1) for half its steps: fused and eager validation bits per byte
// within 1% of each other from the same seed (their dropout masks differ, their learning must
// not; from step 50 to 120-130 they stayed within 0.4% over five seeds:
// results/zen3-2026-12-07-time-to-target).
TEST_F(FusedRun, QuickPresetValidationBpbWithinOnePercentOfEager) {
  RunConfig c;
  apply_preset(c, Preset::kQuick);
  c.device = DeviceChoice::kCpu;
  c.threads = 1;
  c.peak_tflops = 1.0;
  c.log_every = 50;
  c.steps = 200;
  double bpb[2] = {0, 0};
  for (int fused = 0; fused < 2; ++fused) {
    c.compile = fused ? CompilePath::kFused : CompilePath::kNone;
    c.save_dir = dir / (fused ? "fused" : "eager");
    const RunResult r = run_benchmark(c);
    ASSERT_EQ(r.status, RunStatus::kCompleted);
    bpb[fused] = r.summary["final_valid_bpb"].get<double>();
  }
  EXPECT_LT(bpb[1], 3.0);  // it learned (a uniform guess is 8 bits per byte)
  EXPECT_NEAR(bpb[1], bpb[0], 0.01 * bpb[0]) << "eager " << bpb[0] << ", fused " << bpb[1];
}

}  // namespace
}  // namespace trainbench
