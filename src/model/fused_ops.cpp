// Autograd functions of the fused model (see fused_ops.h): allocation, the GEMMs, and the fused
// kernels on the tensors' device.
#include "trainbench/model/fused_ops.h"

#include <cmath>

#include <ATen/record_function.h>
#include <torch/autograd.h>

#include "trainbench/kernels/fused_kernels.h"
#include "trainbench/kernels/fused_math.h"
#include "trainbench/model/causal_gemm.h"

namespace trainbench {
namespace {

namespace k = kernels;
using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// A kernel on the device of `on` (fused_kernels.h).
template <typename Args>
void run_(const Args& a, const Tensor& on) {
  k::run(a, on.device().type());
}

// An optional input: autograd functions take no undefined tensors, so "absent" travels as an
// empty tensor, and absent or empty means a null pointer for the kernels.
bool present_(const Tensor& t) { return t.defined() && t.numel() > 0; }
Tensor opt_(const Tensor& t, const Tensor& like) {
  return t.defined() ? t : torch::empty({0}, like.options());
}
const void* ptr_(const Tensor& t) { return present_(t) ? t.const_data_ptr() : nullptr; }
void* mut_(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }
Tensor contig_(const Tensor& t) { return present_(t) ? t.contiguous() : Tensor(); }
// The accumulation dtype of an activation dtype: float32, or float64 for float64.
c10::ScalarType acc_of_(c10::ScalarType t) {
  return t == torch::kDouble ? torch::kDouble : torch::kFloat;
}
// The GEMMs of the ops, on the run's route (fused_ops.h): a bfloat16/float16 product on the
// float32 route is a float32 GEMM of the same values, rounded once to the operands' dtype.
bool upcast_(GemmRoute r, c10::ScalarType t) {
  return r == GemmRoute::kFloat32 && (t == torch::kBFloat16 || t == torch::kHalf);
}
// An operand as the route's GEMM reads it: a float32 copy on the float32 route (made once when
// it feeds two GEMMs), else the tensor itself.
Tensor up_(const Tensor& t, GemmRoute r) {
  return upcast_(r, t.scalar_type()) ? t.to(torch::kFloat) : t;
}
// The product of operands from up_(), in the dtype `out`: a float32 result is rounded once.
Tensor gemm_(const Tensor& a, const Tensor& b, c10::ScalarType out) {
  const Tensor y = a.dim() == 3 ? torch::bmm(a, b) : torch::mm(a, b);
  return y.scalar_type() == out ? y : y.to(out);
}
// The route a backward takes: its forward's, kept in the node's saved data (which holds
// IValues, so the enum is stored as its index, here and nowhere else).
void save_route_(AutogradContext* ctx, GemmRoute r) {
  TORCH_CHECK(r != GemmRoute::kAuto, "a fused op needs a GEMM route (native or float32), not auto");
  ctx->saved_data["route"] = static_cast<int64_t>(r);
}
GemmRoute route_of_(AutogradContext* ctx) {
  return static_cast<GemmRoute>(ctx->saved_data["route"].toInt());
}
// An op's input x as backward keeps it: on the float32 route its float32 copy (exact; made once
// for the forward GEMM, so the weight gradient's GEMM does not convert it again), with x's own
// dtype beside it for the input gradient.
Tensor save_input_(AutogradContext* ctx, const Tensor& x, GemmRoute r) {
  ctx->saved_data["dtype"] = static_cast<int64_t>(x.scalar_type());
  return up_(x, r);
}
c10::ScalarType input_dtype_(AutogradContext* ctx) {
  return static_cast<c10::ScalarType>(ctx->saved_data["dtype"].toInt());
}
// The kernels' rounding (kernel_args.h) of a tensor stored as `stored` holding values of
// `dtype`: float32 storage of 16-bit values on the float32 route, else none.
k::StorageType round_of_(c10::ScalarType stored, c10::ScalarType dtype) {
  return stored != dtype ? k::storage_type_of(dtype) : k::StorageType::kF32;
}

// t in `dtype`, contiguous, in one copy where both a conversion and a new layout are needed
// (to() keeps the strides, so .to().contiguous() would copy twice; and to() in the same dtype
// returns a strided t itself even when asked for a contiguous format).
Tensor dense_(const Tensor& t, c10::ScalarType dtype) {
  return t.scalar_type() == dtype
             ? t.contiguous()
             : t.to(dtype, /*non_blocking=*/false, /*copy=*/false, c10::MemoryFormat::Contiguous);
}

// Column partial sums [chunks, width] → [width].
Tensor chunk_sums_(const Tensor& partials) { return partials.sum(0); }

// Column sums of rows [N, w] in `acc` (a bias gradient): the ColumnSums kernel's per-chunk
// partials, added in chunk order as every kernel's are. The rows are read once in their own
// dtype: LibTorch's sum with a dtype converted the whole tensor to it first on the CPU (a
// float32 copy of the gradient; docs/BENCHMARKS.md).
Tensor column_sums_(const Tensor& x_in, c10::ScalarType acc) {
  const Tensor x = x_in.contiguous();
  const int64_t n = x.size(0), w = x.size(1);
  Tensor partials = torch::empty({k::num_chunks(n), w}, x.options().dtype(acc));
  k::ColumnSumsArgs a;
  a.rows = n;
  a.cols = w;
  a.x = ptr_(x);
  a.partials = mut_(partials);
  a.acc = k::storage_type_of(acc);
  a.type = k::storage_type_of(x.scalar_type());
  run_(a, x);
  return chunk_sums_(partials);
}

struct FusedLinear : torch::autograd::Function<FusedLinear> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& w, const Tensor& b,
                        GemmRoute r, bool keep_float32) {
    RECORD_FUNCTION("fused::linear", std::vector<c10::IValue>());
    const bool up = upcast_(r, x.scalar_type());
    const auto out = up && keep_float32 ? torch::kFloat : x.scalar_type();
    const Tensor x_up = save_input_(ctx, x, r);
    Tensor y;
    if (!present_(b)) {
      y = gemm_(x_up, up_(w, r).t(), out);  // [N, out]
    } else if (up) {
      y = torch::addmm(b.to(torch::kFloat), x_up, w.t().to(torch::kFloat)).to(out);
    } else {
      y = torch::addmm(b.to(x.scalar_type()), x, w.t());
    }
    ctx->save_for_backward({x_up, w});
    save_route_(ctx, r);
    ctx->saved_data["has_bias"] = present_(b);
    ctx->saved_data["bias_dtype"] = static_cast<int64_t>(b.scalar_type());
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RECORD_FUNCTION("fused::linear_backward", std::vector<c10::IValue>());
    const auto saved = ctx->get_saved_variables();
    const Tensor &x = saved[0], &w = saved[1];  // x as the route's GEMMs read it
    const GemmRoute r = route_of_(ctx);
    const auto dt = input_dtype_(ctx);
    // The float32 route reads the output gradient in float32 (exact for a rounded one).
    const Tensor dy = dense_(grads[0], x.scalar_type());                         // [N, out]
    Tensor dx = ctx->needs_input_grad(0) ? gemm_(dy, up_(w, r), dt) : Tensor();  // [N, in]
    Tensor dw = gemm_(dy.t(), x, w.scalar_type());                               // [out, in]
    const auto bias_dtype = static_cast<c10::ScalarType>(ctx->saved_data["bias_dtype"].toInt());
    Tensor db = ctx->saved_data["has_bias"].toBool() ? column_sums_(dy, bias_dtype) : Tensor();
    return {dx, dw, db, Tensor(), Tensor()};
  }
};

struct DropAddLn : torch::autograd::Function<DropAddLn> {
  static variable_list forward(AutogradContext* ctx, const Tensor& resid_in,
                               const Tensor& branch_in, const Tensor& bias, const Tensor& gamma,
                               const Tensor& beta, double p, int64_t key,
                               c10::ScalarType out_dtype) {
    RECORD_FUNCTION("fused::drop_add_layer_norm", std::vector<c10::IValue>());
    const Tensor resid = contig_(resid_in), branch = branch_in.contiguous();
    const int64_t d = branch.size(-1), n = branch.numel() / d;
    const auto acc = present_(resid) ? resid.scalar_type() : acc_of_(branch.scalar_type());
    const auto acc_opts = branch.options().dtype(acc);
    Tensor resid_out = torch::empty({n, d}, acc_opts);
    Tensor y = torch::empty({n, d}, branch.options().dtype(out_dtype));
    Tensor mean, rstd;
    if (present_(gamma)) {
      mean = torch::empty({n}, acc_opts);
      rstd = torch::empty({n}, acc_opts);
    }
    k::DropAddLnArgs a;
    a.rows = n;
    a.cols = d;
    a.resid = ptr_(resid);
    a.branch = ptr_(branch);
    // The bias is required (kernel_args.h): zeros stand for an absent one ([d], negligible).
    const Tensor bias_or_zero = present_(bias) ? bias : torch::zeros({d}, acc_opts);
    a.bias = ptr_(bias_or_zero);
    a.gamma = ptr_(gamma);
    a.beta = ptr_(beta);
    a.resid_out = mut_(resid_out);
    a.y = mut_(y);
    a.mean = mut_(mean);
    a.rstd = mut_(rstd);
    a.acc = k::storage_type_of(acc);
    a.branch_type = k::storage_type_of(branch.scalar_type());
    a.out_type = k::storage_type_of(out_dtype);
    a.drop = k::math::dropout_args(p, static_cast<uint64_t>(key));
    run_(a, branch);
    ctx->save_for_backward({resid_out, opt_(mean, branch), opt_(rstd, branch), gamma});
    ctx->saved_data["p"] = p;
    ctx->saved_data["key"] = key;
    ctx->saved_data["has_resid"] = present_(resid);
    ctx->saved_data["has_bias"] = present_(bias);
    ctx->saved_data["branch_dtype"] = static_cast<int64_t>(branch.scalar_type());
    ctx->saved_data["out_dtype"] = static_cast<int64_t>(out_dtype);
    return {resid_out, y};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RECORD_FUNCTION("fused::drop_add_layer_norm_backward", std::vector<c10::IValue>());
    const auto saved = ctx->get_saved_variables();
    const Tensor &resid_out = saved[0], &mean = saved[1], &rstd = saved[2], &gamma = saved[3];
    // An output nobody used has no gradient: zeros stand for it (both are required).
    const Tensor d_resid_out =
        present_(grads[0]) ? grads[0].contiguous() : torch::zeros_like(resid_out);
    const double p = ctx->saved_data["p"].toDouble();
    const int64_t n = resid_out.size(0), d = resid_out.size(1);
    const auto branch_dtype = static_cast<c10::ScalarType>(ctx->saved_data["branch_dtype"].toInt());
    const auto out_dtype = static_cast<c10::ScalarType>(ctx->saved_data["out_dtype"].toInt());
    const bool has_resid = ctx->saved_data["has_resid"].toBool();
    Tensor d_resid = has_resid ? torch::empty_like(resid_out) : Tensor();
    Tensor d_branch = torch::empty({n, d}, resid_out.options().dtype(branch_dtype));
    Tensor partials = torch::empty({k::num_chunks(n), 3, d}, resid_out.options());
    k::DropAddLnGradArgs a;
    a.rows = n;
    a.cols = d;
    const Tensor dy_typed = present_(grads[1])
                                ? grads[1].to(out_dtype).contiguous()
                                : torch::zeros({n, d}, resid_out.options().dtype(out_dtype));
    a.dy = ptr_(dy_typed);
    a.d_resid_out = ptr_(d_resid_out);
    a.resid_out = ptr_(resid_out);
    a.mean = ptr_(mean);
    a.rstd = ptr_(rstd);
    a.gamma = ptr_(gamma);
    a.d_resid = mut_(d_resid);
    a.d_branch = mut_(d_branch);
    a.partials = mut_(partials);
    a.acc = k::storage_type_of(resid_out.scalar_type());
    a.branch_type = k::storage_type_of(branch_dtype);
    a.out_type = k::storage_type_of(out_dtype);
    a.drop = k::math::dropout_args(p, static_cast<uint64_t>(ctx->saved_data["key"].toInt()));
    run_(a, resid_out);
    const Tensor sums = chunk_sums_(partials);  // [3, d]
    Tensor d_bias = ctx->saved_data["has_bias"].toBool() ? sums[0] : Tensor();
    Tensor d_gamma = present_(gamma) ? sums[1] : Tensor();
    Tensor d_beta = present_(gamma) ? sums[2] : Tensor();
    return {d_resid, d_branch, d_bias, d_gamma, d_beta, Tensor(), Tensor(), Tensor()};
  }
};

struct LinearReluDropout : torch::autograd::Function<LinearReluDropout> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& w, const Tensor& b,
                        double p, int64_t key, GemmRoute r) {
    RECORD_FUNCTION("fused::linear_relu_dropout", std::vector<c10::IValue>());
    // On the float32 route the hidden stays in float32 storage holding values of x's dtype (the
    // kernel rounds the GEMM's output as it reads it and its result as it stores it): the FF-out
    // GEMMs read it, and the gradient the kernel writes, without a conversion either way.
    const Tensor x_up = save_input_(ctx, x, r);
    Tensor out = gemm_(x_up, up_(w, r).t(), x_up.scalar_type());  // [N, f]
    k::BiasReluDropoutArgs a;
    a.rows = out.size(0);
    a.cols = out.size(1);
    a.a = mut_(out);
    a.bias = ptr_(b);
    a.acc = k::storage_type_of(b.scalar_type());
    a.type = k::storage_type_of(out.scalar_type());
    a.round = round_of_(out.scalar_type(), x.scalar_type());
    a.drop = k::math::dropout_args(p, static_cast<uint64_t>(key));
    run_(a, out);
    ctx->save_for_backward({x_up, w, out});
    ctx->saved_data["scale"] = a.drop.scale;
    ctx->saved_data["bias_dtype"] = static_cast<int64_t>(b.scalar_type());
    save_route_(ctx, r);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RECORD_FUNCTION("fused::linear_relu_dropout_backward", std::vector<c10::IValue>());
    const auto saved = ctx->get_saved_variables();
    const Tensor &x = saved[0], &w = saved[1], &out = saved[2];
    const Tensor dout = dense_(grads[0], out.scalar_type());
    const auto acc = static_cast<c10::ScalarType>(ctx->saved_data["bias_dtype"].toInt());
    Tensor da = torch::empty_like(out);
    Tensor partials =
        torch::empty({k::num_chunks(out.size(0)), out.size(1)}, out.options().dtype(acc));
    k::BiasReluDropoutGradArgs a;
    a.rows = out.size(0);
    a.cols = out.size(1);
    a.dout = ptr_(dout);
    a.out = ptr_(out);
    a.da = mut_(da);
    a.partials = mut_(partials);
    a.acc = k::storage_type_of(acc);
    a.type = k::storage_type_of(out.scalar_type());
    a.round = round_of_(out.scalar_type(), input_dtype_(ctx));
    a.scale = ctx->saved_data["scale"].toDouble();
    run_(a, out);
    const GemmRoute r = route_of_(ctx);
    const Tensor da_up = up_(da, r);
    Tensor dx = ctx->needs_input_grad(0) ? gemm_(da_up, up_(w, r), input_dtype_(ctx)) : Tensor();
    Tensor dw = gemm_(da_up.t(), x, w.scalar_type());  // [f, in]
    return {dx, dw, chunk_sums_(partials), Tensor(), Tensor(), Tensor()};
  }
};

// Heads between rows [N, P*H*hd] and P tensors [B*H, S, hd] (HeadsArgs): to_heads reads the
// rows; round: the 16-bit type a float32 destination holds (k::StorageType::kF32: none).
void heads_(const Tensor& rows, const std::vector<Tensor>& parts, int64_t seq, int64_t heads,
            bool to_heads, k::StorageType round) {
  RECORD_FUNCTION("fused::heads", std::vector<c10::IValue>());  // the profile's copy category
  k::HeadsArgs a;
  TORCH_CHECK(!parts.empty() && parts.size() <= std::size(a.head_data),
              "fused heads: 1 to 3 parts, got ", parts.size());
  a.rows = rows.size(0);
  a.seq = seq;
  a.heads = heads;
  a.hd = parts[0].size(2);
  a.parts = static_cast<int64_t>(parts.size());
  a.row_data = mut_(rows);
  for (size_t i = 0; i < parts.size(); ++i) a.head_data[i] = mut_(parts[i]);
  a.rows_type = k::storage_type_of(rows.scalar_type());
  a.heads_type = k::storage_type_of(parts[0].scalar_type());
  a.round = round;
  a.to_heads = to_heads;
  run_(a, rows);
}

struct CausalAttention : torch::autograd::Function<CausalAttention> {
  // qkv [N, 3 * H * hd] (fused_ops.h) → [N, H * hd] in the GEMMs' dtype.
  static Tensor forward(AutogradContext* ctx, const Tensor& qkv_in, int64_t seq, int64_t heads,
                        c10::ScalarType dtype, GemmRoute r, int64_t block) {
    RECORD_FUNCTION("fused::causal_attention", std::vector<c10::IValue>());
    const Tensor qkv = qkv_in.contiguous();
    const auto stored = upcast_(r, dtype) ? torch::kFloat : dtype;  // the GEMMs' dtype
    TORCH_CHECK(qkv.scalar_type() == dtype || qkv.scalar_type() == stored,
                "causal_attention: qkv rows in ", qkv.scalar_type(), ", expected ", dtype);
    const int64_t n = qkv.size(0), d = qkv.size(1) / 3, hd = d / heads, bh = n / seq * heads;
    const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
    // q, k, v [BH, S, hd] in the GEMMs' dtype, split from the rows in one pass (on the float32
    // route float32 holding dtype's values: the qkv GEMM's float32 output rounded as it moves).
    const auto opts = qkv.options().dtype(stored);
    const std::vector<Tensor> qkv_heads{torch::empty({bh, seq, hd}, opts),
                                        torch::empty({bh, seq, hd}, opts),
                                        torch::empty({bh, seq, hd}, opts)};
    heads_(qkv, qkv_heads, seq, heads, true, round_of_(stored, dtype));
    const Tensor &q = qkv_heads[0], &kk = qkv_heads[1], &v = qkv_heads[2];
    // [BH, S, S] scores, then probabilities; in float32 only the blocks at or below the
    // diagonal are multiplied (causal_gemm.h), and the softmax writes zeros above the mask. On
    // the float32 route the scores, the probabilities and their gradients stay in float32
    // storage of dtype's values (the softmax kernels round them as they read and store them,
    // as the FF hidden's do), so the GEMMs on either side read them without a conversion.
    if (block <= 0) block = causal_block_for(stored, seq, qkv.is_cuda());
    Tensor prob = causal_scores(q, kk, stored, block);
    k::CausalSoftmaxArgs a;
    a.rows = bh * seq;
    a.seq = seq;
    a.x = mut_(prob);
    a.acc = k::storage_type_of(acc_of_(stored));
    a.type = k::storage_type_of(stored);
    a.round = round_of_(stored, dtype);
    a.scale = scale;
    run_(a, prob);
    ctx->save_for_backward({q, kk, v, prob});
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["block"] = block;
    ctx->saved_data["seq"] = seq;
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["dtype"] = static_cast<int64_t>(dtype);
    ctx->saved_data["qkv_dtype"] = static_cast<int64_t>(qkv.scalar_type());
    save_route_(ctx, r);
    // The output [BH, S, hd] into rows [N, d] in the GEMMs' dtype, rounded to dtype as it
    // moves (the output projection reads float32 rows on the float32 route as they are).
    Tensor out = torch::empty({n, d}, opts);
    heads_(out, {torch::bmm(prob, v)}, seq, heads, false, round_of_(stored, dtype));
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RECORD_FUNCTION("fused::causal_attention_backward", std::vector<c10::IValue>());
    const auto saved = ctx->get_saved_variables();
    // q, k, v and the probabilities as the route's GEMMs read them.
    const Tensor &q = saved[0], &kk = saved[1], &v = saved[2], &prob = saved[3];
    const auto dt = input_dtype_(ctx);
    const auto stored = prob.scalar_type();
    const int64_t seq = ctx->saved_data["seq"].toInt(), heads = ctx->saved_data["heads"].toInt();
    // The output gradient into [BH, S, hd] in the GEMMs' dtype, rounded to dtype as it moves
    // (on the float32 route the output projection's float32 input gradient): one pass.
    const Tensor dout_rows = grads[0].contiguous();
    const Tensor dout = torch::empty_like(q);
    heads_(dout_rows, {dout}, seq, heads, true, round_of_(stored, dt));
    const int64_t block = ctx->saved_data["block"].toInt();
    Tensor ds = causal_scores(dout, v, stored, block);  // dP, then the score gradient
    k::CausalSoftmaxGradArgs a;
    a.rows = prob.size(0) * prob.size(1);
    a.seq = prob.size(1);
    a.p = ptr_(prob);
    a.dp = mut_(ds);
    a.acc = k::storage_type_of(acc_of_(stored));
    a.type = k::storage_type_of(stored);
    a.round = round_of_(stored, dt);
    a.scale = ctx->saved_data["scale"].toDouble();
    run_(a, prob);
    // dq, dk, dv into the qkv rows' layout and dtype, rounded to dtype as they move.
    const auto qkv_dtype = static_cast<c10::ScalarType>(ctx->saved_data["qkv_dtype"].toInt());
    Tensor dqkv = torch::empty({dout_rows.size(0), 3 * dout_rows.size(1)},
                               dout_rows.options().dtype(qkv_dtype));
    heads_(dqkv,
           {torch::bmm(ds, kk), torch::bmm(ds.transpose(1, 2), q),
            torch::bmm(prob.transpose(1, 2), dout)},
           seq, heads, false, round_of_(qkv_dtype, dt));
    return {dqkv, Tensor(), Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

struct HeadCrossEntropy : torch::autograd::Function<HeadCrossEntropy> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& w, const Tensor& b,
                        const Tensor& targets_in, GemmRoute r) {
    RECORD_FUNCTION("fused::head_cross_entropy", std::vector<c10::IValue>());
    const Tensor targets = targets_in.contiguous();
    const Tensor x_up = save_input_(ctx, x, r);
    Tensor logits = gemm_(x_up, up_(w, r).t(), x.scalar_type());  // [N, V], the loss gradient
    const int64_t n = logits.size(0);
    Tensor partials = torch::empty({k::num_chunks(n)}, logits.options().dtype(b.scalar_type()));
    k::HeadCrossEntropyArgs a;
    a.rows = n;
    a.cols = logits.size(1);
    a.logits = mut_(logits);
    a.bias = ptr_(b);
    a.targets = targets.const_data_ptr<int64_t>();
    a.partials = mut_(partials);
    a.acc = k::storage_type_of(b.scalar_type());
    a.type = k::storage_type_of(logits.scalar_type());
    run_(a, logits);
    ctx->save_for_backward({x_up, w, logits});
    save_route_(ctx, r);
    return partials.sum() / static_cast<double>(n);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RECORD_FUNCTION("fused::head_cross_entropy_backward", std::vector<c10::IValue>());
    const auto saved = ctx->get_saved_variables();
    const Tensor &x = saved[0], &w = saved[1], &dlogits = saved[2];
    // d loss: a scalar (1, or the loss scale of a float16 run).
    const Tensor dl = dlogits * grads[0].to(dlogits.scalar_type());
    const GemmRoute r = route_of_(ctx);
    const Tensor dl_up = up_(dl, r);
    Tensor dx = ctx->needs_input_grad(0) ? gemm_(dl_up, up_(w, r), input_dtype_(ctx)) : Tensor();
    Tensor dw = gemm_(dl_up.t(), x, w.scalar_type());  // [V, d]
    Tensor db = column_sums_(dl, grads[0].scalar_type());
    return {dx, dw, db, Tensor(), Tensor()};
  }
};

}  // namespace

std::vector<Tensor> drop_add_layer_norm(const Tensor& resid, const Tensor& branch,
                                        const Tensor& bias, const Tensor& gamma, const Tensor& beta,
                                        FusedDropout drop, c10::ScalarType out_dtype) {
  return DropAddLn::apply(opt_(resid, branch), branch, opt_(bias, branch), opt_(gamma, branch),
                          opt_(beta, branch), drop.p, static_cast<int64_t>(drop.key), out_dtype);
}

Tensor fused_linear(const Tensor& x, const Tensor& w, const Tensor& b, GemmRoute route,
                    bool keep_float32) {
  return FusedLinear::apply(x, w, opt_(b, x), route, keep_float32);
}

Tensor linear_relu_dropout(const Tensor& x, const Tensor& w, const Tensor& b, FusedDropout drop,
                           GemmRoute route) {
  return LinearReluDropout::apply(x, w, b, drop.p, static_cast<int64_t>(drop.key), route);
}

Tensor causal_attention(const Tensor& qkv, int64_t seq, int64_t heads, c10::ScalarType dtype,
                        GemmRoute route, int64_t block) {
  return CausalAttention::apply(qkv, seq, heads, dtype, route, block);
}

Tensor head_cross_entropy(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& targets,
                          GemmRoute route) {
  return HeadCrossEntropy::apply(x, w, b, targets, route);
}

}  // namespace trainbench
