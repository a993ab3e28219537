// The GEMM probe and --lowp_gemm auto's choice (see gemm_probe.h).
#include "trainbench/measure/gemm_probe.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/types.h>

namespace trainbench {
namespace {

using clock_ = std::chrono::steady_clock;
constexpr int64_t kMaxRows = 4096;  // the rate is flat beyond this on every CPU measured

double seconds_since_(clock_::time_point t0) {
  return std::chrono::duration<double>(clock_::now() - t0).count();
}

// The operands of one product as the step holds them, with `rows` in the batch dimension, and
// the product as the route computes it (model/fused_ops.cpp): forward x [rows, k] against a
// Linear's weight [n, k] read transposed; input gradient dy [rows, k] against the weight [k, n];
// weight gradient dy^T (a transposed view of [rows, m]) against x [rows, n]. On the float32 route
// the weights are held in float32 (rounded once per step), dy is read in float32 once for both
// backward products, and the activations are converted for each product and the outputs
// rounded back: the conversions are part of the route's cost.
struct Operands {
  torch::Tensor a, b;
  bool convert_a = false, convert_b = false, round_out = false;
  c10::ScalarType dtype = torch::kFloat;
};

Operands operands_(const GemmProduct& p, int64_t rows, c10::ScalarType dtype, bool rounded,
                   at::Generator& gen) {
  Operands o;
  o.dtype = dtype;
  const auto held = rounded ? torch::kFloat : dtype;
  switch (p.orientation) {
    case GemmOrientation::kForward:
      o.a = torch::rand({rows, p.k}, gen).to(dtype);
      o.b = torch::rand({p.n, p.k}, gen).to(held).t();
      o.convert_a = o.round_out = rounded;
      break;
    case GemmOrientation::kInputGrad:
      o.a = torch::rand({rows, p.k}, gen).to(dtype);
      o.b = torch::rand({p.k, p.n}, gen).to(held);
      o.convert_a = o.round_out = rounded;
      break;
    case GemmOrientation::kWeightGrad:
      o.a = torch::rand({rows, p.m}, gen).to(held).t();
      o.b = torch::rand({rows, p.n}, gen).to(dtype);
      o.convert_b = rounded;  // the gradient stays float32, as the route's weights
      break;
  }
  return o;
}

// One call of a product as its route makes it: the seconds of the whole call (the route's
// conversions included) and of the GEMM alone (what a profile's GEMM category times).
struct ProductSeconds {
  double call = 0, gemm = 0;
};

ProductSeconds product_(const Operands& o) {
  const auto t0 = clock_::now();
  const torch::Tensor a = o.convert_a ? o.a.to(torch::kFloat) : o.a;
  const torch::Tensor b = o.convert_b ? o.b.to(torch::kFloat) : o.b;
  const auto t1 = clock_::now();
  const torch::Tensor y = torch::mm(a, b);
  const double gemm = seconds_since_(t1);
  if (o.round_out) (void)y.to(o.dtype);
  return {seconds_since_(t0), gemm};
}

// Best seconds of one product on a route (of the whole call and, separately, of its GEMM), and
// the rows it was timed with: the model's own rows (up to kMaxRows), each product called once to
// warm up (oneDNN creates its kernel on the first call) before the timed trials. A reference GEMM
// (1-10 GFLOP/s) is first timed at 64 rows (its warm-up) and gets only as many rows as budget_s
// allows, so its probe stays short.
struct ProductTime {
  ProductSeconds best{1e30, 1e30};
  int64_t rows = 0;
};

ProductTime time_product_(const GemmProduct& p, c10::ScalarType dtype, bool rounded, bool slow_path,
                          int trials, double budget_s, at::Generator& gen) {
  const int64_t full = std::min(p.rows(), kMaxRows);
  ProductTime t;
  t.rows = full;
  if (slow_path) {
    t.rows = std::min<int64_t>(full, 64);
    const double small_s = product_(operands_(p, t.rows, dtype, rounded, gen)).call;
    const double full_s =
        std::max(1e-7, small_s) * static_cast<double>(full) / static_cast<double>(t.rows);
    t.rows = full_s <= budget_s ? full
                                : std::clamp<int64_t>(
                                      static_cast<int64_t>(full * budget_s / full_s), t.rows, full);
  }
  const Operands o = operands_(p, t.rows, dtype, rounded, gen);
  if (!slow_path) product_(o);  // the reference loops need no warm-up at a new shape
  for (int i = 0; i < trials; ++i) {
    const ProductSeconds s = product_(o);
    // Each best on its own: the GEMM of a trial never takes longer than the trial's whole call,
    // so the GEMMs' best is never slower than the calls' best.
    t.best.call = std::min(t.best.call, std::max(1e-9, s.call));
    t.best.gemm = std::min(t.best.gemm, std::max(1e-9, s.gemm));
  }
  return t;
}

RouteRate measure_route_(const RunPlan& plan, GemmRoute route, int trials, double budget_s) {
  torch::NoGradGuard no_grad;
  // A private generator: the probe must not move the run's seeded random stream.
  at::Generator gen = at::detail::createCPUGenerator(0);
  const c10::ScalarType dtype = scalar_type_of(plan.cfg.dtype);
  const bool rounded = route == GemmRoute::kFloat32;
  RouteRate r;
  r.route = route;
  r.path = gemm_path_of(route, plan.cfg.dtype, effective_isa(), false);
  const bool slow = r.path == GemmPath::kReference;
  r.products = nlohmann::json::array();
  double flops = 0, seconds = 0, gemm_seconds = 0;
  for (const GemmProduct& p : model_gemm_products(plan.cfg)) {
    const ProductTime t = time_product_(p, dtype, rounded, slow, slow ? 2 : trials, budget_s, gen);
    const double s = t.best.call;
    const int64_t rows = t.rows;
    const bool weight_grad = p.orientation == GemmOrientation::kWeightGrad;
    const double f = 2.0 * static_cast<double>(p.m * p.k * p.n / p.rows() * rows);
    flops += f;
    seconds += s;
    gemm_seconds += t.best.gemm;
    r.peak_flops_per_s = std::max(r.peak_flops_per_s, f / s);
    r.rows = std::max(r.rows, rows);
    r.products.push_back({{"what", p.what},
                          {"m", weight_grad ? p.m : rows},
                          {"k", weight_grad ? rows : p.k},
                          {"n", p.n},
                          {"flops_per_s", f / s}});
  }
  r.flops_per_s = seconds > 0 ? flops / seconds : 0;
  r.gemm_flops_per_s = gemm_seconds > 0 ? flops / gemm_seconds : 0;
  return r;
}

// TB_TEST_GEMM_RATES: "path=rate,path=rate" replaces those routes' rates.
bool inject_rates_(GemmProbe& probe) {
  const char* env = std::getenv("TB_TEST_GEMM_RATES");
  if (!env || !*env) return false;
  std::stringstream in(env);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = item.substr(0, eq);
    const double rate = std::atof(item.c_str() + eq + 1);
    for (RouteRate& r : probe.routes) {
      // "native": LibTorch's own path for the dtype, whichever it is on this CPU.
      if (name == name_of(r.path) || name == name_of(r.route)) {
        r.flops_per_s = r.peak_flops_per_s = r.gemm_flops_per_s = rate;
      }
    }
  }
  return true;
}

std::string gflops_(double flops_per_s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", flops_per_s / 1e9);
  return buf;
}

}  // namespace

std::vector<GemmProduct> model_gemm_products(const RunConfig& cfg) {
  const int64_t rows = cfg.batch_size * cfg.seq_len, d = cfg.d_model, ff = cfg.ff_dim;
  struct Weight {
    const char* name;
    int64_t in, out;
  };
  const Weight weights[] = {{"qkv", d, 3 * d}, {"ff_in", d, ff}, {"ff_out", ff, d}};
  std::vector<GemmProduct> out;
  for (const Weight& w : weights) {
    const std::string name = w.name;
    out.push_back({rows, w.in, w.out, GemmOrientation::kForward, name + " forward"});       // x w^T
    out.push_back({rows, w.out, w.in, GemmOrientation::kInputGrad, name + " input-grad"});  // dy w
    out.push_back({w.out, rows, w.in, GemmOrientation::kWeightGrad, name + " weight-grad"});
  }
  return out;
}

const RouteRate* GemmProbe::find(GemmRoute route) const {
  for (const RouteRate& r : routes) {
    if (r.route == route) return &r;
  }
  return nullptr;
}

nlohmann::json GemmProbe::to_json() const {
  nlohmann::json rs = nlohmann::json::array();
  for (const RouteRate& r : routes) {
    rs.push_back({{"gemm_path", name_of(r.path)},
                  {"flops_per_s", r.flops_per_s},
                  {"gemm_flops_per_s", r.gemm_flops_per_s},
                  {"peak_flops_per_s", r.peak_flops_per_s},
                  {"rows", r.rows},
                  {"products", r.products}});
  }
  return {{"dtype", name_of(dtype)},
          {"trials", trials},
          {"seconds", seconds},
          {"injected", injected},
          {"routes", rs}};
}

GemmProbe probe_gemm(const RunPlan& plan, int trials, double product_budget_s) {
  const auto t0 = clock_::now();
  GemmProbe probe;
  probe.dtype = plan.cfg.dtype;
  probe.trials = trials;
  probe.routes.push_back(measure_route_(plan, GemmRoute::kNative, trials, product_budget_s));
  if (plan.lowp()) {
    probe.routes.push_back(measure_route_(plan, GemmRoute::kFloat32, trials, product_budget_s));
  }
  probe.injected = inject_rates_(probe);
  probe.seconds = seconds_since_(t0);
  return probe;
}

RouteChoice choose_route(const GemmProbe& probe) {
  RouteChoice c;
  const RouteRate* rounded = probe.find(GemmRoute::kFloat32);
  if (probe.empty() || !rounded) {
    c.reason = "float32 has one route";
    return c;
  }
  const RouteRate& own = probe.routes.front();
  const std::string dtype = name_of(probe.dtype);
  const std::string theirs = "LibTorch's " + dtype + " GEMM (" + name_of(own.path) + ")";
  char ratio[32];
  if (rounded->flops_per_s > own.flops_per_s) {
    std::snprintf(ratio, sizeof(ratio), "%.2fx",
                  own.flops_per_s > 0 ? rounded->flops_per_s / own.flops_per_s : 0.0);
    c.route = GemmRoute::kFloat32;
    c.reason = "float32 GEMMs of " + dtype + " operands measured " + gflops_(rounded->flops_per_s) +
               " GFLOP/s against " + gflops_(own.flops_per_s) + " for " + theirs +
               " at this model's GEMM shapes (" + ratio + ")";
  } else {
    std::snprintf(ratio, sizeof(ratio), "%.2fx",
                  rounded->flops_per_s > 0 ? own.flops_per_s / rounded->flops_per_s : 0.0);
    c.route = GemmRoute::kNative;
    c.reason = theirs + " measured " + gflops_(own.flops_per_s) + " GFLOP/s against " +
               gflops_(rounded->flops_per_s) + " for float32 GEMMs of " + dtype +
               " operands at this model's GEMM shapes (" + ratio + ")";
  }
  return c;
}

}  // namespace trainbench
