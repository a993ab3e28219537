// A run hit by an error no caller can catch (--fault_escape_step: a tensor's deleter throws
// inside a noexcept destructor, as LibTorch's oneDNN scratch memory once did under a CPU
// allocator without raw_deleter): one line, no C++ stack, summary.json "failed" with that line,
// the checkpoints before it untouched, exit 1; `--resume` then continues it to the straight
// run's losses.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "trainbench/report/summary_fields.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;
using testing::run_bench;

TEST(FatalRun, AnUncatchableErrorIsOneLineAFailedSummaryAndAResumableRun) {
  testing::TempDir dir;
  const std::string args =
      " --num_layer 1 --d_model 32 --num_heads 2 --ff_dim 64 --seq_len 32 --batch_size 4"
      " --steps 8 --warmup_steps 1 --log_every 1 --eval_every 0 --checkpoint_every 4"
      " --threads 1 --device cpu --peak_tflops 1 --tensorboard 0";
  ASSERT_EQ(run_bench(args + " --save_dir " + (dir / "straight")).exit_code, 0);
  const auto r = run_bench(args + " --fault_escape_step 6 --save_dir " + (dir / "hit"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const std::string line =
      "bench: failed: a tensor's deleter threw (the --fault_escape_step testing aid)\n";
  EXPECT_EQ(testing::count_of(r.output, line), 1) << r.output;
  EXPECT_EQ(testing::count_of(r.output, "bench: "), 1) << r.output;
  for (const char* stack : {"frame #", "terminate called", "Exception raised from"}) {
    EXPECT_EQ(r.output.find(stack), std::string::npos) << stack << "\n" << r.output;
  }
  const std::string run = dir / "hit_handcraft_layer1_float32";
  const auto summary = nlohmann::json::parse(testing::read_file(run + "/summary.json"));
  EXPECT_EQ(summary["status"], "failed");
  EXPECT_EQ(summary["error_message"],
            "a tensor's deleter threw (the --fault_escape_step testing aid)");
  EXPECT_EQ(summary["steps_done"], 5);
  EXPECT_EQ(testing::keys_of(summary),
            testing::summary_keys({SummaryWhen::kAlways, SummaryWhen::kFailed}, false));
  EXPECT_TRUE(fs::exists(run + "/checkpoint-4.pt"));
  // A flag a resume may not change is refused before anything is measured: no GEMM probe
  // (--peak_tflops 0 asks for one), no model; the folder stays as it was.
  const std::string failed_summary = testing::read_file(run + "/summary.json");
  const auto refused = run_bench("--resume " + run + " --dtype bfloat16 --peak_tflops 0");
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("bench: error: --resume: these flags differ from the run in '" +
                                run + "': --dtype;"),
            std::string::npos)
      << refused.output;
  EXPECT_EQ(refused.output.find("GEMM"), std::string::npos) << refused.output;
  EXPECT_EQ(testing::read_file(run + "/summary.json"), failed_summary);
  // The cause gone (a testing aid belongs to its session), the run continues from step 4.
  const auto resumed = run_bench("--resume " + run);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const auto a = testing::window_values(dir / "straight_handcraft_layer1_float32");
  const auto b = testing::window_values(run);
  ASSERT_EQ(a.size(), 8u);
  ASSERT_EQ(b.size(), 8u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << "step " << i + 1;
  EXPECT_EQ(nlohmann::json::parse(testing::read_file(run + "/summary.json"))["status"],
            "completed");
}

}  // namespace
}  // namespace trainbench
