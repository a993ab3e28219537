// The model built from torch::nn::TransformerEncoder. LibTorch's C++ TransformerEncoderLayer
// has no norm_first option, so these blocks are post-LayerNorm (x = LN(x + drop(f(x)))), unlike
// the pre-LN handcraft model; its MultiheadAttention also applies dropout to attention weights.
#include "trainbench/model.h"

namespace trainbench {
namespace {

class TorchModel : public LanguageModel {
 public:
  explicit TorchModel(const ModelOptions& o) : options_(o) {
    embed = register_module("embed", torch::nn::Embedding(kVocabSize, o.d_model));
    pos = register_parameter("pos", torch::randn({o.seq_len, o.d_model}));  // normal(0, 1)
    auto layer = torch::nn::TransformerEncoderLayerOptions(o.d_model, o.num_heads)
                     .dim_feedforward(o.ff_dim)
                     .dropout(o.dropout)
                     .activation(torch::kReLU);
    encoder = register_module(
        "encoder",
        torch::nn::TransformerEncoder(torch::nn::TransformerEncoderOptions(layer, o.num_layer)));
    head = register_module("head", torch::nn::Linear(o.d_model, kVocabSize));
  }

  torch::Tensor forward(const torch::Tensor& bytes) override {
    const int64_t S = bytes.size(0);
    torch::Tensor x = torch::dropout(embed_shifted(bytes, embed->weight, pos), options_.dropout,
                                     is_training());  // [S, B, d]
    x = encoder(x, causal_mask(S, torch::TensorOptions().device(bytes.device())));
    return head(x);  // [S, B, 256]
  }

  const ModelOptions& options() const override { return options_; }

 private:
  ModelOptions options_;
  torch::nn::Embedding embed{nullptr};
  torch::Tensor pos;
  torch::nn::TransformerEncoder encoder{nullptr};
  torch::nn::Linear head{nullptr};
};

}  // namespace

std::shared_ptr<LanguageModel> make_torch_model(const ModelOptions& options) {
  return std::make_shared<TorchModel>(options);
}

}  // namespace trainbench
