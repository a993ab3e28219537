// --compile fused: the handcraft network (model/handcraft_model.cpp: same modules, parameter
// names and initialization order, so checkpoints, --save_model and seeds carry over) run by the
// fused operations of fused_ops.h. Activations are rows [N = batch * seq, width] in
// batch-major order, so that the attention kernels' [B, S, H, hd] outputs are the next GEMM's
// input without a copy. The residual stream stays in float32 (the accumulation dtype); what a
// GEMM reads (LayerNorm outputs, attention and FF activations) is in the run's format
// (ModelOptions::format: the dtype's values, on the float32 GEMM route in float32 storage), and
// each weight is cast to it once per step, or, with --fused_adam 1, kept in it by the optimizer
// (WeightCopies below).
#include <unordered_map>

#include "trainbench/core/hash.h"
#include "trainbench/kernels/fused_kernels.h"
#include "trainbench/model/dropout.h"
#include "trainbench/model/fused_ops.h"
#include "trainbench/model/model.h"

namespace trainbench {
namespace {

using torch::Tensor;
namespace k = kernels;

// The fused ops' dropout keys. Op i of a training pass takes splitmix64(base + i) (base:
// seed_key(), the seed's hash), and the kernels move it by the pass count times g = 2^64 / phi,
// which they read where they run (FusedDropout::step): no key comes from the host per step, so
// a captured CUDA graph's replays draw new masks, and the CPU and the GPU draw the same bits.
// The ops' keys are hashed, not base + i * g: then op i + 1 at one pass would have op i's key at
// the next.
class StepKeys {
 public:
  // A pass with dropout p (0, evaluation: none, and no count): the count moves on by one, on
  // the rows' device.
  void start(double p, const torch::Device& device) {
    site_ = 0;
    if (p == 0) return;
    base_ = seed_key();
    if (!count_.defined()) count_ = torch::full({}, done_, torch::dtype(torch::kLong));
    if (count_.device() != device) count_ = count_.to(device);
    count_.add_(1);
  }
  FusedDropout next(double p) {
    return p > 0 ? FusedDropout{p, splitmix64(base_ + site_++), count_.const_data_ptr<int64_t>()}
                 : FusedDropout{};
  }
  // A resume: the passes done so far (one a training step).
  void resume_at(int64_t done) {
    done_ = done;
    count_ = Tensor();
  }

 private:
  uint64_t base_ = 0, site_ = 0;
  int64_t done_ = 0;
  Tensor count_;  // [] int64: the pass count the kernels read
};

// A weight as the GEMMs read it: rounded to the run's values once per step and held in its
// storage (float32 on the float32 route, so that each GEMM does not convert it again).
Tensor rounded_weight_(const Tensor& w, const k::Format& f) {
  return w.to(k::dtype_of(f.values)).to(k::dtype_of(f.storage));
}

// The GEMM weights as the forward reads them: rounded per step by an autograd cast, or, once
// make() was called (LanguageModel::make_weight_copies), the copies the optimizer writes: leaves
// whose values are rounded_weight_'s, refreshed here only when the parameter's version counter
// moved or its storage changed (a checkpoint, a broadcast, another optimizer: the fused Adam
// kernel writes both without moving it).
class WeightCopies {
 public:
  explicit WeightCopies(const k::Format& f) : format_(f) {}

  Tensor get(const Tensor& w) {
    if (copies_.empty()) return rounded_weight_(w, format_);
    Copy& c = copies_.at(w.unsafeGetTensorImpl());
    if (c.version != w._version() || c.data != w.const_data_ptr()) {
      torch::NoGradGuard no_grad;
      c.copy.copy_(rounded_weight_(w, format_));
      c.version = w._version();
      c.data = w.const_data_ptr();
    }
    return c.copy;
  }

  // weights: the GEMM weights; params: every parameter. One copy per weight (none when the
  // compute dtype is float32), aligned with params.
  std::vector<Tensor> make(const std::vector<Tensor>& weights, const std::vector<Tensor>& params) {
    if (!k::traits(format_.values).half) return {};
    torch::NoGradGuard no_grad;
    for (const Tensor& w : weights) {
      copies_[w.unsafeGetTensorImpl()] = {
          rounded_weight_(w, format_).contiguous().requires_grad_(true), w._version(),
          w.const_data_ptr()};
    }
    std::vector<Tensor> out;
    for (const Tensor& p : params) {
      const auto it = copies_.find(p.unsafeGetTensorImpl());
      out.push_back(it == copies_.end() ? Tensor() : it->second.copy);
    }
    return out;
  }

 private:
  struct Copy {
    Tensor copy;
    int64_t version = 0;
    const void* data = nullptr;  // set_data (a load onto another device) keeps the version
  };
  k::Format format_;
  std::unordered_map<const c10::TensorImpl*, Copy> copies_;
};

class FusedBlockImpl : public BlockLayers {
 public:
  explicit FusedBlockImpl(const ModelOptions& o)
      : BlockLayers(o), heads_(o.num_heads), flash_(o.flash), format_(o.format) {}

  // The residual stream between blocks: r (float32 [N, d], or undefined before the first
  // block) plus the pending branch (the previous FF output [N, d] and its bias, or the
  // embedding), which the next LayerNorm boundary adds with dropout in the same pass.
  struct Stream {
    Tensor resid, branch, bias;
  };

  // Returns the stream after this block; seq: tokens per sequence of the rows.
  Stream forward(const Stream& in, int64_t seq, double p, WeightCopies& weights, StepKeys& keys) {
    const k::Format& f = format_;
    const k::Format product = k::product_format(f);  // a GEMM's output unrounded
    // LayerNorm (adding the pending branch): {r [N, d] f32, y [N, d] in f, read by the GEMMs}
    auto h1 =
        drop_add_layer_norm(in.resid, in.branch, in.bias, ln1->weight, ln1->bias, keys.next(p), f);
    const Tensor attn = attention_(h1[1], seq, weights);  // qkv linear + causal attention
    const Tensor proj = fused_linear(attn, weights.get(out->weight), Tensor(), f, product);
    auto h2 = drop_add_layer_norm(h1[0], proj, out->bias, ln2->weight, ln2->bias, keys.next(p), f);
    const Tensor hidden =
        linear_relu_dropout(h2[1], weights.get(ff1->weight), ff1->bias, keys.next(p), f);
    return {h2[0], fused_linear(hidden, weights.get(ff2->weight), Tensor(), f, product), ff2->bias};
  }

 private:
  // h [N, d] (batch-major, in the run's format) → the qkv linear → attention output rows [N, d]
  // (in the run's storage without flash, its values with flash).
  Tensor attention_(const Tensor& h, int64_t seq, WeightCopies& weights) const {
    const k::Format& f = format_;
    const Tensor w = weights.get(qkv->weight);
    if (!flash_) {
      // The fused causal softmax over explicit scores, heads split and merged by its kernel.
      // On the float32 route the qkv rows stay float32 (the attention rounds them), and float32
      // rows get their bias as the attention splits them (no addmm copying it into the
      // product); 16-bit rows, rounded by their GEMM, get it from the linear, detached: either
      // way its gradient comes from the attention's merge of the rows' gradient.
      const bool wide_rows = !k::traits(f.storage).half;
      const Tensor rows =
          fused_linear(h, w, wide_rows ? Tensor() : qkv->bias.detach(), f, k::product_format(f));
      return causal_attention(rows, seq, heads_, f, 0, qkv->bias);
    }
    // Flash: LibTorch's CPU flash kernel (blockwise, no [B, H, S, S] tensor) on q, k, v views
    // [B, H, S, hd] of the rows [B, S, 3, H, hd]; in float32 on the float32 GEMM route (its
    // bfloat16 blocks would run LibTorch's reference GEMM; autograd then keeps float32 q, k, v).
    const Tensor qkv_rows = fused_linear(h, w, qkv->bias, f, k::values_format(f));
    const int64_t n = qkv_rows.size(0), d = qkv_rows.size(1) / 3, hd = d / heads_, b = n / seq;
    const auto parts = qkv_rows.view({b, seq, 3, heads_, hd}).unbind(2);
    const Tensor q = parts[0].transpose(1, 2), k = parts[1].transpose(1, 2),
                 v = parts[2].transpose(1, 2);
    Tensor o;
    if (q.scalar_type() != k::dtype_of(f.storage)) {
      o = at::scaled_dot_product_attention(q.to(torch::kFloat), k.to(torch::kFloat),
                                           v.to(torch::kFloat), {}, 0.0, true)
              .to(q.scalar_type());
    } else {
      o = at::scaled_dot_product_attention(q, k, v, {}, 0.0, true);
    }
    return o.transpose(1, 2).reshape({n, d});  // [B, S, H, hd] → [N, d]
  }

  int64_t heads_;
  bool flash_;
  k::Format format_;
};
TORCH_MODULE(FusedBlock);

class FusedModel : public ByteModelBase {
 public:
  explicit FusedModel(const ModelOptions& o) : ByteModelBase(o), weights_(o.format) {
    blocks = register_module("blocks", torch::nn::ModuleList());
    for (int64_t i = 0; i < o.num_layer; ++i) blocks->push_back(FusedBlock(o));
  }

  // bytes [S, B] → logits [S, B, 256] (evaluation, tests, the TorchScript twin's check).
  Tensor forward(const Tensor& bytes) override {
    const Tensor x = trunk_(bytes);  // [N, d] in the run's format, batch-major
    const int64_t s = bytes.size(0), b = bytes.size(1);
    const Tensor logits = fused_linear(x, weights_.get(head_->weight), head_->bias, options_.format,
                                       k::values_format(options_.format));
    return logits.view({b, s, kVocabSize}).transpose(0, 1);
  }

  // The output layer and the loss in one pass over the logits (fused_ops.h).
  Tensor loss(const Tensor& bytes) override {
    const Tensor x = trunk_(bytes);
    const Tensor targets = bytes.t().reshape({-1});  // row b*S + s predicts bytes[s, b]
    return head_cross_entropy(x, weights_.get(head_->weight), head_->bias, targets, options_.format)
        .to(torch::kFloat);
  }

  std::vector<Tensor> make_weight_copies() override {
    std::vector<Tensor> gemm_weights{head_->weight};
    for (const auto& block : *blocks) {
      const auto* b = block->as<FusedBlockImpl>();
      for (const auto* l : {&b->qkv, &b->out, &b->ff1, &b->ff2})
        gemm_weights.push_back((*l)->weight);
    }
    return weights_.make(gemm_weights, parameters());
  }
  void resume_at(int64_t steps) override { keys_.resume_at(steps); }

 protected:
  Tensor body(const Tensor& x) override { return x; }  // unused: forward is the fused one

 private:
  // bytes [S, B] → rows [N, d] in the run's format after the last block (no final LayerNorm).
  Tensor trunk_(const Tensor& bytes) {
    const int64_t s = bytes.size(0), b = bytes.size(1), d = options_.d_model;
    // The shared front ([S, B, d]) in batch-major rows: one copy of the embedded input.
    const Tensor shifted = embed_shifted(bytes, embed_->weight, pos_).transpose(0, 1).contiguous();
    const double p = is_training() ? options_.dropout : 0.0;
    FusedBlockImpl::Stream st{Tensor(), shifted.view({b * s, d}), Tensor()};
    keys_.start(p, bytes.device());
    for (const auto& block : *blocks)
      st = block->as<FusedBlockImpl>()->forward(st, s, p, weights_, keys_);
    // The last FF branch joins the stream with dropout; no LayerNorm follows.
    return drop_add_layer_norm(st.resid, st.branch, st.bias, Tensor(), Tensor(), keys_.next(p),
                               options_.format)[1];
  }

  torch::nn::ModuleList blocks{nullptr};
  WeightCopies weights_;
  StepKeys keys_;
};

}  // namespace

std::shared_ptr<LanguageModel> make_fused_model(const ModelOptions& options) {
  return std::make_shared<FusedModel>(options);
}

}  // namespace trainbench
