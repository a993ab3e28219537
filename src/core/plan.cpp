// make_plan: the choice flags resolved once into the types the run acts on (see plan.h).
#include "trainbench/core/plan.h"

#include <torch/cuda.h>

#include "trainbench/core/cpu_isa.h"

namespace trainbench {
namespace {

DropoutImpl resolve_dropout_(const RunPlan& p, DropoutImpl given) {
  if (given != DropoutImpl::kAuto) return given;
  if (p.compile == CompilePath::kFused) return DropoutImpl::kFused;  // their own masks
  const bool eager_handcraft = p.model == ModelKind::kHandcraft && p.compile == CompilePath::kNone;
  return eager_handcraft && !p.cuda() ? DropoutImpl::kParallel : DropoutImpl::kNative;
}

}  // namespace

RunPlan make_plan(const RunConfig& cfg, const DistEnv& dist) {
  RunPlan p;
  p.cfg = cfg;
  p.dist = dist;
  p.model = choice_of<ModelKind>("model", cfg.model);
  p.precision = choice_of<Precision>("dtype", cfg.dtype);
  p.compute_dtype = scalar_type_of(p.precision);
  p.compile = choice_of<CompilePath>("compile", cfg.compile);
  p.sdpa_backend = choice_of<SdpaBackend>("sdpa_backend", cfg.sdpa_backend);
  const DeviceChoice device = choice_of<DeviceChoice>("device", cfg.device);
  const bool cuda = device == DeviceChoice::kCuda ||
                    (device == DeviceChoice::kAuto && torch::cuda::is_available());
  p.device = !cuda ? c10::Device(c10::DeviceType::CPU)
             : dist.distributed()
                 ? c10::Device(c10::DeviceType::CUDA, static_cast<int8_t>(dist.local_rank))
                 : c10::Device(c10::DeviceType::CUDA);
  p.dropout = resolve_dropout_(p, choice_of<DropoutImpl>("dropout_impl", cfg.dropout_impl));
  const GemmRoute route = choice_of<GemmRoute>("lowp_gemm", cfg.lowp_gemm);
  if (!p.has_gemm_choice()) {
    p.gemm_route = GemmRoute::kNative;
    p.gemm_route_by = RouteChosenBy::kOneRoute;
  } else if (route != GemmRoute::kAuto) {
    p.gemm_route = route;
    p.gemm_route_by = RouteChosenBy::kFlag;
  } else {
    p.gemm_route =
        has_native_gemm(effective_isa(), p.precision) ? GemmRoute::kNative : GemmRoute::kFloat32;
    p.gemm_route_by = RouteChosenBy::kInstructionSets;
  }
  const DistBackend backend = choice_of<DistBackend>("dist_backend", cfg.dist_backend);
  p.dist_backend = backend != DistBackend::kAuto ? backend
                   : p.cuda()                    ? DistBackend::kNccl
                                                 : DistBackend::kGloo;
  return p;
}

c10::ScalarType scalar_type_of(Precision precision) {
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

RunPlan with_measured_route(RunPlan plan, GemmRoute route) {
  plan.gemm_route = route;
  plan.gemm_route_by = RouteChosenBy::kMeasurement;
  return plan;
}

}  // namespace trainbench
