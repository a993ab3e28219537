// make_model and the pieces both models share.
#include "trainbench/model/model.h"

#include <limits>

#include "trainbench/kernels/fused_kernels.h"
#include "trainbench/model/dropout.h"
#include "trainbench/model/scripted_model.h"

namespace trainbench {

ModelOptions ModelOptions::from_plan(const RunPlan& plan) {
  const RunConfig& cfg = plan.cfg;
  ModelOptions o;
  o.seq_len = cfg.seq_len;
  o.d_model = cfg.d_model;
  o.num_heads = cfg.num_heads;
  o.ff_dim = cfg.ff_dim;
  o.num_layer = cfg.num_layer;
  o.dropout = cfg.dropout;
  o.flash = cfg.flash;
  o.norm_first = cfg.norm_first;
  o.parallel_dropout = plan.dropout == DropoutImpl::kParallel;
  o.format = kernels::run_format(plan.cfg.dtype, plan.gemm_route);
  return o;
}

ByteModelBase::ByteModelBase(const ModelOptions& o) : options_(o) {
  embed_ = register_module("embed", torch::nn::Embedding(kVocabSize, o.d_model));
  pos_ = register_parameter("pos", torch::randn({o.seq_len, o.d_model}));  // normal(0, 1)
  head_ = register_module("head", torch::nn::Linear(o.d_model, kVocabSize));
}

torch::Tensor ByteModelBase::forward(const torch::Tensor& bytes) {
  const torch::Tensor x =
      apply_dropout(embed_shifted(bytes, embed_->weight, pos_), options_.dropout, is_training(),
                    options_.parallel_dropout);  // [S, B, d]
  // at::linear, not nn::Linear::forward: see linear_ in handcraft_model.cpp.
  return torch::linear(body(x), head_->weight, head_->bias);  // [S, B, 256]
}

BlockLayers::BlockLayers(const ModelOptions& o) {
  const auto norm = [&] { return torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.d_model})); };
  ln1 = register_module("ln1", norm());
  qkv = register_module("qkv", torch::nn::Linear(o.d_model, 3 * o.d_model));
  out = register_module("out", torch::nn::Linear(o.d_model, o.d_model));
  ln2 = register_module("ln2", norm());
  ff1 = register_module("ff1", torch::nn::Linear(o.d_model, o.ff_dim));
  ff2 = register_module("ff2", torch::nn::Linear(o.ff_dim, o.d_model));
}

std::shared_ptr<LanguageModel> make_model(const RunPlan& plan) {
  const ModelOptions o = ModelOptions::from_plan(plan);
  if (plan.cfg.model == ModelKind::kTorch) return make_torch_model(o);
  switch (plan.cfg.compile) {
    case CompilePath::kTorchScript:
      return make_scripted_model(o);
    case CompilePath::kFused:
      return make_fused_model(o);
    case CompilePath::kNone:
      break;
  }
  return make_handcraft_model(o);
}

torch::Tensor LanguageModel::loss(const torch::Tensor& bytes) {
  return byte_loss(forward(bytes), bytes);
}

torch::Tensor byte_loss(const torch::Tensor& logits, const torch::Tensor& bytes) {
  // [S*B, 256] float32 against [S*B]: mean nats per byte.
  return torch::cross_entropy_loss(logits.reshape({-1, kVocabSize}).to(torch::kFloat),
                                   bytes.reshape({-1}));
}

int64_t count_parameters(const torch::nn::Module& module) {
  int64_t n = 0;
  for (const auto& p : module.parameters()) n += p.numel();
  return n;
}

torch::Tensor causal_mask(int64_t seq_len, const torch::TensorOptions& options) {
  return torch::full({seq_len, seq_len}, -std::numeric_limits<float>::infinity(), options).triu(1);
}

torch::Tensor embed_shifted(const torch::Tensor& bytes, const torch::Tensor& embedding_weight,
                            const torch::Tensor& positions) {
  const int64_t seq = bytes.size(0);
  TORCH_CHECK(seq <= positions.size(0), "sequence of ", seq, " bytes is longer than the ",
              positions.size(0), " learned positions (--seq_len)");
  torch::Tensor e = torch::embedding(embedding_weight, bytes);  // [S, B, d]
  // Right shift: position t gets the embedding of byte t-1, position 0 a zero vector.
  e = torch::cat({torch::zeros_like(e.narrow(0, 0, 1)), e.narrow(0, 0, seq - 1)}, 0);
  return e + positions.narrow(0, 0, seq).unsqueeze(1);  // + [S, 1, d]
}

}  // namespace trainbench
