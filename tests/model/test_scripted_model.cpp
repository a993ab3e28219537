// --compile 1: the TorchScript twin matches eager (logits, gradients, losses), switches dropout
// with train()/eval(), works under bf16 autocast, and saves a file that loads back.
#include <gtest/gtest.h>

#include <torch/script.h>
#include <torch/serialize.h>

#include "test_util.h"
#include "trainbench/data/batch_loader.h"
#include "trainbench/model/scripted_model.h"
#include "trainbench/train/precision.h"
#include "trainbench/train/trainer.h"

namespace trainbench {
namespace {

RunConfig small(int64_t flash) {
  RunConfig c = testing::tiny_config();
  c.num_layer = 2;
  c.dropout = 0;
  c.flash = flash;
  return c;
}

// An eager and a compiled model holding identical parameter values.
std::pair<std::shared_ptr<LanguageModel>, std::shared_ptr<LanguageModel>> twins(
    const RunConfig& cfg) {
  torch::manual_seed(3);
  auto eager = make_model(make_plan(cfg));
  RunConfig compiled_cfg = cfg;
  compiled_cfg.compile = CompilePath::kTorchScript;
  auto compiled = make_model(make_plan(compiled_cfg));
  torch::NoGradGuard no_grad;
  const auto src = eager->named_parameters();
  for (auto& p : compiled->named_parameters()) p.value().copy_(src[p.key()]);
  return {eager, compiled};
}

double rel_err(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).norm() / a.norm().clamp_min(1e-30)).item<double>();
}

TEST(Scripted, ParametersHaveTheEagerNamesAndScriptNamesAreFlattened) {
  auto [eager, compiled] = twins(small(0));
  std::vector<std::string> a, b;
  for (const auto& p : eager->named_parameters()) a.push_back(p.key());
  for (const auto& p : compiled->named_parameters()) b.push_back(p.key());
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b);
  EXPECT_EQ(count_parameters(*eager), count_parameters(*compiled));
  EXPECT_EQ(script_parameter_name("blocks.1.qkv.weight"), "blocks_1_qkv_weight");
  torch::jit::Module* m = script_module_of(*compiled);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(script_module_of(*eager), nullptr);
  // The script module holds the very tensors the optimizer updates.
  EXPECT_TRUE(m->attr("blocks_1_qkv_weight")
                  .toTensor()
                  .is_same(compiled->named_parameters()["blocks.1.qkv.weight"]));
}

TEST(Scripted, LogitsAndEveryGradientMatchEagerForBothAttentionPaths) {
  for (int64_t flash : {0, 1}) {
    const RunConfig cfg = small(flash);
    auto [eager, compiled] = twins(cfg);
    // Several calls: the profiling executor optimizes the graph after its first runs.
    for (int call = 0; call < 3; ++call) {
      const torch::Tensor x = torch::randint(0, 256, {cfg.seq_len, 3}, torch::kInt64);
      eager->zero_grad();
      compiled->zero_grad();
      const torch::Tensor le = eager->forward(x), lc = compiled->forward(x);
      EXPECT_LT(rel_err(le, lc), 1e-5) << "flash " << flash << " call " << call;
      byte_loss(le, x).backward();
      byte_loss(lc, x).backward();
      const auto ge = eager->named_parameters();
      for (const auto& p : compiled->named_parameters()) {
        ASSERT_TRUE(p.value().grad().defined()) << p.key();
        EXPECT_LT(rel_err(ge[p.key()].grad(), p.value().grad()), 1e-5)
            << p.key() << " flash " << flash << " call " << call;
      }
    }
  }
}

TEST(Scripted, First20TrainingLossesMatchEager) {
  RunConfig cfg = small(0);
  cfg.lr = 3e-3;
  const ByteCorpus corpus = embedded_corpus();
  SamplerOptions o;
  o.train_end = 1'000'000;
  o.seq_len = cfg.seq_len;
  o.batch_size = cfg.batch_size;
  std::vector<double> losses[2];
  for (int compiled = 0; compiled < 2; ++compiled) {
    cfg.compile = compiled ? CompilePath::kTorchScript : CompilePath::kNone;
    torch::manual_seed(11);
    Trainer trainer(make_plan(cfg));
    EpochSampler sampler(o);
    for (int i = 0; i < 20; ++i) {
      losses[compiled].push_back(
          trainer.step(make_batch(corpus, sampler.next_batch(), cfg.seq_len, false))
              .item<double>());
    }
  }
  for (int i = 0; i < 20; ++i) EXPECT_NEAR(losses[0][i], losses[1][i], 1e-4) << "step " << i + 1;
}

TEST(Scripted, TrainAndEvalSwitchDropoutInTheScript) {
  RunConfig cfg = small(0);
  cfg.dropout = 0.5;
  cfg.compile = CompilePath::kTorchScript;
  auto m = make_model(make_plan(cfg));
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::randint(0, 256, {cfg.seq_len, 2}, torch::kInt64);
  m->eval();
  EXPECT_FALSE(script_module_of(*m)->attr("training").toBool());
  EXPECT_TRUE(torch::equal(m->forward(x), m->forward(x)));
  m->train();
  EXPECT_TRUE(script_module_of(*m)->attr("training").toBool());
  EXPECT_FALSE(torch::equal(m->forward(x), m->forward(x)));
}

TEST(Scripted, Bfloat16AutocastRunsTheScriptInLowPrecision) {
  auto [eager, compiled] = twins(small(0));
  const torch::Tensor x = torch::randint(0, 256, {32, 2}, torch::kInt64);
  for (int call = 0; call < 3; ++call) {
    AutocastGuard autocast(torch::kCPU, Precision::kBFloat16);
    const torch::Tensor le = eager->forward(x), lc = compiled->forward(x);
    EXPECT_EQ(lc.scalar_type(), torch::kBFloat16);  // autocast reached the script's linear
    EXPECT_LT(rel_err(le.to(torch::kFloat), lc.to(torch::kFloat)), 2e-2);
  }
}

TEST(Scripted, SavedFileLoadsBackAndGivesTheSameLogits) {
  testing::TempDir dir;
  for (int64_t compile : {0, 1}) {
    RunConfig cfg = small(0);
    cfg.compile = compile ? CompilePath::kTorchScript : CompilePath::kNone;
    torch::manual_seed(5);
    auto m = make_model(make_plan(cfg));
    m->eval();
    const std::string path = dir / ("net" + std::to_string(compile) + ".pt");
    save_torchscript(*m, path);
    torch::jit::Module loaded = torch::jit::load(path);
    loaded.eval();
    torch::NoGradGuard no_grad;
    const torch::Tensor x = torch::randint(0, 256, {cfg.seq_len, 2}, torch::kInt64);
    EXPECT_TRUE(torch::allclose(m->forward(x), loaded.forward({x}).toTensor(), 1e-6, 1e-6));
  }
}

// The project's .venv torch (installed by scripts/install_deps.sh) is the Python side.
TEST(Scripted, SavedFileRunsInPythonWithTheSameLogits) {
  testing::TempDir dir;
  RunConfig cfg = small(1);
  torch::manual_seed(5);
  auto m = make_model(make_plan(cfg));
  m->eval();
  save_torchscript(*m, dir / "net.pt");
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::randint(0, 256, {cfg.seq_len, 2}, torch::kInt64);
  for (const auto& [name, t] :
       {std::pair<std::string, torch::Tensor>{"x.pt", x}, {"y.pt", m->forward(x)}}) {
    const std::vector<char> bytes = torch::pickle_save(t);
    testing::write_file(dir / name, std::string(bytes.begin(), bytes.end()));
  }
  const auto r = testing::run_command(
      "cd " + dir.path() +
      " && " TB_PYTHON
      " -c \"import torch; m = torch.jit.load('net.pt'); m.eval(); "
      "x = torch.load('x.pt'); y = torch.load('y.pt'); out = m(x); "
      "print(tuple(out.shape), bool(torch.allclose(out, y, atol=1e-5, rtol=1e-5)))\"");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(32, 2, 256) True"), std::string::npos) << r.output;
}

TEST(Scripted, EagerCheckpointLoadsIntoTheCompiledModel) {
  testing::TempDir dir;
  RunConfig cfg = small(0);
  torch::manual_seed(1);
  auto eager = make_model(make_plan(cfg));
  torch::serialize::OutputArchive out;
  eager->save(out);
  out.save_to(dir / "ckpt.pt");
  cfg.compile = CompilePath::kTorchScript;
  torch::manual_seed(2);  // different init
  auto compiled = make_model(make_plan(cfg));
  torch::serialize::InputArchive in;
  in.load_from(dir / "ckpt.pt");
  compiled->load(in);
  eager->eval();
  compiled->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::randint(0, 256, {cfg.seq_len, 2}, torch::kInt64);
  EXPECT_LT(rel_err(eager->forward(x), compiled->forward(x)), 1e-6);
}

TEST(Scripted, TheTorchModelHasNoScriptForm) {
  RunConfig cfg = small(0);
  cfg.model = ModelKind::kTorch;
  auto m = make_model(make_plan(cfg));
  EXPECT_THROW(script_handcraft(*m), ConfigError);
}

}  // namespace
}  // namespace trainbench
