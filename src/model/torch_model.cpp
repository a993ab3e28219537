// The model built from torch::nn::TransformerEncoder. LibTorch's C++ TransformerEncoderLayer
// has no norm_first option, so these blocks are post-LayerNorm (x = LN(x + drop(f(x)))), unlike
// the pre-LN handcraft model; its MultiheadAttention also applies dropout to attention weights.
#include "trainbench/model/model.h"

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
    return encoder(x, causal_mask(x.size(0), torch::TensorOptions().device(x.device())));
  }

 private:
  torch::nn::TransformerEncoder encoder{nullptr};
};

}  // namespace

std::shared_ptr<LanguageModel> make_torch_model(const ModelOptions& options) {
  return std::make_shared<TorchModel>(options);
}

}  // namespace trainbench
