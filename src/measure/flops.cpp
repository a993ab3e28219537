// FLOP accounting and the peak used for MFU.
#include "trainbench/measure/flops.h"

#include <vector>

#include "trainbench/core/cpu_isa.h"

namespace trainbench {

int64_t matmul_weight_count(const RunConfig& cfg) {
  const int64_t d = cfg.d_model;
  const int64_t per_block = 3 * d * d + d * d + 2 * d * cfg.ff_dim;
  return cfg.num_layer * per_block + d * 256;
}

double flops_per_token(const RunConfig& cfg) {
  return 6.0 * static_cast<double>(matmul_weight_count(cfg)) +
         12.0 * static_cast<double>(cfg.num_layer * cfg.seq_len * cfg.d_model);
}

int64_t parameter_count(const RunConfig& cfg) {
  const int64_t d = cfg.d_model, ff = cfg.ff_dim;
  // qkv and out projections with biases, two LayerNorms, the feed-forward pair with biases
  const int64_t per_block = 4 * d * d + 4 * d + 4 * d + 2 * d * ff + ff + d;
  return 256 * d + cfg.seq_len * d + cfg.num_layer * per_block + 256 * d + 256;
}

MemoryEstimate estimate_memory(const RunPlan& plan, int64_t params) {
  const RunConfig& cfg = plan.cfg;
  const double S = static_cast<double>(cfg.seq_len), d = static_cast<double>(cfg.d_model);
  const double ff = static_cast<double>(cfg.ff_dim), H = static_cast<double>(cfg.num_heads);
  const double B = static_cast<double>(cfg.batch_size), L = static_cast<double>(cfg.num_layer);
  const bool half = plan.lowp();
  MemoryEstimate m;
  m.state_bytes = static_cast<double>(params) * (16.0 + (half ? 2.0 : 0.0));
  const double per_sequence_layer = 10 * S * d + 3 * S * ff + (cfg.flash ? 2 : 3) * H * S * S;
  m.activation_bytes = B * L * per_sequence_layer * (half ? 2.0 : 4.0);
  m.total_bytes = 0.5e9 + m.state_bytes + m.activation_bytes + 3 * B * S * 256 * 4.0;
  return m;
}

namespace {

struct GpuPeak {
  const char* name_part;                         // matched as a substring of the CUDA device name
  double tf32_tflops, bf16_tflops, fp16_tflops;  // dense tensor-core peaks
};

// Vendor datasheet dense peaks (no sparsity). H200 SXM has the H100 SXM compute.
const std::vector<GpuPeak>& gpu_table_() {
  static const std::vector<GpuPeak> table = {
      {"H200", 494.7, 989.4, 989.4},    {"H100 PCIe", 378.0, 756.0, 756.0},
      {"H100", 494.7, 989.4, 989.4},    {"A100", 156.0, 312.0, 312.0},
      {"RTX 4090", 82.6, 165.2, 165.2}, {"RTX A5000", 55.6, 111.1, 111.1},
  };
  return table;
}

// Dense peak of a known GPU for a dtype (float32 means TF32 tensor cores); 0 when unknown.
double gpu_peak_flops(const std::string& device_name, Precision dtype) {
  for (const GpuPeak& g : gpu_table_()) {
    if (device_name.find(g.name_part) == std::string::npos) continue;
    const double t = dtype == Precision::kBFloat16  ? g.bf16_tflops
                     : dtype == Precision::kFloat16 ? g.fp16_tflops
                                                    : g.tf32_tflops;
    return t * 1e12;
  }
  return 0;
}

}  // namespace

PeakFlops resolve_peak_flops(const RunPlan& plan, const std::string& device_name,
                             const GemmProbe& probe) {
  if (plan.cfg.peak_tflops > 0) return {plan.cfg.peak_tflops * 1e12, "flag", "", nullptr};
  if (plan.cuda()) {
    const double peak = gpu_peak_flops(device_name, plan.cfg.dtype);
    if (peak > 0) return {peak, "table:" + device_name, name_of(GemmPath::kCuda), nullptr};
    return {0, "unknown", name_of(GemmPath::kCuda), nullptr};
  }
  // One peak per dtype and machine, whichever route this run takes: the fastest product over
  // every route the probe measured (on an AVX2 CPU bfloat16's is the float32 route's, not
  // LibTorch's reference GEMM's), so MFU says how much of the machine a run uses and every row
  // of a dtype (eager, fused, the peers given it) divides by the same figure. The run's own
  // route's rate stays in the probe (peak_probe) and the profile.
  const RouteRate* best = nullptr;
  for (const RouteRate& r : probe.routes) {
    if (!best || r.peak_flops_per_s > best->peak_flops_per_s) best = &r;
  }
  if (!best) return {0, "unknown", "", nullptr};
  return {best->peak_flops_per_s, "gemm_probe", name_of(best->path), probe.to_json()};
}

}  // namespace trainbench
