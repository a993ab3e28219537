// Each kernel's Args from its tensors (fused_kernels.h): the one place the ops, the bit tests
// and kernel_bench fill them.
#include <algorithm>

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
}  // namespace

DropAddLnArgs drop_add_ln_args(const at::Tensor& resid, const at::Tensor& branch,
                               const at::Tensor& bias, const at::Tensor& gamma,
                               const at::Tensor& beta, const at::Tensor& resid_out,
                               const at::Tensor& y, const at::Tensor& mean, const at::Tensor& rstd,
                               Format branch_format, Format out_format, DropoutArgs drop) {
  return DropAddLnArgs{.rows = resid_out.size(0),
                       .cols = resid_out.size(1),
                       .resid = in_(resid),
                       .branch = in_(branch),
                       .bias = in_(bias),
                       .gamma = in_(gamma),
                       .beta = in_(beta),
                       .resid_out = out_(resid_out),
                       .y = out_(y),
                       .mean = out_(mean),
                       .rstd = out_(rstd),
                       .branch_format = branch_format,
                       .out_format = out_format,
                       .drop = drop};
}

DropAddLnGradArgs drop_add_ln_grad_args(const at::Tensor& dy, const at::Tensor& d_resid_out,
                                        const at::Tensor& resid_out, const at::Tensor& mean,
                                        const at::Tensor& rstd, const at::Tensor& gamma,
                                        const at::Tensor& d_resid, const at::Tensor& d_branch,
                                        const at::Tensor& partials, Format branch_format,
                                        Format out_format, DropoutArgs drop) {
  return DropAddLnGradArgs{.rows = resid_out.size(0),
                           .cols = resid_out.size(1),
                           .dy = in_(dy),
                           .d_resid_out = in_(d_resid_out),
                           .resid_out = in_(resid_out),
                           .mean = in_(mean),
                           .rstd = in_(rstd),
                           .gamma = in_(gamma),
                           .d_resid = out_(d_resid),
                           .d_branch = out_(d_branch),
                           .partials = out_(partials),
                           .branch_format = branch_format,
                           .out_format = out_format,
                           .drop = drop};
}

BiasReluDropoutArgs bias_relu_dropout_args(const at::Tensor& x, const at::Tensor& bias,
                                           Format format, DropoutArgs drop) {
  return BiasReluDropoutArgs{.rows = x.size(0),
                             .cols = x.size(1),
                             .a = out_(x),
                             .bias = in_(bias),
                             .format = format,
                             .drop = drop};
}

BiasReluDropoutGradArgs bias_relu_dropout_grad_args(const at::Tensor& dout, const at::Tensor& out,
                                                    const at::Tensor& da,
                                                    const at::Tensor& partials, Format format,
                                                    double scale) {
  return BiasReluDropoutGradArgs{.rows = out.size(0),
                                 .cols = out.size(1),
                                 .dout = in_(dout),
                                 .out = in_(out),
                                 .da = out_(da),
                                 .partials = out_(partials),
                                 .format = format,
                                 .scale = scale};
}

CausalSoftmaxArgs causal_softmax_args(const at::Tensor& x, int64_t rows, int64_t seq, int64_t block,
                                      Format format, double scale) {
  return CausalSoftmaxArgs{
      .rows = rows, .seq = seq, .x = out_(x), .block = block, .format = format, .scale = scale};
}

CausalSoftmaxGradArgs causal_softmax_grad_args(const at::Tensor& p, const at::Tensor& dp,
                                               int64_t rows, int64_t seq, int64_t block,
                                               Format format, double scale) {
  return CausalSoftmaxGradArgs{.rows = rows,
                               .seq = seq,
                               .p = in_(p),
                               .dp = out_(dp),
                               .block = block,
                               .format = format,
                               .scale = scale};
}

HeadsArgs heads_args(const at::Tensor& rows, const std::vector<at::Tensor>& parts, int64_t seq,
                     int64_t heads, bool to_heads, Format dst_format, int64_t block,
                     const at::Tensor& bias, const at::Tensor& partials) {
  // The checks first, each one line; then the Args in one expression, as every builder's.
  TORCH_CHECK(!parts.empty() && parts.size() <= std::size(HeadsArgs{}.head_data),
              "fused heads: 1 to 3 parts, got ", parts.size());
  const auto n_parts = static_cast<int64_t>(parts.size());
  const int64_t hd = rows.size(1) / (n_parts * heads);
  TORCH_CHECK(parts[0].numel() == rows.size(0) * heads * hd, "fused heads: ", parts[0].numel(),
              " elements a part for rows ", rows.sizes());
  const auto src = (to_heads ? rows : parts[0]).scalar_type();
  const auto dst = (to_heads ? parts[0] : rows).scalar_type();
  TORCH_CHECK(dst == dtype_of(dst_format.storage), "fused heads: ", dst, " ",
              to_heads ? "heads" : "rows", " for ", format_name(dst_format),
              "; the destination is stored as its format says");
  const auto acc = acc_dtype_of(rows.scalar_type());
  TORCH_CHECK(in_(bias) == nullptr || (to_heads && bias.is_contiguous() &&
                                       bias.numel() == rows.size(1) && bias.scalar_type() == acc),
              "fused heads: a bias of ", rows.size(1), " ", acc,
              " values, read with the rows; got ", bias.numel(), " ", bias.scalar_type());
  // HeadsAcc (storage.h): float64 where either side is, else float32.
  const auto sums = acc_dtype_of(c10::promoteTypes(rows.scalar_type(), parts[0].scalar_type()));
  TORCH_CHECK(
      in_(partials) == nullptr || (!to_heads && partials.is_contiguous() &&
                                   partials.numel() == num_chunks(rows.size(0)) * rows.size(1) &&
                                   partials.scalar_type() == sums),
      "fused heads: column partials are [chunks, ", rows.size(1), "] ", sums,
      " of merged rows; got ", partials.sizes(), " ", partials.scalar_type());
  const auto part = [&](size_t i) { return i < parts.size() ? out_(parts[i]) : nullptr; };
  return HeadsArgs{.rows = rows.size(0),
                   .seq = seq,
                   .heads = heads,
                   .hd = hd,
                   .parts = n_parts,
                   .row_data = out_(rows),
                   .head_data = {part(0), part(1), part(2)},
                   .bias = in_(bias),
                   .partials = out_(partials),
                   .rows_format = to_heads ? format_of(src) : dst_format,
                   .heads_format = to_heads ? dst_format : format_of(src),
                   .to_heads = to_heads,
                   .block = block};
}

HeadCrossEntropyArgs head_cross_entropy_args(const at::Tensor& logits, const at::Tensor& bias,
                                             const at::Tensor& targets, const at::Tensor& partials,
                                             const at::Tensor& bias_partials, Format format) {
  return HeadCrossEntropyArgs{.rows = logits.size(0),
                              .cols = logits.size(1),
                              .logits = out_(logits),
                              .bias = in_(bias),
                              .targets = static_cast<const int64_t*>(in_(targets)),
                              .partials = out_(partials),
                              .bias_partials = out_(bias_partials),
                              .format = format};
}

ColumnSumsArgs column_sums_args(const at::Tensor& x, const at::Tensor& partials, Format format) {
  return column_sums_args(x.size(0), x.size(1), in_(x), out_(partials), format);
}

AdamArgs adam_args(const at::Tensor& param, const at::Tensor& exp_avg, const at::Tensor& exp_avg_sq,
                   const at::Tensor& step, const at::Tensor& grad, const at::Tensor& copy,
                   Format copy_format, const at::Tensor& grad_scale, const at::Tensor& found_inf,
                   const AdamOptions& options) {
  TORCH_CHECK(!copy.defined() || copy.scalar_type() == dtype_of(copy_format.storage),
              "fused Adam: a ", copy.scalar_type(), " weight copy for ", format_name(copy_format),
              "; the copy is stored as its format says");
  const int64_t cols = param.dim() > 0 ? param.size(-1) : 1;
  const auto scalar = [](const at::Tensor& t) {
    return t.defined() ? static_cast<const float*>(t.const_data_ptr()) : nullptr;
  };
  return AdamArgs{.rows = cols > 0 ? param.numel() / cols : 0,
                  .cols = cols,
                  .param = param.data_ptr(),
                  .exp_avg = exp_avg.data_ptr(),
                  .exp_avg_sq = exp_avg_sq.data_ptr(),
                  .grad = grad.const_data_ptr(),
                  .copy = copy.defined() ? copy.data_ptr() : nullptr,
                  .step = scalar(step),
                  .grad_scale = scalar(grad_scale),
                  .found_inf = scalar(found_inf),
                  .grad_format = format_of(grad.scalar_type()),
                  .copy_format = copy.defined() ? copy_format : Format{},
                  .options = options};
}

AdamListArgs adam_list_args(std::span<const AdamArgs> items) {
  TORCH_CHECK(!items.empty() && items.size() <= static_cast<size_t>(kAdamListSize),
              "fused Adam: 1 to ", kAdamListSize, " parameters a pass, got ", items.size());
  for (const AdamArgs& a : items) {
    TORCH_CHECK(a.grad_format == items[0].grad_format && a.copy_format == items[0].copy_format,
                "fused Adam: a pass takes parameters of one gradient and copy format (",
                format_name(items[0].grad_format), ", ", format_name(items[0].copy_format),
                "); got ", format_name(a.grad_format), ", ", format_name(a.copy_format));
  }
  AdamListArgs l;
  l.count = static_cast<int32_t>(items.size());
  std::copy(items.begin(), items.end(), l.items);
  return l;
}

}  // namespace trainbench::kernels
