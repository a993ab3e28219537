// The reference block written by hand: pre-LayerNorm, fused qkv projection, naive or fused
// (SDPA) causal attention, ReLU feed-forward. No final LayerNorm, as in the reference.
#include <cmath>

#include "trainbench/model/dropout.h"
#include "trainbench/model/model.h"

namespace trainbench {
namespace {

class BlockImpl : public BlockLayers {
 public:
  explicit BlockImpl(const ModelOptions& o)
      : BlockLayers(o),
        heads_(o.num_heads),
        dropout_(o.dropout),
        parallel_dropout_(o.parallel_dropout),
        flash_(o.flash) {}

  // x: [S, B, d]; mask: [S, S] additive causal mask (unused with --flash 1, whose kernel is
  // causal by itself).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) {
    const bool train = is_training();
    torch::Tensor h = x + drop_(linear_(out, attention(ln1(x), mask)), train);
    torch::Tensor f = linear_(ff2, drop_(torch::relu(linear_(ff1, ln2(h))), train));
    return h + drop_(f, train);
  }

  torch::Tensor drop_(const torch::Tensor& x, bool train) const {
    return apply_dropout(x, dropout_, train, parallel_dropout_);
  }

  // at::linear (the op Python's nn.Linear calls) folds the bias of a 3-D input into one addmm
  // instead of a matmul plus a separate pass over the activations for the bias.
  static torch::Tensor linear_(const torch::nn::Linear& layer, const torch::Tensor& x) {
    return torch::linear(x, layer->weight, layer->bias);
  }

  torch::Tensor attention(const torch::Tensor& x, const torch::Tensor& mask) {
    const int64_t S = x.size(0), B = x.size(1), d = x.size(2), hd = d / heads_;
    // [S, B, 3d] → [S, B, 3, H, hd] → [3, B, H, S, hd]
    // unbind, not three index ops: each select's backward would allocate and fill a full-size
    // zero gradient, where unbind's backward stacks the three at once.
    const auto qkv_heads =
        linear_(qkv, x).view({S, B, 3, heads_, hd}).permute({2, 1, 3, 0, 4}).unbind(0);
    const torch::Tensor &q = qkv_heads[0], &k = qkv_heads[1], &v = qkv_heads[2];
    torch::Tensor o;  // [B, H, S, hd]
    if (flash_) {
      o = at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);
    } else {
      auto scores = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(double(hd)));
      auto weights = torch::softmax(scores + mask, -1);  // [B, H, S, S]
      o = torch::matmul(weights.to(v.scalar_type()), v);
    }
    return o.permute({2, 0, 1, 3}).reshape({S, B, d});  // [S, B, d]
  }

 private:
  int64_t heads_;
  double dropout_;
  bool parallel_dropout_;
  bool flash_;
};
TORCH_MODULE(Block);

class HandcraftModel : public ByteModelBase {
 public:
  explicit HandcraftModel(const ModelOptions& o) : ByteModelBase(o) {
    blocks = register_module("blocks", torch::nn::ModuleList());
    for (int64_t i = 0; i < o.num_layer; ++i) blocks->push_back(Block(o));
  }

 protected:
  torch::Tensor body(const torch::Tensor& input) override {
    torch::Tensor x = input, mask;  // [S, B, d]
    if (!options_.flash) mask = causal_mask(x.size(0), torch::TensorOptions().device(x.device()));
    for (const auto& block : *blocks) x = block->as<BlockImpl>()->forward(x, mask);
    return x;
  }

 private:
  torch::nn::ModuleList blocks{nullptr};
};

}  // namespace

std::shared_ptr<LanguageModel> make_handcraft_model(const ModelOptions& options) {
  return std::make_shared<HandcraftModel>(options);
}

}  // namespace trainbench
