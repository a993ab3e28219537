// RunPlan: the validated RunConfig with its `auto` choices resolved, once, for this process
// (make_plan, app/validate.h): the device, the dropout kernel, the GEMM route (and who chose it),
// the process group's backend, the place in a multi-process run. The model, dtype, compiled path
// and SDPA backend are the RunConfig's own typed fields (plan.cfg.dtype, ...); nothing is held
// twice.
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
  RunConfig cfg;  // the flags as given, typed; the fields below resolve its `auto` values
  GemmRoute gemm_route = GemmRoute::kNative;  // never kAuto
  RouteChosenBy gemm_route_by = RouteChosenBy::kOneRoute;
  DropoutImpl dropout = DropoutImpl::kNative;  // never kAuto
  bool keep_memory = false;                    // --keep_memory resolved
  // The run's device: the CPU, or CUDA (the rank's own GPU, LOCAL_RANK, in a multi-process run).
  c10::Device device = c10::Device(c10::DeviceType::CPU);
  DistEnv dist;
  DistBackend dist_backend = DistBackend::kGloo;  // never kAuto

  bool cuda() const { return device.is_cuda(); }
  bool lowp() const { return cfg.dtype != Precision::kFloat32; }
  // --compile fused with bfloat16/float16 on the CPU: the runs with two GEMM routes.
  bool has_gemm_choice() const { return cfg.compile == CompilePath::kFused && lowp() && !cuda(); }
  // The fused model's GEMM weights kept in bfloat16/float16 copies that fused Adam writes in its
  // pass (train/fused_adam.h), instead of cast every step; one process only (the gradient
  // all-reduce averages the float32 parameters' gradients).
  bool weight_copies() const {
    return cfg.compile == CompilePath::kFused && lowp() && cfg.fused_adam && !dist.distributed();
  }
  // "cuda" or "cpu", as config.json's "device" says it.
  const char* device_name() const { return cuda() ? "cuda" : "cpu"; }
};

// The activations' dtype of a precision (float32, or bfloat16 / float16 with float32 parameters).
// Here, not in the choice table, so that core/choices.h and the torch-free files that include it
// see no LibTorch header.
inline c10::ScalarType scalar_type_of(Precision precision) {
  switch (precision) {
    case Precision::kFloat16:
      return c10::ScalarType::Half;
    case Precision::kBFloat16:
      return c10::ScalarType::BFloat16;
    case Precision::kFloat32:
      break;
  }
  return c10::ScalarType::Float;
}

// The plan with the GEMM route a measurement chose.
inline RunPlan with_measured_route(RunPlan plan, GemmRoute route) {
  plan.gemm_route = route;
  plan.gemm_route_by = RouteChosenBy::kMeasurement;
  return plan;
}

}  // namespace trainbench
