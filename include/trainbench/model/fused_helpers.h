// What the fused model's autograd functions share (fused_ops.cpp, fused_attention.cpp): the
// kernels' launch on a tensor's device, optional inputs as null pointers, the GEMMs in the run's
// format, what a node keeps of its format and its input's dtype, and bias gradients as column sums.
#pragma once

#include <array>

#include <torch/autograd.h>

#include "trainbench/kernels/fused_kernels.h"
#include "trainbench/model/fused_ops.h"

namespace trainbench::fused_detail {

namespace k = kernels;
using torch::Tensor;
using torch::autograd::AutogradContext;

// A kernel on the device of `on` (fused_kernels.h).
template <typename Args>
inline void run_(const Args& a, const Tensor& on) {
  k::run(a, on.device().type());
}

// An optional input: autograd functions take no undefined tensors, so "absent" travels as an
// empty tensor, and absent or empty means a null pointer for the kernels.
inline bool present_(const Tensor& t) { return t.defined() && t.numel() > 0; }
inline Tensor opt_(const Tensor& t, const Tensor& like) {
  return t.defined() ? t : torch::empty({0}, like.options());
}
inline Tensor contig_(const Tensor& t) { return present_(t) ? t.contiguous() : Tensor(); }
// The run's format f (fused_ops.h) in tensor dtypes: what the GEMMs read and the ops keep are
// stored as stored_(f), holding values_(f)'s values.
inline c10::ScalarType stored_(const k::Format& f) { return k::dtype_of(f.storage); }
inline c10::ScalarType values_(const k::Format& f) { return k::dtype_of(f.values); }
// f for a kernel that reads t in f's accumulation dtype (a bias, the residual stream): any other
// dtype is refused in one line. what: "op: bias".
inline const k::Format& reads_acc_(const k::Format& f, const Tensor& t, const char* what) {
  TORCH_CHECK(t.scalar_type() == k::dtype_of(f.acc), what, " in ", t.scalar_type(),
              " for a run in ", k::format_name(f), " (", k::dtype_of(f.acc), " only)");
  return f;
}
// The float32 GEMM route: a bfloat16/float16 product is a float32 GEMM of the same values,
// rounded once to them.
inline bool upcast_(const k::Format& f) { return f.storage != f.values; }
// An operand as the run's GEMMs read it: a float32 copy of a 16-bit tensor on the float32 route
// (made once when it feeds two GEMMs), else the tensor itself.
inline Tensor up_(const Tensor& t, const k::Format& f) {
  return upcast_(f) && t.scalar_type() != stored_(f) ? t.to(stored_(f)) : t;
}
// The product of operands from up_(), in the dtype `out`: a float32 result is rounded once.
inline Tensor gemm_(const Tensor& a, const Tensor& b, c10::ScalarType out) {
  const Tensor y = a.dim() == 3 ? torch::bmm(a, b) : torch::mm(a, b);
  return y.scalar_type() == out ? y : y.to(out);
}
// An op's input held in the run's format: in its storage (the float32 route's float32, or a
// 16-bit dtype's own) or a tensor of its values (bfloat16 storage on the float32 route); any
// other dtype is refused in one line. what: "op: input".
inline void check_input_(const Tensor& x, const k::Format& f, const char* what) {
  const auto t = x.scalar_type();
  TORCH_CHECK(t == stored_(f) || t == values_(f), what, " in ", t, " for a run in ",
              k::format_name(f), " (", stored_(f), upcast_(f) ? " or " : "",
              upcast_(f) ? c10::toString(values_(f)) : "", upcast_(f) ? ")" : " only)");
}

// A fused op's state for its backward, typed: each op's own struct (its route, formats,
// dropout, shapes), kept in its node as one capsule (autograd's saved_data holds IValues), not
// as string-keyed entries. Its tensors go through save_for_backward, as autograd requires.
template <typename State>
struct Kept : torch::CustomClassHolder {
  explicit Kept(State s) : state(std::move(s)) {}
  State state;
};
template <typename State>
inline void keep_(AutogradContext* ctx, State s) {
  ctx->saved_data["state"] =
      c10::IValue::make_capsule(c10::make_intrusive<Kept<State>>(std::move(s)));
}
template <typename State>
inline State kept_(AutogradContext* ctx) {
  const auto held = ctx->saved_data["state"].toCapsule();
  return static_cast<const Kept<State>*>(held.get())->state;
}

// What a GEMM op's backward knows of its input x: the run's format and x's own dtype (the input
// gradient's).
struct GemmInput {
  k::Format format;
  c10::ScalarType storage = torch::kFloat;
};
// x as backward keeps it, after check_input_: on the float32 route its float32 copy (exact; made
// once for the forward GEMM, so that the weight gradient's GEMM does not convert it again); *in
// says what it was.
inline Tensor keep_input_(const Tensor& x, const k::Format& f, const char* what, GemmInput* in) {
  check_input_(x, f, what);
  *in = GemmInput{f, x.scalar_type()};
  return up_(x, f);
}

// A linear's GEMMs in the run's format, the one place its route shows. Forward: x_up (as
// keep_input_ left it) times w^T, plus b where given (folded into addmm in the GEMM's dtype: the
// float32 route's float32), the product in the dtype `out`.
inline Tensor linear_(const Tensor& x_up, const Tensor& w, const Tensor& b, const k::Format& f,
                      c10::ScalarType out) {
  if (!present_(b)) return gemm_(x_up, up_(w, f).t(), out);  // [N, out]
  if (upcast_(f)) return torch::addmm(b.to(torch::kFloat), x_up, w.t().to(torch::kFloat)).to(out);
  return torch::addmm(b.to(x_up.scalar_type()), x_up, w.t());
}
// Backward, from dy [N, out] in x_up's dtype: {dx in the input's own dtype (undefined unless
// want_dx), dw [out, in] in w's}.
inline std::array<Tensor, 2> linear_grads_(const Tensor& dy, const Tensor& x_up, const Tensor& w,
                                           const GemmInput& in, bool want_dx) {
  return {want_dx ? gemm_(dy, up_(w, in.format), in.storage) : Tensor(),
          gemm_(dy.t(), x_up, w.scalar_type())};
}

// Column partial sums [chunks, width] → [width].
inline Tensor chunk_sums_(const Tensor& partials) { return partials.sum(0); }

// Column sums of rows [N, w] in `acc` (a bias gradient): the ColumnSums kernel's per-chunk
// partials, added in chunk order as every kernel's are. The rows are read once in their own
// dtype: LibTorch's sum with a dtype converted the whole tensor to it first on the CPU (a
// float32 copy of the gradient; docs/BENCHMARKS.md).
inline Tensor column_sums_(const Tensor& x_in, c10::ScalarType acc) {
  const Tensor x = x_in.contiguous();
  const int64_t n = x.size(0), w = x.size(1);
  Tensor partials = torch::empty({k::num_chunks(n), w}, x.options().dtype(acc));
  run_(k::column_sums_args(x, partials, k::format_of(x.scalar_type(), x.scalar_type(), acc)), x);
  return chunk_sums_(partials);
}

// t in `dtype`, contiguous, in one copy where both a conversion and a new layout are needed
// (to() keeps the strides, so .to().contiguous() would copy twice; and to() in the same dtype
// returns a strided t itself even when asked for a contiguous format).
inline Tensor dense_(const Tensor& t, c10::ScalarType dtype) {
  return t.scalar_type() == dtype
             ? t.contiguous()
             : t.to(dtype, /*non_blocking=*/false, /*copy=*/false, c10::MemoryFormat::Contiguous);
}

}  // namespace trainbench::fused_detail
