// The Python peers: the sampler is bit-for-bit the C++ one, the PyTorch peer writes the result
// contract with the C++ parameter count, and the JAX peer at least compiles here.
#include <gtest/gtest.h>

#include <sstream>

#include "test_util.h"
#include "trainbench/model.h"
#include "trainbench/results.h"
#include "trainbench/sampler.h"

namespace trainbench {
namespace {

const std::string kPeers = std::string(TB_SOURCE_DIR) + "/scripts/peers";

// Flags of a tiny CPU run that bench and the peers share, reading bench's embedded corpus
// exported into `dir`.
std::string tiny_flags(const testing::TempDir& dir, int steps, int log_every) {
  EXPECT_EQ(testing::run_bench("--export_corpus " + (dir / "corpus.bin")).exit_code, 0);
  return " --num_layer 2 --d_model 32 --num_heads 2 --ff_dim 64 --seq_len 32 --batch_size 4"
         " --steps " +
         std::to_string(steps) + " --warmup_steps 1 --log_every " + std::to_string(log_every) +
         " --eval_batches 2 --threads 1 --device cpu"
         " --peak_tflops 1 --data " +
         (dir / "corpus.bin");
}

TEST(Peers, PythonSamplerReproducesTheCppEpochPlans) {
  SamplerOptions o;
  o.train_end = 10'000;
  o.seq_len = 64;
  o.batch_size = 8;
  o.seed = 7;
  const EpochSampler sampler(o);
  for (int epoch : {0, 3}) {
    const auto r = testing::run_command("python3 -c \"import sys; sys.path.insert(0, '" + kPeers +
                                        "'); import common; o, s = common.plan_epoch(7, " +
                                        std::to_string(epoch) + ", 10000, 64); print(o, *s)\"");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const EpochPlan p = sampler.plan(epoch);
    std::ostringstream expected;
    expected << p.offset;
    for (int64_t s : p.starts) expected << " " << s;
    EXPECT_EQ(r.output, expected.str() + "\n") << "epoch " << epoch;
  }
}

TEST(Peers, PytorchPeerWritesTheContractWithTheCppParameterCount) {
  if (testing::run_command("/usr/bin/python3 -c 'import torch'").exit_code != 0) {
    GTEST_SKIP() << "no Python torch at /usr/bin/python3";
  }
  testing::TempDir dir;
  const std::string flags = tiny_flags(dir, 4, 2);
  for (const char* model : {"handcraft", "torch"}) {
    const auto r = testing::run_command("/usr/bin/python3 " + kPeers + "/pytorch_run.py --model " +
                                        model + flags + " --save_dir " + (dir / "py"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string run = dir / (std::string("py_") + model + "_layer2_float32");
    const auto config = read_json_file(run + "/config.json");
    const auto summary = read_json_file(run + "/summary.json");
    EXPECT_EQ(config["framework"], "pytorch");
    EXPECT_EQ(config["schema_version"], 1);
    RunConfig c;
    c.model = model;
    c.num_layer = 2;
    c.d_model = 32;
    c.num_heads = 2;
    c.ff_dim = 64;
    c.seq_len = 32;
    EXPECT_EQ(summary["params"].get<int64_t>(), count_parameters(*make_model(c))) << model;
    EXPECT_EQ(summary["status"], "completed");
    EXPECT_EQ(summary["steps_timed"], 3);
    EXPECT_TRUE(summary["final_valid_bpb"].is_number());
    EXPECT_GT(summary["sequences_per_s"].get<double>(), 0);
  }
  const auto report = testing::run_bench("report " + (dir / "py_handcraft_layer2_float32") + " " +
                                         (dir / "py_torch_layer2_float32"));
  EXPECT_EQ(report.exit_code, 0) << report.output;
  EXPECT_NE(report.output.find("| float32 |"), std::string::npos);
  EXPECT_NE(report.output.find("pytorch torch vs pytorch handcraft"), std::string::npos)
      << report.output;
}

// Same seed, same init order, same sampler, native dropout: the PyTorch peer and bench train
// the same numbers, so a speed ratio between them compares like with like.
TEST(Peers, PytorchPeerTrainsTheSameLossesAsBench) {
  if (testing::run_command("/usr/bin/python3 -c 'import torch'").exit_code != 0) {
    GTEST_SKIP() << "no Python torch at /usr/bin/python3";
  }
  testing::TempDir dir;
  const std::string flags = tiny_flags(dir, 6, 1);
  ASSERT_EQ(
      testing::run_bench(flags + " --dropout_impl native --save_dir " + (dir / "cpp")).exit_code,
      0);
  ASSERT_EQ(testing::run_command("/usr/bin/python3 " + kPeers + "/pytorch_run.py" + flags +
                                 " --save_dir " + (dir / "py"))
                .exit_code,
            0);
  auto losses = [](const std::string& run) {
    std::vector<double> out;
    std::istringstream in(testing::read_file(run + "/metrics.jsonl"));
    for (std::string line; std::getline(in, line);) {
      const auto j = nlohmann::json::parse(line);
      if (j.contains("loss")) out.push_back(j["loss"]);
    }
    return out;
  };
  const auto cpp = losses(dir / "cpp_handcraft_layer2_float32");
  const auto py = losses(dir / "py_handcraft_layer2_float32");
  ASSERT_EQ(cpp.size(), 6u);
  ASSERT_EQ(py.size(), 6u);
  for (size_t i = 0; i < cpp.size(); ++i) EXPECT_NEAR(cpp[i], py[i], 1e-4) << "step " << i + 1;
}

TEST(Peers, PytorchPeerRefusesCompileWithoutTorchCompile) {
  if (testing::run_command("/usr/bin/python3 -c 'import torch, sys; "
                           "sys.exit(hasattr(torch, \"compile\"))'")
          .exit_code != 0) {
    GTEST_SKIP() << "this torch has torch.compile (or no torch)";
  }
  const auto r = testing::run_command("/usr/bin/python3 " + kPeers +
                                      "/pytorch_run.py --compile 1 --data /dev/null");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("has no torch.compile (needs >= 2.0)"), std::string::npos) << r.output;
}

TEST(Peers, JaxPeerCompiles) {
  const auto r = testing::run_command("python3 -m py_compile " + kPeers + "/jax_run.py " + kPeers +
                                      "/common.py && echo compiled");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("compiled"), std::string::npos);
}

}  // namespace
}  // namespace trainbench
