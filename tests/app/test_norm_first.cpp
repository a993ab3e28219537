// --norm_first end to end: config.json records it, the report labels the post-LN torch model, a
// handcraft run refuses 0 in one line, and a resume of a torch folder written before the flag
// existed keeps the post-LN forward it was trained with (the straight run's losses).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

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

// The training windows' losses in metrics.jsonl (one step each with --log_every 1).
std::vector<double> losses_(const std::string& run) {
  std::vector<double> out;
  std::ifstream in(run + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json l = nlohmann::json::parse(line);
    if (l.contains("loss") && l.contains("sequences_per_s")) out.push_back(l["loss"]);
  }
  return out;
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

TEST(NormFirst, AResumeOfAFolderFromBeforeTheFlagKeepsItsPostLnForward) {
  testing::TempDir dir;
  const std::string flags = std::string(kTinyTorchModel) + " --log_every 1 --norm_first 0";
  const auto straight = testing::run_bench(flags + " --steps 12 --save_dir " + (dir / "straight"));
  ASSERT_EQ(straight.exit_code, 0) << straight.output;
  const auto first =
      testing::run_bench(flags + " --steps 6 --checkpoint_every 6 --save_dir " + (dir / "split"));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  // The folder as a bench from before --norm_first wrote it: no norm_first in config.json.
  const std::string split = folder_(dir, "split");
  nlohmann::json config = read_json_file(split + "/config.json");
  config.erase("norm_first");
  std::ofstream(split + "/config.json") << config.dump(2);
  // Asking for the pre-LN forward on it is a changed flag.
  const auto changed = testing::run_bench("--resume " + split + " --steps 12 --norm_first 1");
  EXPECT_EQ(changed.exit_code, 2) << changed.output;
  EXPECT_NE(changed.output.find("--norm_first"), std::string::npos) << changed.output;
  const auto resumed = testing::run_bench("--resume " + split + " --steps 12");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const auto a = losses_(folder_(dir, "straight")), b = losses_(split);
  ASSERT_EQ(a.size(), 12u);
  ASSERT_EQ(b.size(), 12u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << "step " << i + 1;
}

}  // namespace
}  // namespace trainbench
