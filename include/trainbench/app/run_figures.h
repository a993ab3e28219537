// The figures and warnings of a run that need no run state: the process's peak memory, the
// GEMM paths, the speed judgement (MFU, noise), the multi-process part of summary.json and the
// set-up warnings.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>
#include <nlohmann/json.hpp>

#include "trainbench/dist/dist.h"
#include "trainbench/dist/grad_sync.h"
#include "trainbench/measure/cpu_noise.h"
#include "trainbench/measure/flops.h"
#include "trainbench/measure/gemm_probe.h"
#include "trainbench/measure/stats.h"
#include "trainbench/model/model.h"

namespace trainbench {

// Peak memory of the run: the CUDA caching allocator's peak on a GPU, else the peak RSS.
int64_t peak_memory_bytes(const torch::Device& device);

// Warnings about the set-up (a non-Release build, cores left idle).
void warn_about_setup(int threads, int local_world);

// One warning line when the run takes the fused path with flash attention on the CPU at a
// sequence length where the fused naive attention measured faster (the figures in the line);
// returns it ("" when none applies).
std::string warn_about_fused_flash(const RunPlan& plan);

// Which GEMM path each part of the step takes for the run's dtype (env.json "gemm_path"):
// {"dtype", "model_gemms" (the Linear and head GEMMs), "attention" (scores and values, or the
// flash kernel's blocks), "libtorch" (LibTorch's own path for the dtype on this CPU), "cpu_isa"
// (the instruction sets they were chosen from, after ONEDNN_MAX_CPU_ISA), "native_gemm"}.
nlohmann::json gemm_paths(const RunPlan& plan);

// One warning line when the run's GEMMs in bfloat16/float16 take LibTorch's own path and that
// path is slow on this CPU: a reference or emulated GEMM (the missing instructions named), or a
// native one that the probe measured slower than float32 GEMMs of the same operands; with the
// measured slowdown and the way out. Returns the line ("" when none applies).
std::string warn_about_lowp_gemm(const RunPlan& plan, const nlohmann::json& paths,
                                 const GemmProbe& probe);

// --profile_steps' bounds (measure/step_bounds.h) for this run: its work by category at the
// probe's rate for the run's GEMM route (or the peak where no probe ran) and a bandwidth
// measured now (about 0.2 s, logged). Null where neither rate is known.
struct RunSetup;
nlohmann::json profile_bounds(const RunSetup& setup, const nlohmann::json& ms_per_step,
                              const torch::Device& device);
// Beside each of the profile's GEMM products (profile["gemm_products"], measure/profile.h) the
// GEMM probe's rate for the same product on the run's route (probe_flops_per_s, probe_what),
// so that the in-step rate of each product reads against the probe's; unchanged where no probe
// ran or no probe product has that shape (the attention's batched products).
void add_probe_rates(nlohmann::json& profile, const RunSetup& setup);

// The run's fairness manifest (summary.json "manifest"; the peers write the same keys): what
// makes a row comparable with another framework's. {framework ("libtorch"), implementation
// (eager | torchscript | fused), compile_options, tf32 (null off CUDA), compute (float32,
// "autocast DTYPE" for LibTorch's paths, "fused: FORMAT" for bench's kernels), master_weights,
// optimizer, threads, attention, data_in_timer (the next batch is taken inside the step's
// clock, from the loader's prefetch), params, first_loss (the first step's, before any update;
// null for a resumed session)}.
nlohmann::json fairness_manifest(const RunSetup& setup, int threads, double first_loss);

// What the timed steps say about the figures: MFU (null when no peak is known, or when the run's
// model FLOP rate exceeds the peak: then peak_unreliable, since a run cannot beat its machine's
// peak), and cpu_noise.h's summary of the steps' interference. flops_per_step: the model FLOPs
// of one step of one process (global batch * seq_len * flops_per_token / world). warn: print
// the one-line warnings (rank 0).
struct SpeedJudgement {
  nlohmann::json mfu;  // number or null
  bool peak_unreliable = false;
  double achieved_flops_per_s = 0;  // one process's model FLOP rate at the median step
  nlohmann::json noise;             // null without timed steps
};
SpeedJudgement judge_speed(const SampleSummary& stats, const std::vector<double>& step_ms,
                           const std::vector<StepInterference>& interference, const PeakFlops& peak,
                           double flops_per_step, bool warn);

// The multi-process part of summary.json: per-rank step and communication times, gathered with
// one all-reduce, and whether every replica holds the same parameters.
nlohmann::json dist_summary(DistContext& dist, const GradSync& sync, LanguageModel& model,
                            const SampleSummary& stats, const std::vector<double>& comm_ms);

}  // namespace trainbench
