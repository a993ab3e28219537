// The model built from torch::nn::TransformerEncoder, with PyTorch's module and parameter names
// (encoder.layers.N.self_attn, linear1, dropout, linear2, norm1, norm2, dropout1, dropout2).
// LibTorch's C++ TransformerEncoderLayer has no norm_first option and its forward is
// post-LayerNorm (x = LN(x + drop(f(x)))); the original's blocks are pre-LN (PyTorch's
// norm_first=True), so by default each block is computed from the layer's own modules in
// PyTorch's norm_first order (torch/nn/modules/transformer.py):
//   x = x + dropout1(self_attn(norm1(x)));  x = x +
//   dropout2(linear2(dropout(relu(linear1(norm2(x))))))
// --norm_first 0 runs the encoder's own forward. Its MultiheadAttention also applies dropout to
// the attention weights, as PyTorch's does.
#include "trainbench/model/model.h"

#include <torch/nn/modules/transformercoder.h>
#include <torch/nn/modules/transformerlayer.h>

namespace trainbench {
namespace {

class TorchModel : public ByteModelBase {
 public:
  explicit TorchModel(const ModelOptions& o) : ByteModelBase(o) {
    auto layer = torch::nn::TransformerEncoderLayerOptions(o.d_model, o.num_heads)
                     .dim_feedforward(o.ff_dim)
                     .dropout(o.dropout)
                     .activation(torch::kReLU);
    encoder = register_module(
        "encoder",
        torch::nn::TransformerEncoder(torch::nn::TransformerEncoderOptions(layer, o.num_layer)));
  }

 protected:
  torch::Tensor body(const torch::Tensor& x) override {  // [S, B, d]
    const torch::Tensor mask =
        causal_mask(x.size(0), torch::TensorOptions().device(x.device()));  // [S, S], -inf above
    if (!options_.norm_first) return encoder(x, mask);
    torch::Tensor h = x;
    for (const auto& module : *encoder->layers) {
      auto& l = *module->as<torch::nn::TransformerEncoderLayer>();
      const torch::Tensor n1 = l.norm1(h);
      h = h + l.dropout1(std::get<0>(l.self_attn->forward(n1, n1, n1, /*key_padding_mask=*/{},
                                                          /*need_weights=*/false, mask)));
      const torch::Tensor n2 = l.norm2(h);
      h = h + l.dropout2(l.linear2(l.dropout(torch::relu(l.linear1(n2)))));
    }
    return h;
  }

 private:
  torch::nn::TransformerEncoder encoder{nullptr};
};

}  // namespace

std::shared_ptr<LanguageModel> make_torch_model(const ModelOptions& options) {
  return std::make_shared<TorchModel>(options);
}

}  // namespace trainbench
