// The work of a step by category, the bandwidth probe and the bounds (see step_bounds.h).
#include "trainbench/measure/step_bounds.h"

#include <algorithm>

#include "trainbench/core/timing.h"
#include "trainbench/kernels/fused_kernels.h"
#include "trainbench/measure/flops.h"

namespace trainbench {

std::map<std::string, CategoryWork> step_work(const RunPlan& plan, int64_t params) {
  const RunConfig& cfg = plan.cfg;
  const double N = static_cast<double>(cfg.batch_size * cfg.seq_len);
  const double L = static_cast<double>(cfg.num_layer), d = static_cast<double>(cfg.d_model);
  const double ff = static_cast<double>(cfg.ff_dim), S = static_cast<double>(cfg.seq_len);
  const double B = static_cast<double>(cfg.batch_size), H = static_cast<double>(cfg.num_heads);
  const bool lowp = plan.lowp();
  const double e = kernels::traits(kernels::storage_type_of(cfg.dtype)).bytes;  // an element's
  std::map<std::string, CategoryWork> w;
  const double attention_flops = 12.0 * L * S * d * N;
  // The FF hidden, the attention scores and their gradients: float32 storage on the float32
  // route (fused_ops.h).
  const bool route32 = lowp && plan.gemm_route == GemmRoute::kFloat32;
  w["gemm"].flops =
      6.0 * static_cast<double>(matmul_weight_count(cfg)) * N + (cfg.flash ? 0.0 : attention_flops);
  if (cfg.flash) {
    w["attention"].flops = attention_flops;
  } else {
    // The scores: float32 storage on the float32 route (fused_ops.h), as the FF hidden.
    w["attention"].bytes = 5.0 * (route32 ? 4.0 : e) * B * H * S * S * L;
  }
  // Two LayerNorms a layer: r' and the residual in float32, the branch and y (and their
  // gradients) in the dtype, all float32 storage on the float32 route (fused_ops.h).
  const double ln_e = route32 ? 4.0 : e;
  w["normalisation"].bytes = 2.0 * ((8 + 2 * ln_e) + (12 + 2 * ln_e)) * d * N * L;
  w["pointwise"].bytes = 5.0 * (route32 ? 4.0 : e) * ff * N * L;
  // The float32 parameters rounded every step (4 + e bytes each), but where fused Adam writes
  // the GEMM weights' copies in its pass (the optimizer's bytes below).
  // On the float32 route nothing else converts: what the GEMMs read and write (LayerNorm
  // outputs, qkv rows, attention output, FF hidden, residual branches, logits) is float32
  // storage, rounded by the kernels on either side (with --flash 1 the flash kernel's q, k, v
  // and output conversions are above the bound).
  double copy = lowp && !plan.weight_copies() ? (4.0 + e) * static_cast<double>(params) : 0.0;
  if (!cfg.flash) {
    // The attention's heads passes (HeadsArgs): q, k, v split from the qkv rows and their
    // gradients merged back (3d each way), the output merged into rows and its gradient split
    // (d each way): float32 on both sides on the float32 route, else the dtype.
    copy += N * L * (2 * 3 * d + 2 * d) * (route32 ? 8.0 : 2 * e);
  }
  w["copy"].bytes = copy;
  w["loss"].bytes = 3.0 * (route32 ? 4.0 : e) * 256 * N;  // the logits: as the FF hidden
  // Parameter, exp_avg, exp_avg_sq read and written, the gradient read: 28 bytes a parameter;
  // a weight copy's gradient and the copy itself are 2 + 2 bytes, on the float32 route 4 + 4.
  w["optimizer"].bytes = 28.0 * static_cast<double>(params);
  if (plan.weight_copies() && plan.gemm_route == GemmRoute::kFloat32) {
    w["optimizer"].bytes += 4.0 * static_cast<double>(matmul_weight_count(cfg));
  }
  return w;
}

double memory_bandwidth_probe(const torch::Device& device, int64_t array_bytes, int trials) {
  torch::NoGradGuard no_grad;
  const int64_t n = array_bytes / 4;
  const auto opts = torch::TensorOptions().dtype(torch::kFloat).device(device);
  const torch::Tensor b = torch::ones({n}, opts), c = torch::ones({n}, opts);
  torch::Tensor a = torch::empty({n}, opts);
  torch::add_out(a, b, c, 3.0);  // first touch of every page, outside the timing
  double best = 0;
  for (int t = 0; t < trials; ++t) {
    const double t0 = synchronized_now_s(device);
    torch::add_out(a, b, c, 3.0);
    const double s = std::max(1e-9, synchronized_now_s(device) - t0);
    best = std::max(best, 4.0 * static_cast<double>(n) * 4.0 / s);
  }
  return best;
}

nlohmann::json step_bounds(const nlohmann::json& ms_per_step,
                           const std::map<std::string, CategoryWork>& work, double gemm_flops_per_s,
                           double bytes_per_s) {
  nlohmann::json out = nlohmann::json::object();
  double bound_ms = 0, ms = 0;
  for (const auto& [category, w] : work) {
    const double b = (gemm_flops_per_s > 0 ? w.flops / gemm_flops_per_s : 0.0) * 1e3 +
                     (bytes_per_s > 0 ? w.bytes / bytes_per_s : 0.0) * 1e3;
    if (w.flops == 0 && w.bytes == 0) continue;
    const double m = ms_per_step.value(category, 0.0);
    out[category] = {{"ms", m},
                     {"flops", w.flops},
                     {"bytes", w.bytes},
                     {"bound_ms", b},
                     {"times", b > 0 ? nlohmann::json(m / b) : nlohmann::json(nullptr)}};
    bound_ms += b;
  }
  for (const auto& [category, v] : ms_per_step.items()) ms += v.get<double>();
  out["step"] = {{"ms", ms},
                 {"bound_ms", bound_ms},
                 {"times", bound_ms > 0 ? nlohmann::json(ms / bound_ms) : nlohmann::json(nullptr)}};
  out["gemm_flops_per_s"] = gemm_flops_per_s;
  out["memory_bytes_per_s"] = bytes_per_s;
  return out;
}

}  // namespace trainbench
