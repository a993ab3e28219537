// RunPlan: every decision a run acts on, as types, resolved once from the validated RunConfig
// (app/validate.h) and handed down. Everything below app/ takes the plan, or the part it needs,
// and never reads a choice flag's text: RunConfig keeps the text for config.json and the flag
// table, the plan says what it means here (which device, which model, which dtype, which
// compiled path, which GEMM route, which dropout kernel, which place in a multi-process run).
#pragma once

#include <string>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "trainbench/core/choices.h"
#include "trainbench/core/config.h"

namespace trainbench {

// torchrun's environment: this process's place in a multi-process run (dist/dist.h parses it).
// WORLD_SIZE unset or 1 is the plain single process.
struct DistEnv {
  int rank = 0;              // RANK: 0 .. world_size-1
  int world_size = 1;        // WORLD_SIZE
  int local_rank = 0;        // LOCAL_RANK: the process's index on its machine (its GPU)
  int local_world_size = 1;  // LOCAL_WORLD_SIZE: processes on this machine (shares the cores)
  std::string master_addr = "127.0.0.1";  // MASTER_ADDR: where rank 0 hosts the store
  int master_port = 29500;                // MASTER_PORT
  // TORCHELASTIC_USE_AGENT_STORE=True: torchrun's agent already hosts the store at
  // MASTER_ADDR:MASTER_PORT, so rank 0 joins it as a client too.
  bool agent_store = false;
  int restart_count = 0;  // TORCHELASTIC_RESTART_COUNT: keys of earlier attempts are not ours
  bool distributed() const { return world_size > 1; }
};

// Who decided the plan's GEMM route (summary.json gemm_route.chosen_by, where a probe ran).
enum class RouteChosenBy {
  kOneRoute,         // the run has one route: not --compile fused with bfloat16/float16 on a CPU
  kFlag,             // --lowp_gemm native|float32
  kInstructionSets,  // --lowp_gemm auto before a measurement: the CPU's dot-product instructions
  kMeasurement,      // --lowp_gemm auto after the GEMM probe (app/run_setup.cpp)
};

struct RunPlan {
  RunConfig cfg;  // the flags as given (sizes, steps, files); their text is for the files
  ModelKind model = ModelKind::kHandcraft;
  Precision precision = Precision::kFloat32;
  // The activations' dtype: float32, or bfloat16 / float16 (the parameters stay float32).
  c10::ScalarType compute_dtype = c10::ScalarType::Float;
  CompilePath compile = CompilePath::kNone;
  GemmRoute gemm_route = GemmRoute::kNative;  // never kAuto
  RouteChosenBy gemm_route_by = RouteChosenBy::kOneRoute;
  DropoutImpl dropout = DropoutImpl::kNative;  // never kAuto
  SdpaBackend sdpa_backend = SdpaBackend::kAuto;
  // The run's device: the CPU, or CUDA (the rank's own GPU, LOCAL_RANK, in a multi-process run).
  c10::Device device = c10::Device(c10::DeviceType::CPU);
  DistEnv dist;
  DistBackend dist_backend = DistBackend::kGloo;  // never kAuto

  bool cuda() const { return device.is_cuda(); }
  bool lowp() const { return precision != Precision::kFloat32; }
  // --compile fused with bfloat16/float16 on the CPU: the runs with two GEMM routes.
  bool has_gemm_choice() const { return compile == CompilePath::kFused && lowp() && !cuda(); }
  // "cuda" or "cpu", as config.json's "device" says it.
  const char* device_name() const { return cuda() ? "cuda" : "cpu"; }
};

// The plan of a validated config in this process (dist: its place in a multi-process run).
// --device auto takes CUDA where a GPU is visible; --dropout_impl auto the fused kernels' masks
// with --compile fused, the parallel mask for eager handcraft models on the CPU, else
// torch::dropout; --lowp_gemm auto the instruction sets' guess (float32 where the CPU lacks the
// dtype's dot-product instructions), which a run replaces by the GEMM probe's measurement
// (with_measured_route) before the model is built; --dist_backend auto nccl on CUDA, gloo on the
// CPU. A choice flag's text that its table does not name throws ConfigError (validate() has
// named it first).
RunPlan make_plan(const RunConfig& cfg, const DistEnv& dist = DistEnv{});

// The activations' dtype of a precision (autocast's for the 16-bit ones). Here, not in the choice
// table, so that core/choices.h and the torch-free files that include it see no LibTorch header.
c10::ScalarType scalar_type_of(Precision precision);

// The plan with the GEMM route a measurement chose.
RunPlan with_measured_route(RunPlan plan, GemmRoute route);

}  // namespace trainbench
