// bench's torch model against PyTorch's nn.TransformerEncoder (the venv's Python): both block
// orders, dropout 0, float32, a small shape; the parameters handed over by name, the same batch,
// the logits and every gradient compared (torch_model_vs_pytorch.py). A flipped order must fail.
#include <gtest/gtest.h>

#include <fstream>

#include "test_util.h"
#include "trainbench/model/model.h"

namespace trainbench {
namespace {

nlohmann::json values_(const torch::Tensor& t) {
  const torch::Tensor c = t.detach().to(torch::kFloat).contiguous().reshape({-1});
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

// The torch model at a small shape, dropout 0, in either block order.
RunConfig small_torch_(bool norm_first) {
  RunConfig c;
  c.model = ModelKind::kTorch;
  c.norm_first = norm_first;
  c.d_model = 16;
  c.num_heads = 2;
  c.ff_dim = 32;
  c.seq_len = 8;
  c.num_layer = 2;
  c.dropout = 0;
  c.batch_size = 3;
  return c;
}

// Writes the model's sizes, parameters, a batch, its logits and gradients; returns the file.
std::string dump_(const testing::TempDir& dir, bool norm_first) {
  const RunConfig c = small_torch_(norm_first);
  torch::manual_seed(5);
  auto model = make_model(make_plan(c));
  model->train();
  const torch::Tensor bytes = torch::randint(0, 256, {c.seq_len, c.batch_size}, torch::kInt64);
  const torch::Tensor logits = model->forward(bytes);
  byte_loss(logits, bytes).backward();
  nlohmann::json j = {{"norm_first", norm_first}, {"d_model", c.d_model},
                      {"num_heads", c.num_heads}, {"ff_dim", c.ff_dim},
                      {"seq_len", c.seq_len},     {"num_layer", c.num_layer},
                      {"batch", c.batch_size},    {"bytes", values_(bytes.to(torch::kFloat))},
                      {"logits", values_(logits)}};
  for (const auto& p : model->named_parameters()) {
    j["params"][p.key()] = {{"shape", p.value().sizes().vec()}, {"data", values_(p.value())}};
    j["grads"][p.key()] = values_(p.value().grad());
  }
  const std::string file = dir / (norm_first ? "pre.json" : "post.json");
  std::ofstream(file) << j.dump();
  return file;
}

testing::CommandResult check_(const std::string& file, const std::string& extra = "") {
  return testing::run_command(std::string(TB_PYTHON) + " " + TB_SOURCE_DIR +
                              "/tests/model/torch_model_vs_pytorch.py " + file + extra);
}

TEST(TorchModel, EqualsPyTorchsTransformerEncoderInBothBlockOrders) {
  testing::TempDir dir;
  for (bool norm_first : {true, false}) {
    const std::string file = dump_(dir, norm_first);
    const auto same = check_(file);
    EXPECT_EQ(same.exit_code, 0) << same.output;
    EXPECT_NE(same.output.find("norm_first=" + std::to_string(norm_first) + " logits"),
              std::string::npos)
        << same.output;
    EXPECT_NE(same.output.find("equal"), std::string::npos) << same.output;
    // The other order computes another network: the comparison sees it.
    const auto flipped = check_(file, " --flip");
    EXPECT_EQ(flipped.exit_code, 1) << flipped.output;
    EXPECT_NE(flipped.output.find("DIFFERENT"), std::string::npos) << flipped.output;
  }
}

TEST(TorchModel, PreAndPostLayerNormAreDifferentNetworksWithTheSameParameters) {
  torch::manual_seed(3);
  auto pre = make_model(make_plan(small_torch_(true)));
  torch::manual_seed(3);
  auto post = make_model(make_plan(small_torch_(false)));
  ASSERT_EQ(count_parameters(*pre), count_parameters(*post));
  const torch::Tensor bytes = torch::randint(0, 256, {8, 2}, torch::kInt64);
  EXPECT_FALSE(torch::allclose(pre->forward(bytes), post->forward(bytes)));
}

}  // namespace
}  // namespace trainbench
