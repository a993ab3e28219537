// Autograd functions of the fused model (see fused_ops.h): allocation, the GEMMs, and the fused
// kernels on the tensors' device; the attention's are in fused_attention.cpp.
#include "trainbench/model/fused_ops.h"

#include <ATen/record_function.h>
#include <torch/autograd.h>

#include "trainbench/kernels/fused_math.h"
#include "trainbench/model/fused_helpers.h"

namespace trainbench {
namespace {

using namespace fused_detail;  // NOLINT(google-build-using-namespace): the ops' own helpers
using torch::autograd::variable_list;

struct FusedLinear : torch::autograd::Function<FusedLinear> {
  struct State {
    GemmInput in;
    bool has_bias = false;
    c10::ScalarType bias_dtype = torch::kFloat;
  };
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& w, const Tensor& b,
                        const k::Format& f, const k::Format& out_format) {
    RECORD_FUNCTION("fused::linear", std::vector<c10::IValue>());
    TORCH_CHECK(out_format == k::values_format(f) || out_format == k::product_format(f),
                "fused_linear: an output in ", k::format_name(out_format), " for a run in ",
                k::format_name(f), "; it is the run's values or the GEMM's product");
    State st{{}, present_(b), b.scalar_type()};
    const Tensor x_up = keep_input_(x, f, "fused_linear: x", &st.in);
    const Tensor y = linear_(x_up, w, b, f, k::dtype_of(out_format.storage));  // [N, out]
    ctx->save_for_backward({x_up, w});
    keep_(ctx, st);
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RECORD_FUNCTION("fused::linear_backward", std::vector<c10::IValue>());
    const auto saved = ctx->get_saved_variables();
    const Tensor &x = saved[0], &w = saved[1];  // x as the route's GEMMs read it
    const State st = kept_<State>(ctx);
    // The float32 route reads the output gradient in float32 (exact for a rounded one).
    const Tensor dy = dense_(grads[0], x.scalar_type());  // [N, out]
    auto [dx, dw] = linear_grads_(dy, x, w, st.in, ctx->needs_input_grad(0));
    // A bias given detached (the attention sums the qkv bias's gradient as it merges its rows)
    // needs none here.
    Tensor db =
        st.has_bias && ctx->needs_input_grad(2) ? column_sums_(dy, st.bias_dtype) : Tensor();
    return {dx, dw, db, Tensor(), Tensor()};
  }
};

struct DropAddLn : torch::autograd::Function<DropAddLn> {
  struct State {
    k::DropoutArgs drop;
    bool has_resid = false, has_bias = false;
    k::Format branch_format, out_format;  // the forward's, the backward's alike
  };
  static variable_list forward(AutogradContext* ctx, const Tensor& resid_in,
                               const Tensor& branch_in, const Tensor& bias, const Tensor& gamma,
                               const Tensor& beta, FusedDropout drop, const k::Format& f) {
    RECORD_FUNCTION("fused::drop_add_layer_norm", std::vector<c10::IValue>());
    const Tensor resid = contig_(resid_in), branch = branch_in.contiguous();
    if (present_(resid)) reads_acc_(f, resid, "drop_add_layer_norm: resid");
    if (present_(bias)) reads_acc_(f, bias, "drop_add_layer_norm: bias");
    const int64_t d = branch.size(-1), n = branch.numel() / d;
    const auto acc_opts = branch.options().dtype(k::dtype_of(f.acc));
    Tensor resid_out = torch::empty({n, d}, acc_opts);
    Tensor y = torch::empty({n, d}, branch.options().dtype(stored_(f)));
    Tensor mean, rstd;
    if (present_(gamma)) {
      mean = torch::empty({n}, acc_opts);
      rstd = torch::empty({n}, acc_opts);
    }
    // The bias is required (kernel_args.h): zeros stand for an absent one ([d], negligible).
    const Tensor bias_or_zero = present_(bias) ? bias : torch::zeros({d}, acc_opts);
    const auto a = k::drop_add_ln_args(resid, branch, bias_or_zero, gamma, beta, resid_out, y, mean,
                                       rstd, k::format_of(branch.scalar_type()), f, drop.args());
    run_(a, branch);
    ctx->save_for_backward({resid_out, opt_(mean, branch), opt_(rstd, branch), gamma});
    keep_(ctx, State{a.drop, present_(resid), present_(bias), a.branch_format, a.out_format});
    return {resid_out, y};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RECORD_FUNCTION("fused::drop_add_layer_norm_backward", std::vector<c10::IValue>());
    const auto saved = ctx->get_saved_variables();
    const Tensor &resid_out = saved[0], &mean = saved[1], &rstd = saved[2], &gamma = saved[3];
    // An output nobody used has no gradient: zeros stand for it (both are required).
    const Tensor d_resid_out =
        present_(grads[0]) ? grads[0].contiguous() : torch::zeros_like(resid_out);
    const State st = kept_<State>(ctx);
    const int64_t n = resid_out.size(0), d = resid_out.size(1);
    const auto y_dtype = k::dtype_of(st.out_format.storage);
    Tensor d_resid = st.has_resid ? torch::empty_like(resid_out) : Tensor();
    Tensor d_branch =
        torch::empty({n, d}, resid_out.options().dtype(k::dtype_of(st.branch_format.storage)));
    Tensor partials = torch::empty({k::num_chunks(n), 3, d}, resid_out.options());
    // y's gradient in y's storage (on the float32 route a GEMM's float32 product: the kernel
    // rounds it to the values of y's format as it reads it).
    const Tensor dy_typed = present_(grads[1])
                                ? dense_(grads[1], y_dtype)
                                : torch::zeros({n, d}, resid_out.options().dtype(y_dtype));
    run_(k::drop_add_ln_grad_args(dy_typed, d_resid_out, resid_out, mean, rstd, gamma, d_resid,
                                  d_branch, partials, st.branch_format, st.out_format, st.drop),
         resid_out);
    const Tensor sums = chunk_sums_(partials);  // [3, d]
    Tensor d_bias = st.has_bias ? sums[0] : Tensor();
    Tensor d_gamma = present_(gamma) ? sums[1] : Tensor();
    Tensor d_beta = present_(gamma) ? sums[2] : Tensor();
    return {d_resid, d_branch, d_bias, d_gamma, d_beta, Tensor(), Tensor(), Tensor()};
  }
};

struct LinearReluDropout : torch::autograd::Function<LinearReluDropout> {
  struct State {
    GemmInput in;
    k::Format format;  // the hidden's (and its gradient's); its acc is the bias's dtype
    double scale = 1;  // the dropout's
  };
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& w, const Tensor& b,
                        FusedDropout drop, const k::Format& f) {
    RECORD_FUNCTION("fused::linear_relu_dropout", std::vector<c10::IValue>());
    // The hidden in f.storage (the kernel rounds the GEMM's output to f's values as it reads it
    // and its result as it stores it): the FF-out GEMMs read it, and the gradient the kernel
    // writes, without a conversion either way.
    State st;
    const Tensor x_up = keep_input_(x, f, "linear_relu_dropout: x", &st.in);
    Tensor out = linear_(x_up, w, Tensor(), f, stored_(f));  // [N, f]
    const auto a = k::bias_relu_dropout_args(out, b, reads_acc_(f, b, "linear_relu_dropout: bias"),
                                             drop.args());
    run_(a, out);
    ctx->save_for_backward({x_up, w, out});
    st.format = a.format;
    st.scale = a.drop.scale;
    keep_(ctx, st);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RECORD_FUNCTION("fused::linear_relu_dropout_backward", std::vector<c10::IValue>());
    const auto saved = ctx->get_saved_variables();
    const Tensor &x = saved[0], &w = saved[1], &out = saved[2];
    const State st = kept_<State>(ctx);
    const Tensor dout = dense_(grads[0], out.scalar_type());
    Tensor da = torch::empty_like(out);
    Tensor partials = torch::empty({k::num_chunks(out.size(0)), out.size(1)},
                                   out.options().dtype(k::dtype_of(st.format.acc)));
    run_(k::bias_relu_dropout_grad_args(dout, out, da, partials, st.format, st.scale), out);
    auto [dx, dw] = linear_grads_(da, x, w, st.in, ctx->needs_input_grad(0));
    return {dx, dw, chunk_sums_(partials), Tensor(), Tensor(), Tensor()};
  }
};

struct HeadCrossEntropy : torch::autograd::Function<HeadCrossEntropy> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& w, const Tensor& b,
                        const Tensor& targets_in, const k::Format& f) {
    RECORD_FUNCTION("fused::head_cross_entropy", std::vector<c10::IValue>());
    const Tensor targets = targets_in.contiguous();
    GemmInput in;
    const Tensor x_up = keep_input_(x, f, "head_cross_entropy: x", &in);
    // [N, V] in f.storage: the kernel rounds the GEMM's product to f's values as it reads it and
    // leaves the gradient in f (the backward GEMMs' operand, no conversion either way).
    Tensor logits = linear_(x_up, w, Tensor(), f, stored_(f));
    const int64_t n = logits.size(0), v = logits.size(1);
    const auto acc_opts = logits.options().dtype(k::dtype_of(f.acc));
    Tensor partials = torch::empty({k::num_chunks(n)}, acc_opts);
    Tensor bias_partials = torch::empty({k::num_chunks(n), v}, acc_opts);
    run_(k::head_cross_entropy_args(logits, b, targets, partials, bias_partials,
                                    reads_acc_(f, b, "head_cross_entropy: bias")),
         logits);
    ctx->save_for_backward({x_up, w, logits, bias_partials});
    keep_(ctx, in);
    return partials.sum() / static_cast<double>(n);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RECORD_FUNCTION("fused::head_cross_entropy_backward", std::vector<c10::IValue>());
    const auto saved = ctx->get_saved_variables();
    const Tensor &x = saved[0], &w = saved[1], &dlogits = saved[2], &bias_partials = saved[3];
    // d loss: a scalar, 1 or the loss scale of a float16 run (a power of two, as the scaler's
    // options are: scaling the gradient's sums is then exact, not only close). A host scalar of 1
    // leaves the gradient as the forward wrote it; on a device its value is not read back (no
    // sync): the rows are scaled. The scale is not rounded to the gradient's dtype first (2^16, the
    // first scale, is inf in float16): a host scalar multiplies 16-bit rows in float32, a device
    // one through a float32 copy.
    const Tensor& g = grads[0];
    const bool one = g.is_cpu() && g.item<double>() == 1.0;
    const auto dt = dlogits.scalar_type();
    const Tensor dl = one                                ? dlogits
                      : g.is_cpu() || dt != torch::kHalf ? dlogits * g
                                                         : (dlogits.to(torch::kFloat) * g).to(dt);
    const GemmInput in = kept_<GemmInput>(ctx);
    auto [dx, dw] = linear_grads_(dl, x, w, in, ctx->needs_input_grad(0));
    // The bias's: the column sums the forward's kernel added as it wrote the gradient, scaled.
    Tensor db = chunk_sums_(bias_partials) * g;
    return {dx, dw, db, Tensor(), Tensor()};
  }
};

}  // namespace

k::DropoutArgs FusedDropout::args() const {
  k::DropoutArgs a = k::math::dropout_args(p, key);
  a.step = step;
  return a;
}

std::vector<Tensor> drop_add_layer_norm(const Tensor& resid, const Tensor& branch,
                                        const Tensor& bias, const Tensor& gamma, const Tensor& beta,
                                        FusedDropout drop, const k::Format& f) {
  return DropAddLn::apply(opt_(resid, branch), branch, opt_(bias, branch), opt_(gamma, branch),
                          opt_(beta, branch), drop, f);
}

Tensor fused_linear(const Tensor& x, const Tensor& w, const Tensor& b, const k::Format& f,
                    const k::Format& out) {
  return FusedLinear::apply(x, w, opt_(b, x), f, out);
}

Tensor linear_relu_dropout(const Tensor& x, const Tensor& w, const Tensor& b, FusedDropout drop,
                           const k::Format& f) {
  return LinearReluDropout::apply(x, w, b, drop, f);
}

Tensor head_cross_entropy(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& targets,
                          const k::Format& f) {
  return HeadCrossEntropy::apply(x, w, b, targets, f);
}

}  // namespace trainbench
