// The GEMM probe: the model's own products in every orientation, on each route of the dtype;
// the route --lowp_gemm auto takes from its rates; the MFU peak of the run's route.
#include <gtest/gtest.h>

#include <cstdlib>

#include "trainbench/app/validate.h"  // make_plan
#include "trainbench/core/cpu_isa.h"
#include "trainbench/measure/flops.h"
#include "trainbench/measure/gemm_probe.h"

namespace trainbench {
namespace {

RunConfig tiny_() {
  RunConfig c;
  c.batch_size = 2;
  c.seq_len = 16;
  c.d_model = 32;
  c.ff_dim = 64;
  c.device = DeviceChoice::kCpu;
  return c;
}

TEST(GemmProbe, TheProductsAreEachWeightsForwardInputAndWeightGradientProducts) {
  const auto p = model_gemm_products(tiny_());
  ASSERT_EQ(p.size(), 9u);
  // qkv [96, 32]: forward [32 rows, 32] x [32, 96]; input gradient [32, 96] x [96, 32]; weight
  // gradient [96, 32 rows] x [32 rows, 32].
  EXPECT_EQ(p[0].what, "qkv forward");
  EXPECT_EQ(p[0].m, 32);
  EXPECT_EQ(p[0].k, 32);
  EXPECT_EQ(p[0].n, 96);
  EXPECT_EQ(p[1].what, "qkv input-grad");
  EXPECT_EQ(p[1].k, 96);
  EXPECT_EQ(p[1].n, 32);
  EXPECT_EQ(p[2].what, "qkv weight-grad");
  EXPECT_EQ(p[2].m, 96);
  EXPECT_EQ(p[2].k, 32);
  EXPECT_EQ(p[2].rows(), 32);
  EXPECT_EQ(p[5].what, "ff_in weight-grad");
  EXPECT_EQ(p[5].m, 64);
  EXPECT_EQ(p[8].what, "ff_out weight-grad");
  EXPECT_EQ(p[8].n, 64);
  // Together they are the block's weight FLOPs of one step: 6 x weights x tokens.
  double flops = 0;
  for (const auto& g : p) flops += 2.0 * g.m * g.k * g.n;
  EXPECT_DOUBLE_EQ(flops, 6.0 * 32 * (3 * 32 * 32 + 2 * 32 * 64));
}

TEST(GemmProbe, LeavesTheSeededRandomStreamAlone) {
  torch::manual_seed(17);
  const torch::Tensor expected = torch::rand({4});
  torch::manual_seed(17);
  EXPECT_GT(probe_gemm(make_plan(tiny_()), 1).routes.at(0).flops_per_s, 0);
  EXPECT_TRUE(torch::equal(torch::rand({4}), expected));
}

// float32 has one route; bfloat16/float16 LibTorch's own path and the float32 route, each over
// every product; the route's rate is their FLOPs over their times, the peak the best product.
TEST(GemmProbe, MeasuresEveryRouteOfTheDtypeOverEveryProduct) {
  RunConfig c = tiny_();
  const GemmProbe f32 = probe_gemm(make_plan(c), 2);
  ASSERT_EQ(f32.routes.size(), 1u);
  EXPECT_EQ(f32.routes[0].path, GemmPath::kMklFloat32);
  EXPECT_FALSE(f32.injected);
  for (const char* dtype : {"bfloat16", "float16"}) {
    c.dtype = choice_of<Precision>("dtype", dtype);
    const GemmProbe p = probe_gemm(make_plan(c), 2);
    ASSERT_EQ(p.routes.size(), 2u) << dtype;
    EXPECT_EQ(p.routes[0].path, libtorch_gemm_path(effective_isa(), c.dtype));
    EXPECT_EQ(p.routes[0].route, GemmRoute::kNative);
    EXPECT_EQ(p.routes[1].path, GemmPath::kFloat32Rounded);
    EXPECT_EQ(p.find(GemmRoute::kFloat32), &p.routes[1]);
    EXPECT_EQ(p.find(GemmRoute::kNative), &p.routes[0]);
    EXPECT_EQ(f32.find(GemmRoute::kFloat32), nullptr);
    for (const RouteRate& r : p.routes) {
      ASSERT_EQ(r.products.size(), 9u);
      double flops = 0, seconds = 0, best = 0;
      for (const auto& g : r.products) {
        const double f = 2.0 * g["m"].get<double>() * g["k"].get<double>() * g["n"].get<double>();
        flops += f;
        seconds += f / g["flops_per_s"].get<double>();
        best = std::max(best, g["flops_per_s"].get<double>());
      }
      EXPECT_NEAR(r.flops_per_s, flops / seconds, 1e-6 * r.flops_per_s);
      EXPECT_DOUBLE_EQ(r.peak_flops_per_s, best);
      EXPECT_LE(r.rows, 32);  // never more rows than batch * seq
      EXPECT_LE(r.flops_per_s, r.peak_flops_per_s);
      // The GEMMs alone are timed inside the route's calls: never slower than the calls.
      EXPECT_GE(r.gemm_flops_per_s, r.flops_per_s) << name_of(r.path);
    }
    const nlohmann::json j = p.to_json();
    EXPECT_EQ(j["dtype"], dtype);
    EXPECT_EQ(j["routes"][1]["gemm_path"], "float32_rounded");
    EXPECT_DOUBLE_EQ(j["routes"][1]["gemm_flops_per_s"].get<double>(),
                     p.routes[1].gemm_flops_per_s);
    EXPECT_GE(j["seconds"].get<double>(), 0);
  }
}

GemmProbe two_routes_(double native, double rounded) {
  GemmProbe p;
  p.dtype = Precision::kBFloat16;
  p.routes.resize(2);
  p.routes[0].route = GemmRoute::kNative;
  p.routes[0].path = GemmPath::kOnednnNative;
  p.routes[0].flops_per_s = native;
  p.routes[0].peak_flops_per_s = 2 * native;
  p.routes[1].route = GemmRoute::kFloat32;
  p.routes[1].path = GemmPath::kFloat32Rounded;
  p.routes[1].flops_per_s = rounded;
  p.routes[1].peak_flops_per_s = 2 * rounded;
  return p;
}

// The faster measured route wins, whatever the instruction list says (a CPU with AVX512-BF16
// whose bfloat16 GEMM is slower than float32 takes the float32 route).
TEST(GemmProbe, AutoTakesTheFasterMeasuredRouteAndSaysBothRates) {
  const RouteChoice slow_native = choose_route(two_routes_(150e9, 270e9));
  EXPECT_EQ(slow_native.route, GemmRoute::kFloat32);
  EXPECT_EQ(slow_native.reason,
            "float32 GEMMs of bfloat16 operands measured 270.0 GFLOP/s against 150.0 for "
            "LibTorch's bfloat16 GEMM (onednn_native) at this model's GEMM shapes (1.80x)");
  const RouteChoice fast_native = choose_route(two_routes_(600e9, 250e9));
  EXPECT_EQ(fast_native.route, GemmRoute::kNative);
  EXPECT_EQ(fast_native.reason,
            "LibTorch's bfloat16 GEMM (onednn_native) measured 600.0 GFLOP/s against 250.0 for "
            "float32 GEMMs of bfloat16 operands at this model's GEMM shapes (2.40x)");
  GemmProbe f32;
  f32.routes.resize(1);
  EXPECT_EQ(choose_route(f32).route, GemmRoute::kNative);
}

// MFU's peak is one per dtype and machine: the fastest product over every route measured,
// whichever route the run takes (eager, fused on either route), so a dtype's rows share it.
TEST(GemmProbe, ThePeakIsTheFastestRoutesBestProductForEveryRoute) {
  RunConfig c = tiny_();
  c.dtype = Precision::kBFloat16;
  c.compile = CompilePath::kFused;
  const GemmProbe p = two_routes_(150e9, 270e9);  // peaks: native 300e9, float32 route 540e9
  for (const GemmRoute route : {GemmRoute::kFloat32, GemmRoute::kNative}) {
    c.lowp_gemm = route;
    const PeakFlops peak = resolve_peak_flops(make_plan(c), "cpu", p);
    EXPECT_EQ(peak.source, "gemm_probe");
    EXPECT_EQ(peak.gemm_path, "float32_rounded");
    EXPECT_DOUBLE_EQ(peak.flops_per_s, 540e9);
    EXPECT_EQ(peak.probe["routes"].size(), 2u);
  }
  c.compile = CompilePath::kNone;  // an eager run (LibTorch's own GEMM) takes the same peak
  c.lowp_gemm = GemmRoute::kAuto;
  EXPECT_DOUBLE_EQ(resolve_peak_flops(make_plan(c), "cpu", p).flops_per_s, 540e9);
  // Where the native route is the faster (AMX), it sets the peak for every run.
  const GemmProbe amx = two_routes_(600e9, 250e9);
  const PeakFlops native = resolve_peak_flops(make_plan(c), "cpu", amx);
  EXPECT_EQ(native.gemm_path, "onednn_native");
  EXPECT_DOUBLE_EQ(native.flops_per_s, 1200e9);
  c.peak_tflops = 2;
  EXPECT_EQ(resolve_peak_flops(make_plan(c), "cpu", p).source, "flag");
  EXPECT_EQ(resolve_peak_flops(make_plan(c), "cpu", GemmProbe{}).flops_per_s, 2e12);
  c.peak_tflops = 0;
  EXPECT_EQ(resolve_peak_flops(make_plan(c), "cpu", GemmProbe{}).source, "unknown");
}

TEST(GemmProbe, InjectedRatesReplaceTheMeasuredOnesByName) {
  RunConfig c = tiny_();
  c.dtype = Precision::kBFloat16;
  ::setenv("TB_TEST_GEMM_RATES", "native=5e9,float32_rounded=7e9", 1);
  const GemmProbe p = probe_gemm(make_plan(c), 1);
  ::unsetenv("TB_TEST_GEMM_RATES");
  EXPECT_TRUE(p.injected);
  EXPECT_EQ(p.to_json()["injected"], true);
  EXPECT_DOUBLE_EQ(p.routes[0].flops_per_s, 5e9);
  EXPECT_DOUBLE_EQ(p.routes[1].flops_per_s, 7e9);
  EXPECT_DOUBLE_EQ(p.routes[1].gemm_flops_per_s, 7e9);
  EXPECT_EQ(choose_route(p).route, GemmRoute::kFloat32);
}

}  // namespace
}  // namespace trainbench
