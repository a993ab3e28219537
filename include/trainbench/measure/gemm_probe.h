// The GEMM probe of a CPU run: the model's own GEMM products (each weight's forward,
// input-gradient and weight-gradient products, as the step calls them) timed on every route the
// run's dtype can take. One measurement serves three things: --lowp_gemm auto's route (the
// faster one, never the instruction list), MFU's peak (the run's route) and the eager warning's
// slowdown. The instruction-set rules (core/cpu_isa.h) only say which path LibTorch takes and
// how short a reference GEMM's probe must be.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainbench/core/cpu_isa.h"
#include "trainbench/core/plan.h"

namespace trainbench {

// One product of the model: [m, k] x [k, n], named for what the step computes with it.
enum class GemmOrientation { kForward, kInputGrad, kWeightGrad };
struct GemmProduct {
  int64_t m = 0, k = 0, n = 0;
  GemmOrientation orientation = GemmOrientation::kForward;
  std::string what;  // "qkv forward", "ff_in input-grad", "ff_out weight-grad", ...
  // The dimension that grows with the batch (rows = batch * seq): m, or k for a weight gradient.
  int64_t rows() const { return orientation == GemmOrientation::kWeightGrad ? k : m; }
};
// Per block weight (qkv [3d, d], ff_in [ff, d], ff_out [d, ff]) with rows = batch * seq:
// forward [rows, in] x [in, out]; input gradient [rows, out] x [out, in]; weight gradient
// [out, rows] x [rows, in]. These carry most of the step's FLOPs.
std::vector<GemmProduct> model_gemm_products(const RunConfig& cfg);

// One route's measurement.
struct RouteRate {
  GemmRoute route = GemmRoute::kNative;
  GemmPath path = GemmPath::kMklFloat32;  // how that route runs on this CPU, for the files
  double flops_per_s = 0;       // the products together: their FLOPs over their best times
  double peak_flops_per_s = 0;  // the fastest single product
  // The GEMMs alone, without the route's conversions (the float32 route's operand conversions
  // and output rounding; on LibTorch's own path all but flops_per_s): the rate a profile's
  // GEMM category is bounded by, the conversions being counted as pointwise memory traffic
  // (measure/step_bounds.h).
  double gemm_flops_per_s = 0;
  int64_t rows = 0;         // rows the products were timed with (cut for a slow path)
  nlohmann::json products;  // [{what, m, k, n, flops_per_s}]
};

struct GemmProbe {
  Precision dtype = Precision::kFloat32;
  // The native route (LibTorch's own path for the dtype) first; for bfloat16/float16 also the
  // float32 route (float32 GEMMs of operands rounded to the dtype, with the conversions the
  // route pays).
  std::vector<RouteRate> routes;
  int trials = 0;
  double seconds = 0;     // what the probe cost
  bool injected = false;  // rates from TB_TEST_GEMM_RATES, not measured (tests)
  bool empty() const { return routes.empty(); }
  const RouteRate* find(GemmRoute route) const;  // nullptr when not measured
  nlohmann::json to_json() const;
};

// Times the routes of the plan's dtype on the CPU: every product a warm-up call, then the best of
// `trials` (a shared machine's load only ever slows a trial down), at the model's own rows
// (up to 4096; LibTorch's reference GEMM gets as many as `product_budget_s` allows, at least
// 64, and 2 trials).
// The environment variable TB_TEST_GEMM_RATES ("PATH=FLOP/s,...", path names as gemm_path_name,
// or a route's name, "native" | "float32") replaces those routes' measured rates, for
// tests of the choice (the probe's JSON then says "injected": true).
GemmProbe probe_gemm(const RunPlan& plan, int trials = 3, double product_budget_s = 0.04);

// --lowp_gemm auto's decision from a probe: the float32 route where it measured faster than
// LibTorch's own GEMM in the dtype, else native; reason says it in words with both rates.
struct RouteChoice {
  GemmRoute route = GemmRoute::kNative;
  std::string reason;
};
RouteChoice choose_route(const GemmProbe& probe);

}  // namespace trainbench
