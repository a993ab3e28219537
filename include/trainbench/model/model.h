// The byte-level language model interface and its implementations: torch, handcraft, and the
// handcraft network as a TorchScript graph (scripted_model.h) and on bench's fused kernels.
#pragma once

#include <memory>
#include <string>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/types.h>

#include "trainbench/core/plan.h"
#include "trainbench/kernels/kernel_args.h"

namespace trainbench {

inline constexpr int64_t kVocabSize = 256;  // bytes

// Shapes of the network and its kernels' choices, derived from the run's plan.
struct ModelOptions {
  int64_t seq_len = 256;  // max positions (size of the learned positional encoding)
  int64_t d_model = 512;
  int64_t num_heads = 8;
  int64_t ff_dim = 2048;
  int64_t num_layer = 24;  // RunConfig's (the reference code's) default; from_plan sets the run's
  double dropout = 0.1;
  bool flash = false;             // handcraft: flash attention (SDPA) instead of explicit scores
  bool parallel_dropout = false;  // handcraft: the parallel-mask dropout of dropout.h
  bool norm_first = true;         // torch: pre-LN blocks from the layers' modules (else post-LN)
  // fused (--compile fused): the run's format, built once from the plan's dtype and GEMM route
  // (kernels::run_format): what its ops and kernels hold the activations in; parameters stay in
  // their own dtype (float32 master weights).
  kernels::Format format;

  static ModelOptions from_plan(const RunPlan& plan);
};

// forward(bytes [seq, batch] int64) → logits [seq, batch, 256]. Position t sees bytes < t only:
// the embeddings are shifted right by one with a zero vector in front.
class LanguageModel : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(const torch::Tensor& bytes) = 0;
  // Mean cross-entropy in nats per byte (a float32 scalar) of the model's predictions for
  // bytes [seq, batch]; by default byte_loss(forward(bytes), bytes), the fused model fuses the
  // output layer with the loss.
  virtual torch::Tensor loss(const torch::Tensor& bytes);
  virtual const ModelOptions& options() const = 0;
  // Low-precision copies of the GEMM weights for an optimizer that writes them as it updates
  // the float32 parameters (FusedAdam, train/fused_adam.h): one per parameter in parameters()
  // order, undefined where none. From this call on the forward reads the copies (one is
  // refreshed when anything else changed its parameter: a checkpoint, a broadcast) and the
  // backward leaves those weights' gradients in them. The fused model in bfloat16/float16 has
  // them; by default there are none.
  virtual std::vector<torch::Tensor> make_weight_copies() { return {}; }
  // A resume after `steps` training steps: a model whose dropout masks follow a step count (the
  // fused one's) counts on from there; by default nothing.
  virtual void resume_at(int64_t /*steps*/) {}
};

// What both models share: byte embedding, learned positional encoding [seq_len, d], embedding
// dropout and the output layer Linear(d, 256). Subclasses supply the blocks in body().
class ByteModelBase : public LanguageModel {
 public:
  explicit ByteModelBase(const ModelOptions& options);
  torch::Tensor forward(const torch::Tensor& bytes) override;
  const ModelOptions& options() const override { return options_; }

 protected:
  // x: [S, B, d] embedded input → [S, B, d] after the blocks.
  virtual torch::Tensor body(const torch::Tensor& x) = 0;
  ModelOptions options_;
  torch::nn::Embedding embed_{nullptr};
  torch::Tensor pos_;
  torch::nn::Linear head_{nullptr};
};

// The layers of one reference block under the reference names (ln1, qkv, out, ln2, ff1, ff2),
// registered in this order: the eager handcraft block and the fused one both derive from it,
// so they have the same parameters, names and initial values for a seed.
class BlockLayers : public torch::nn::Module {
 public:
  explicit BlockLayers(const ModelOptions& o);

  torch::nn::LayerNorm ln1{nullptr};
  torch::nn::Linear qkv{nullptr}, out{nullptr};  // [3d, d], [d, d]
  torch::nn::LayerNorm ln2{nullptr};
  torch::nn::Linear ff1{nullptr}, ff2{nullptr};  // [ff, d], [d, ff]
};

// Builds the plan's model on its compiled path with PyTorch's default initialization (seeded by
// the caller through torch::manual_seed), on the CPU (the caller moves it).
std::shared_ptr<LanguageModel> make_model(const RunPlan& plan);
std::shared_ptr<LanguageModel> make_handcraft_model(const ModelOptions& options);
std::shared_ptr<LanguageModel> make_torch_model(const ModelOptions& options);
// --compile fused: the handcraft network (same parameters, names and initialization) run by
// the fused operations of fused_ops.h.
std::shared_ptr<LanguageModel> make_fused_model(const ModelOptions& options);

// Mean cross-entropy of logits [S, B, 256] against bytes [S, B], computed in float32.
torch::Tensor byte_loss(const torch::Tensor& logits, const torch::Tensor& bytes);

int64_t count_parameters(const torch::nn::Module& module);

// Additive causal mask [seq, seq]: 0 on and below the diagonal, -inf above.
torch::Tensor causal_mask(int64_t seq_len, const torch::TensorOptions& options);

// Shared front of both models: byte embedding, right shift, positional encoding → [S, B, d].
torch::Tensor embed_shifted(const torch::Tensor& bytes, const torch::Tensor& embedding_weight,
                            const torch::Tensor& positions);

}  // namespace trainbench
