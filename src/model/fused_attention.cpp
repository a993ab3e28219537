// The fused model's causal attention (see fused_ops.h): the heads kernel between the qkv rows
// and the [B*H, S, hd] layout of the score GEMMs, and the causal softmax kernels between them.
#include <algorithm>
#include <cmath>
#include <vector>

#include <ATen/record_function.h>
#include <torch/autograd.h>

#include "trainbench/model/causal_gemm.h"
#include "trainbench/model/fused_helpers.h"
#include "trainbench/model/fused_ops.h"

namespace trainbench {
namespace {

using namespace fused_detail;  // NOLINT(google-build-using-namespace): the ops' own helpers
using torch::autograd::variable_list;

// Heads between rows [N, P*H*hd] and P tensors [B*H, S, hd] (HeadsArgs): to_heads reads the
// rows; dst: the destination's format (its own dtype's, or float32 storage of bfloat16 or
// float16 values: rounded to them as they move; the source's are its own); block:
// the heads tensors flat in blocks of that many rows (causal_pv; >= S or 0: plain); bias
// (to_heads; [P*H*hd] in the rows' accumulation dtype, or empty): added to each row as it is read;
// partials (to rows; [chunks, P*H*hd] in that dtype, or empty): the rows' column sums per chunk.
void heads_(const Tensor& rows, const std::vector<Tensor>& parts, int64_t seq, int64_t heads,
            bool to_heads, const k::Format& dst, int64_t block = 0, const Tensor& bias = {},
            const Tensor& partials = {}) {
  RECORD_FUNCTION("fused::heads", std::vector<c10::IValue>());  // the profile's copy category
  run_(k::heads_args(rows, parts, seq, heads, to_heads, dst, block, bias, partials), rows);
}

struct CausalAttention : torch::autograd::Function<CausalAttention> {
  struct State {
    k::Format format;      // the scores' and probabilities' (and their gradients')
    k::Format qkv_format;  // the rows', their gradient's: f, or on the float32 route f's values
    double scale = 1;
    int64_t block = 0, seq = 0, heads = 0;
    bool has_bias = false;
  };
  // qkv [N, 3 * H * hd] (fused_ops.h), bias [3 * H * hd] or empty → [N, H * hd] in the GEMMs'
  // dtype.
  static Tensor forward(AutogradContext* ctx, const Tensor& qkv_in, const Tensor& bias, int64_t seq,
                        int64_t heads, const k::Format& f, int64_t block) {
    RECORD_FUNCTION("fused::causal_attention", std::vector<c10::IValue>());
    TORCH_CHECK(qkv_in.dim() == 2 && seq > 0 && heads > 0 && qkv_in.size(0) % seq == 0 &&
                    qkv_in.size(1) % (3 * heads) == 0,
                "causal_attention: qkv rows are [B*S, 3*H*hd]; got ", qkv_in.sizes(), " for seq ",
                seq, " and ", heads, " heads");
    const Tensor qkv = qkv_in.contiguous();
    check_input_(qkv, f, "causal_attention: qkv rows");
    const k::Format qkv_format = qkv.scalar_type() == stored_(f) ? f : k::values_format(f);
    const auto stored = stored_(f);  // the GEMMs' dtype (f.values: the values they hold)
    // 16-bit rows were rounded by their GEMM, which added the bias (given it detached): only its
    // gradient comes from here; float32 and float64 rows get it as the heads are split.
    const bool add_bias = !k::traits(qkv_format.storage).half;
    TORCH_CHECK(!present_(bias) || (bias.numel() == qkv.size(1) && bias.dim() == 1),
                "causal_attention: a qkv bias of ", qkv.size(1), " values; got ", bias.sizes());
    if (present_(bias)) reads_acc_(f, bias, "causal_attention: qkv bias");
    const int64_t n = qkv.size(0), d = qkv.size(1) / 3, hd = d / heads, bh = n / seq * heads;
    const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
    // q, k, v [BH, S, hd] in the GEMMs' dtype, split from the rows in one pass (on the float32
    // route float32 holding dtype's values: the qkv GEMM's float32 output rounded as it moves).
    const auto opts = qkv.options().dtype(stored);
    const std::vector<Tensor> qkv_heads{torch::empty({bh, seq, hd}, opts),
                                        torch::empty({bh, seq, hd}, opts),
                                        torch::empty({bh, seq, hd}, opts)};
    heads_(qkv, qkv_heads, seq, heads, true, f, 0, add_bias ? bias : Tensor());
    const Tensor &q = qkv_heads[0], &kk = qkv_heads[1], &v = qkv_heads[2];
    // The scores, then in place the probabilities: [BH, S, S] with zeros above the mask, or
    // with float32/float64 GEMMs the flat layout of the blocks at or below the diagonal
    // (causal_gemm.h), where the gradients stay too. On the float32 route they are float32
    // storage of dtype's values (the softmax kernels round them as they read and store them,
    // as the FF hidden's do), so the GEMMs on either side read them without a conversion.
    if (block <= 0) block = causal_block_for(stored, seq, qkv.is_cuda());
    // fused_ops.h: 16-bit GEMMs whole
    block = k::traits(f.storage).half ? seq : std::min(block, seq);
    Tensor prob = causal_scores(q, kk, stored, block);
    const auto a = k::causal_softmax_args(prob, bh * seq, seq, block, f, scale);
    run_(a, prob);
    ctx->save_for_backward({q, kk, v, prob});
    keep_(ctx, State{a.format, qkv_format, scale, block, seq, heads, present_(bias)});
    // The output [BH, S, hd] (in blocks of rows with the blocks) into rows [N, d] in the GEMMs'
    // dtype, rounded to dtype as it moves (the output projection reads float32 rows on the
    // float32 route as they are).
    Tensor out = torch::empty({n, d}, opts);
    heads_(out, {causal_pv(prob, v, block)}, seq, heads, false, f, block);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RECORD_FUNCTION("fused::causal_attention_backward", std::vector<c10::IValue>());
    const auto saved = ctx->get_saved_variables();
    // q, k, v and the probabilities as the route's GEMMs read them.
    const Tensor &q = saved[0], &kk = saved[1], &v = saved[2], &prob = saved[3];
    const State st = kept_<State>(ctx);
    const auto stored = prob.scalar_type();
    const int64_t seq = st.seq, heads = st.heads, block = st.block;
    // The output gradient into [BH, S, hd] in the GEMMs' dtype, rounded to dtype as it moves
    // (on the float32 route the output projection's float32 input gradient): one pass.
    const Tensor dout_rows = grads[0].contiguous();
    const Tensor dout = torch::empty_like(q);
    heads_(dout_rows, {dout}, seq, heads, true, st.format);
    Tensor ds = causal_scores(dout, v, stored, block);  // dP, then the score gradient
    run_(k::causal_softmax_grad_args(prob, ds, q.size(0) * seq, seq, block, st.format, st.scale),
         prob);
    // dq, dk, dv into the qkv rows' layout and dtype, rounded to dtype as they move.
    Tensor dqkv = torch::empty({dout_rows.size(0), 3 * dout_rows.size(1)},
                               dout_rows.options().dtype(k::dtype_of(st.qkv_format.storage)));
    const auto [dq, dk, dv] = causal_grads(ds, prob, q, kk, dout, block);
    // The bias's gradient: the qkv linear's, as its backward would have summed it (the column
    // sums of dqkv), added by the pass that writes the rows.
    const Tensor partials = st.has_bias
                                ? torch::empty({k::num_chunks(dqkv.size(0)), dqkv.size(1)},
                                               dqkv.options().dtype(k::dtype_of(st.format.acc)))
                                : Tensor();
    heads_(dqkv, {dq, dk, dv}, seq, heads, false, st.qkv_format, block, {}, partials);
    Tensor d_bias = partials.defined() ? chunk_sums_(partials) : Tensor();
    return {dqkv, d_bias, Tensor(), Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

}  // namespace

Tensor causal_attention(const Tensor& qkv, int64_t seq, int64_t heads, const k::Format& f,
                        int64_t block, const Tensor& bias) {
  return CausalAttention::apply(qkv, opt_(bias, qkv), seq, heads, f, block);
}

}  // namespace trainbench
