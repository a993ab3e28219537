// Each kernel's Args from its tensors (fused_kernels.h): the one place the ops, the bit tests
// and kernel_bench fill them.
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include "trainbench/kernels/fused_kernels.h"

namespace trainbench::kernels {

namespace {
// An input as the kernels take it: null where it is absent (undefined or empty).
const void* in_(const at::Tensor& t) {
  return t.defined() && t.numel() > 0 ? t.const_data_ptr() : nullptr;
}
void* out_(const at::Tensor& t) { return t.defined() && t.numel() > 0 ? t.data_ptr() : nullptr; }
// The accumulation dtype of a storage dtype: float64 for float64, else float32.
c10::ScalarType acc_of_(c10::ScalarType t) {
  return t == c10::ScalarType::Double ? c10::ScalarType::Double : c10::ScalarType::Float;
}
}  // namespace

DropAddLnArgs drop_add_ln_args(const at::Tensor& resid, const at::Tensor& branch,
                               const at::Tensor& bias, const at::Tensor& gamma,
                               const at::Tensor& beta, const at::Tensor& resid_out,
                               const at::Tensor& y, const at::Tensor& mean, const at::Tensor& rstd,
                               Format branch_format, Format out_format, DropoutArgs drop) {
  DropAddLnArgs a;
  a.rows = resid_out.size(0);
  a.cols = resid_out.size(1);
  a.resid = in_(resid);
  a.branch = in_(branch);
  a.bias = in_(bias);
  a.gamma = in_(gamma);
  a.beta = in_(beta);
  a.resid_out = out_(resid_out);
  a.y = out_(y);
  a.mean = out_(mean);
  a.rstd = out_(rstd);
  a.branch_format = branch_format;
  a.out_format = out_format;
  a.drop = drop;
  return a;
}

DropAddLnGradArgs drop_add_ln_grad_args(const at::Tensor& dy, const at::Tensor& d_resid_out,
                                        const at::Tensor& resid_out, const at::Tensor& mean,
                                        const at::Tensor& rstd, const at::Tensor& gamma,
                                        const at::Tensor& d_resid, const at::Tensor& d_branch,
                                        const at::Tensor& partials, Format branch_format,
                                        Format out_format, DropoutArgs drop) {
  DropAddLnGradArgs a;
  a.rows = resid_out.size(0);
  a.cols = resid_out.size(1);
  a.dy = in_(dy);
  a.d_resid_out = in_(d_resid_out);
  a.resid_out = in_(resid_out);
  a.mean = in_(mean);
  a.rstd = in_(rstd);
  a.gamma = in_(gamma);
  a.d_resid = out_(d_resid);
  a.d_branch = out_(d_branch);
  a.partials = out_(partials);
  a.branch_format = branch_format;
  a.out_format = out_format;
  a.drop = drop;
  return a;
}

BiasReluDropoutArgs bias_relu_dropout_args(const at::Tensor& x, const at::Tensor& bias,
                                           Format format, DropoutArgs drop) {
  BiasReluDropoutArgs a;
  a.rows = x.size(0);
  a.cols = x.size(1);
  a.a = out_(x);
  a.bias = in_(bias);
  a.format = format;
  a.drop = drop;
  return a;
}

BiasReluDropoutGradArgs bias_relu_dropout_grad_args(const at::Tensor& dout, const at::Tensor& out,
                                                    const at::Tensor& da,
                                                    const at::Tensor& partials, Format format,
                                                    double scale) {
  BiasReluDropoutGradArgs a;
  a.rows = out.size(0);
  a.cols = out.size(1);
  a.dout = in_(dout);
  a.out = in_(out);
  a.da = out_(da);
  a.partials = out_(partials);
  a.format = format;
  a.scale = scale;
  return a;
}

CausalSoftmaxArgs causal_softmax_args(const at::Tensor& x, int64_t rows, int64_t seq, int64_t block,
                                      Format format, double scale) {
  CausalSoftmaxArgs a;
  a.rows = rows;
  a.seq = seq;
  a.x = out_(x);
  a.block = block;
  a.format = format;
  a.scale = scale;
  return a;
}

CausalSoftmaxGradArgs causal_softmax_grad_args(const at::Tensor& p, const at::Tensor& dp,
                                               int64_t rows, int64_t seq, int64_t block,
                                               Format format, double scale) {
  CausalSoftmaxGradArgs a;
  a.rows = rows;
  a.seq = seq;
  a.p = in_(p);
  a.dp = out_(dp);
  a.block = block;
  a.format = format;
  a.scale = scale;
  return a;
}

HeadsArgs heads_args(const at::Tensor& rows, const std::vector<at::Tensor>& parts, int64_t seq,
                     int64_t heads, bool to_heads, c10::ScalarType values, int64_t block,
                     const at::Tensor& bias, const at::Tensor& partials) {
  HeadsArgs a;
  TORCH_CHECK(!parts.empty() && parts.size() <= std::size(a.head_data),
              "fused heads: 1 to 3 parts, got ", parts.size());
  a.rows = rows.size(0);
  a.seq = seq;
  a.heads = heads;
  a.parts = static_cast<int64_t>(parts.size());
  a.hd = rows.size(1) / (a.parts * heads);
  TORCH_CHECK(parts[0].numel() == rows.size(0) * heads * a.hd, "fused heads: ", parts[0].numel(),
              " elements a part for rows ", rows.sizes());
  a.row_data = out_(rows);
  for (size_t i = 0; i < parts.size(); ++i) a.head_data[i] = out_(parts[i]);
  const auto src = (to_heads ? rows : parts[0]).scalar_type();
  const auto dst = (to_heads ? parts[0] : rows).scalar_type();
  (to_heads ? a.rows_format : a.heads_format) = format_of(src, src);
  (to_heads ? a.heads_format : a.rows_format) = format_of(dst, values);
  a.to_heads = to_heads;
  a.block = block;
  if (in_(bias) != nullptr) {
    TORCH_CHECK(to_heads && bias.is_contiguous() && bias.numel() == rows.size(1) &&
                    bias.scalar_type() == acc_of_(rows.scalar_type()),
                "fused heads: a bias of ", rows.size(1), " ", acc_of_(rows.scalar_type()),
                " values, read with the rows; got ", bias.numel(), " ", bias.scalar_type());
    a.bias = in_(bias);
  }
  if (in_(partials) != nullptr) {
    // HeadsAcc (storage.h): float64 where either side is, else float32.
    const auto acc = acc_of_(c10::promoteTypes(rows.scalar_type(), parts[0].scalar_type()));
    TORCH_CHECK(!to_heads && partials.is_contiguous() &&
                    partials.numel() == num_chunks(rows.size(0)) * rows.size(1) &&
                    partials.scalar_type() == acc,
                "fused heads: column partials are [chunks, ", rows.size(1), "] ", acc,
                " of merged rows; got ", partials.sizes(), " ", partials.scalar_type());
    a.partials = out_(partials);
  }
  return a;
}

HeadCrossEntropyArgs head_cross_entropy_args(const at::Tensor& logits, const at::Tensor& bias,
                                             const at::Tensor& targets, const at::Tensor& partials,
                                             const at::Tensor& bias_partials, Format format) {
  HeadCrossEntropyArgs a;
  a.rows = logits.size(0);
  a.cols = logits.size(1);
  a.logits = out_(logits);
  a.bias = in_(bias);
  a.targets = static_cast<const int64_t*>(in_(targets));
  a.partials = out_(partials);
  a.bias_partials = out_(bias_partials);
  a.format = format;
  return a;
}

ColumnSumsArgs column_sums_args(const at::Tensor& x, const at::Tensor& partials, Format format) {
  ColumnSumsArgs a;
  a.rows = x.size(0);
  a.cols = x.size(1);
  a.x = in_(x);
  a.partials = out_(partials);
  a.format = format;
  return a;
}

}  // namespace trainbench::kernels
