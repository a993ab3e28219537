// --norm_first end to end: config.json records it, the report labels the post-LN torch model, and
// a handcraft run refuses 0 in one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "test_util.h"
#include "trainbench/report/report.h"
#include "trainbench/report/results.h"

namespace trainbench {
namespace {

const char* kTinyTorchModel =
    "--model torch --num_layer 1 --d_model 32 --num_heads 2 --ff_dim 64 --seq_len 32 "
    "--batch_size 4 --warmup_steps 1 --eval_every 0 --eval_batches 1 --threads 1 --device cpu";

std::string folder_(const testing::TempDir& dir, const std::string& name) {
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    if (e.path().filename().string().rfind(name + "_", 0) == 0) return e.path().string();
  }
  ADD_FAILURE() << "no run folder for " << name;
  return "";
}

TEST(NormFirst, RecordedLabelledAndRefusedForHandcraft) {
  testing::TempDir dir;
  const auto pre =
      testing::run_bench(std::string(kTinyTorchModel) + " --steps 3 --save_dir " + (dir / "pre"));
  ASSERT_EQ(pre.exit_code, 0) << pre.output;
  const auto post = testing::run_bench(std::string(kTinyTorchModel) +
                                       " --steps 3 --norm_first 0 --save_dir " + (dir / "post"));
  ASSERT_EQ(post.exit_code, 0) << post.output;
  EXPECT_EQ(read_json_file(folder_(dir, "pre") + "/config.json")["norm_first"], true);
  EXPECT_EQ(read_json_file(folder_(dir, "post") + "/config.json")["norm_first"], false);
  EXPECT_EQ(read_run(folder_(dir, "pre")).label, "libtorch torch");
  EXPECT_EQ(read_run(folder_(dir, "post")).label, "libtorch torch post-LN");
  const auto bad =
      testing::run_bench("--model handcraft --norm_first 0 --save_dir " + (dir / "bad"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(std::count(bad.output.begin(), bad.output.end(), '\n'), 1) << bad.output;
  EXPECT_NE(bad.output.find("--norm_first: 0 is not allowed with --model handcraft"),
            std::string::npos)
      << bad.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "bad_handcraft_layer24_float32"));
}

}  // namespace
}  // namespace trainbench
