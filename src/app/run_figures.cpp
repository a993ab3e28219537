// Pieces of a run that need no run state (see run_figures.h).
#include "trainbench/app/run_figures.h"

#include <sys/resource.h>

#include <cmath>
#include <cstdio>

#include "trainbench/app/run_setup.h"
#include "trainbench/core/cpu_isa.h"
#include "trainbench/core/log.h"
#include "trainbench/kernels/fused_kernels.h"
#include "trainbench/measure/flops.h"
#include "trainbench/measure/step_bounds.h"
#include "trainbench/report/env_info.h"

#ifdef TB_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace trainbench {

int64_t peak_memory_bytes(const torch::Device& device) {
#ifdef TB_WITH_CUDA
  if (device.is_cuda()) {
    const auto stats =
        c10::cuda::CUDACachingAllocator::getDeviceStats(device.has_index() ? device.index() : 0);
    return stats.allocated_bytes[0].peak;  // aggregate pool
  }
#endif
  (void)device;
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;  // peak RSS of the process
}

void warn_about_setup(int threads, int local_world) {
  if (build_type() != "Release") {
    log_warn("***WARNING*** bench was built as " + build_type() +
             "; timings are not representative (configure with -DCMAKE_BUILD_TYPE=Release)");
  }
  if (threads * local_world < available_cores()) {
    log_warn("using " + std::to_string(threads * local_world) + " of " +
             std::to_string(available_cores()) + " available cores (--threads" +
             (local_world > 1 ? " per process" : "") + ")");
  }
}

std::string warn_about_fused_flash(const RunPlan& plan) {
  const RunConfig& c = plan.cfg;
  if (plan.cuda() || c.compile != CompilePath::kFused || !c.flash || c.seq_len >= 1024) return "";
  const std::string line =
      "--flash 1 with --compile fused runs LibTorch's CPU flash kernel, measured slower than the "
      "fused naive attention (--flash 0) below seq_len 1024: at 8 layers, d_model 512, seq_len "
      "256, batch 8 its seq/s was 0.63-0.87x in bfloat16 and 0.80-1.04x in float32 on the CPUs "
      "measured, about even at 1024 (docs/MODELS.md); it keeps no [B, H, S, S] scores";
  log_warn(line);
  return line;
}

nlohmann::json gemm_paths(const RunPlan& plan) {
  const CpuIsa isa = effective_isa();
  const bool cuda = plan.cuda();
  const char* lib = name_of(gemm_path_of(GemmRoute::kNative, plan.cfg.dtype, isa, cuda));
  const char* model = name_of(gemm_path_of(plan.gemm_route, plan.cfg.dtype, isa, cuda));
  return {{"dtype", name_of(plan.cfg.dtype)},
          {"model_gemms", model},
          {"attention", model},
          {"libtorch", lib},
          {"native_gemm", cuda || has_native_gemm(isa, plan.cfg.dtype)},
          {"cpu_isa", isa_names(isa)}};
}

std::string warn_about_lowp_gemm(const RunPlan& plan, const nlohmann::json& paths,
                                 const GemmProbe& probe) {
  const std::string path = paths.at("model_gemms");
  const RouteRate* rounded = probe.find(GemmRoute::kFloat32);
  if (plan.gemm_route == GemmRoute::kFloat32 || !rounded || probe.empty()) return "";
  const double own = probe.routes.front().flops_per_s;
  const double slowdown = own > 0 ? rounded->flops_per_s / own : 0.0;
  const bool emulated =
      path == name_of(GemmPath::kReference) || path == name_of(GemmPath::kOnednnEmulated);
  // A native GEMM within 10% of the float32 route is no reason to warn.
  if (!emulated && slowdown <= 1.1) return "";
  char ratio[32];
  std::snprintf(ratio, sizeof(ratio), "%.1fx", slowdown);
  const bool fused = plan.cfg.compile == CompilePath::kFused;
  const std::string dtype = name_of(plan.cfg.dtype);
  const std::string what = emulated
                               ? dtype + " has no native GEMM on this CPU (it lacks " +
                                     native_gemm_needs(plan.cfg.dtype) + "): LibTorch's " +
                                     (path == name_of(GemmPath::kReference)
                                          ? std::string("reference GEMM (one thread)")
                                          : std::string("oneDNN GEMM (emulated through float32)"))
                               : dtype + "'s native GEMM on this CPU (LibTorch's " + path + ")";
  const std::string line =
      what + " took " + ratio + " the time of float32 GEMMs of " + dtype +
      " operands in a probe at this model's GEMM shapes; for speed use " +
      (fused ? "--lowp_gemm auto|float32 (float32 GEMMs of " + dtype + " operands)"
             : "--compile fused (float32 GEMMs of " + dtype + " operands where faster)") +
      " or --dtype float32";
  log_warn(line);
  return line;
}

nlohmann::json profile_bounds(const RunSetup& setup, const nlohmann::json& ms_per_step,
                              const torch::Device& device) {
  const std::string path = setup.gemm_paths.value("model_gemms", std::string());
  // The route's GEMMs alone: the float32 route's conversions are pointwise work (step_work).
  // No probe (a GPU, or --peak_tflops on a float32 run): the peak.
  const RouteRate* route = setup.probe.find(setup.plan.gemm_route);
  const double gemm_rate = route ? route->gemm_flops_per_s : setup.peak.flops_per_s;
  const char* what = route && route->route == GemmRoute::kFloat32
                         ? ", the float32 GEMMs without the conversions"
                         : "";
  const double bandwidth = memory_bandwidth_probe(device);
  char line[200];
  std::snprintf(line, sizeof(line),
                "profile bounds: GEMMs at %.1f GFLOP/s (%s%s), memory at %.1f GB/s (triad probe)",
                gemm_rate / 1e9, path.c_str(), what, bandwidth / 1e9);
  log_info(line);
  return step_bounds(ms_per_step, step_work(setup.plan, setup.params), gemm_rate, bandwidth);
}

void add_probe_rates(nlohmann::json& profile, const RunSetup& setup) {
  const RouteRate* route = setup.probe.find(setup.plan.gemm_route);
  if (route == nullptr || !profile.contains("gemm_products")) return;
  for (nlohmann::json& row : profile["gemm_products"]) {
    // Products of one shape (the FF input's gradient and the FF output's forward, at ff = 4 d
    // and seq * batch = 4 d) are one row: their names together, the first one's rate.
    std::string what;
    for (const nlohmann::json& p : route->products) {
      if (row.value("batch", 1) == 1 && p.value("m", 0) == row.value("m", -1) &&
          p.value("k", 0) == row.value("k", -1) && p.value("n", 0) == row.value("n", -1)) {
        if (what.empty()) row["probe_flops_per_s"] = p["flops_per_s"];
        what += (what.empty() ? "" : " / ") + p.value("what", std::string());
      }
    }
    if (!what.empty()) row["probe_what"] = what;
  }
}

SpeedJudgement judge_speed(const SampleSummary& stats, const std::vector<double>& step_ms,
                           const std::vector<StepInterference>& interference, const PeakFlops& peak,
                           double flops_per_step, bool warn) {
  SpeedJudgement j;
  if (stats.count == 0) return j;
  j.achieved_flops_per_s = flops_per_step * 1e3 / stats.median;
  if (peak.flops_per_s > 0) {
    const double mfu = j.achieved_flops_per_s / peak.flops_per_s;
    j.peak_unreliable = mfu > 1.0;
    if (!j.peak_unreliable) j.mfu = mfu;
  }
  std::vector<double> step_s;
  for (double ms : step_ms) step_s.push_back(ms / 1e3);
  j.noise = noise_summary(step_s, interference, online_cpus(), proc_stat_tick_s());
  if (!warn) return j;
  if (j.peak_unreliable) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "%.1f GFLOP/s, above the peak of %.1f GFLOP/s",
                  j.achieved_flops_per_s / 1e9, peak.flops_per_s / 1e9);
    log_warn("MFU not shown: the run's model FLOP rate (" + std::string(buf) + " from " +
             peak.source + ") exceeds its peak, so the peak is unreliable (summary.json " +
             "peak_unreliable); give the machine's peak with --peak_tflops");
  }
  const std::string unstable = noise_warning(j.noise);
  if (!unstable.empty()) log_warn(unstable);
  return j;
}

nlohmann::json dist_summary(DistContext& dist, const GradSync& sync, LanguageModel& model,
                            const SampleSummary& stats, const std::vector<double>& comm_ms) {
  const int world = dist.world_size();
  const SampleSummary comm = summarize(comm_ms);
  double comm_total_s = 0;
  for (double ms : comm_ms) comm_total_s += ms / 1e3;
  torch::Tensor per_rank = torch::zeros({world, 3}, torch::kFloat64);
  per_rank[dist.rank()][0] = stats.median;
  per_rank[dist.rank()][1] = comm.median;
  per_rank[dist.rank()][2] = comm_total_s;
  dist.allreduce({per_rank});
  const auto fp = static_cast<int64_t>(parameter_fingerprint(model.parameters()));
  torch::Tensor lo = torch::full({1}, fp, torch::kInt64), hi = lo.clone();
  dist.allreduce({lo}, ReduceOp::kMin);
  dist.allreduce({hi}, ReduceOp::kMax);
  nlohmann::json j;
  std::vector<double> step_ms, wait_ms, wait_s;
  for (int r = 0; r < world; ++r) {
    step_ms.push_back(per_rank[r][0].item<double>());
    wait_ms.push_back(per_rank[r][1].item<double>());
    wait_s.push_back(per_rank[r][2].item<double>());
  }
  j["per_rank_step_time_ms"] = step_ms;
  j["per_rank_communication_ms"] = wait_ms;
  j["per_rank_communication_seconds"] = wait_s;
  // Exposed communication: the wait for the all-reduces after backward (overlapped transfer
  // time is hidden in the backward pass and not counted).
  j["communication_ms"] = comm.median;
  j["communication_share"] = stats.median > 0 ? comm.median / stats.median : 0.0;
  j["grad_buckets"] = sync.num_buckets();
  j["replicas_identical"] = lo.item<int64_t>() == hi.item<int64_t>();
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(fp));
  j["param_fingerprint"] = hex;
  return j;
}

nlohmann::json fairness_manifest(const RunSetup& setup, int threads, double first_loss) {
  const RunPlan& plan = setup.plan;
  const RunConfig& c = plan.cfg;
  const std::string dtype = name_of(c.dtype);
  std::string compute = dtype;
  if (c.compile == CompilePath::kFused) {
    compute = "fused: " + kernels::format_name(kernels::run_format(c.dtype, plan.gemm_route));
  } else if (plan.lowp()) {
    compute = "autocast " + dtype;
  }
  nlohmann::json tf32 = nullptr;
#ifdef TB_WITH_CUDA
  if (plan.cuda()) tf32 = c.dtype == Precision::kFloat32 && at::globalContext().allowTF32CuBLAS();
#endif
  const nlohmann::json& sdpa = setup.config_json.at("sdpa_backend_used");
  std::string attention = c.flash ? "sdpa" : "naive";
  if (c.flash && sdpa.is_string()) attention += " " + sdpa.get<std::string>();
  if (c.compile == CompilePath::kFused)
    attention += c.flash ? " (LibTorch's)" : " (bench's kernels)";
  return {
      {"framework", "libtorch"},
      {"implementation", name_of(c.compile) == std::string("none") ? "eager" : name_of(c.compile)},
      {"compile_options", c.compile == CompilePath::kFused
                              ? "gemm route " + std::string(name_of(plan.gemm_route))
                              : ""},
      {"tf32", tf32},
      {"compute", compute},
      {"master_weights", "float32"},
      {"optimizer", c.fused_adam ? "bench fused Adam (one pass)" : "torch::optim::Adam (for-loop)"},
      {"threads", threads},
      {"attention", attention},
      {"data_in_timer", true},
      {"params", setup.params},
      {"first_loss", std::isfinite(first_loss) ? nlohmann::json(first_loss) : nlohmann::json()}};
}

}  // namespace trainbench
