// The bounds of a profiled step: each category's work from the model's shapes (checked by hand
// on a small model), the bound it gives at a GEMM rate and a bandwidth, and their sum.
#include <gtest/gtest.h>

#include "trainbench/app/validate.h"
#include "trainbench/measure/flops.h"
#include "trainbench/measure/step_bounds.h"

namespace trainbench {
namespace {

RunConfig small_() {
  RunConfig c;
  c.batch_size = 2;
  c.seq_len = 4;
  c.d_model = 8;
  c.num_heads = 2;
  c.ff_dim = 16;
  c.num_layer = 1;
  return c;
}

TEST(StepBounds, TheWorkOfEachCategoryIsTheHandCalculation) {
  const RunConfig c = small_();  // N = 8 rows, float32 (e = 4), explicit scores
  const auto w = step_work(make_plan(c), 1000);
  // Matmul weights 3*64 + 64 + 2*8*16 + 8*256 = 2560; 6 * 2560 * 8 + attention 12*1*4*8*8.
  EXPECT_DOUBLE_EQ(w.at("gemm").flops, 122880.0 + 3072.0);
  EXPECT_DOUBLE_EQ(w.at("attention").bytes, 5.0 * 4 * 2 * 2 * 16);  // 5e * B * H * S^2
  EXPECT_DOUBLE_EQ(w.at("attention").flops, 0.0);
  EXPECT_DOUBLE_EQ(w.at("normalisation").bytes, 2.0 * (16 + 20) * 8 * 8);
  EXPECT_DOUBLE_EQ(w.at("pointwise").bytes, 5.0 * 4 * 16 * 8);
  // float32 converts nothing; the attention's heads passes move q, k, v and their gradients
  // (3d each way) and the output and its gradient (d each way): N = 8 rows of 2*24 + 2*8
  // elements, each read and written (4 + 4 bytes).
  const double heads = 8 * (2 * 24 + 2 * 8);
  EXPECT_DOUBLE_EQ(w.at("copy").bytes, heads * 4 * 2);
  EXPECT_DOUBLE_EQ(w.at("loss").bytes, 3.0 * 4 * 256 * 8);
  EXPECT_DOUBLE_EQ(w.at("optimizer").bytes, 28.0 * 1000);
  RunConfig f = c;
  f.flash = true;  // the attention products move to the attention kernel
  const auto wf = step_work(make_plan(f), 1000);
  EXPECT_DOUBLE_EQ(wf.at("gemm").flops, 122880.0);
  EXPECT_DOUBLE_EQ(wf.at("attention").flops, 3072.0);
  EXPECT_DOUBLE_EQ(wf.at("attention").bytes, 0.0);
  EXPECT_DOUBLE_EQ(wf.at("copy").bytes, 0.0);  // flash: no heads passes
  RunConfig b = c;
  b.dtype = Precision::kBFloat16;  // e = 2, the weights rounded each step (6 bytes a parameter)
  EXPECT_DOUBLE_EQ(step_work(make_plan(b), 1000).at("pointwise").bytes, 5.0 * 2 * 16 * 8);
  EXPECT_DOUBLE_EQ(step_work(make_plan(b), 1000).at("copy").bytes, 6000 + heads * 2 * 2);
  EXPECT_DOUBLE_EQ(step_work(make_plan(b), 1000).at("normalisation").bytes, 2.0 * (12 + 16) * 64);
  // The float32 route converts nothing but the weights: the LayerNorm outputs and the logits
  // the GEMMs read are float32 storage (their kernels move 4 bytes an element). The heads
  // passes are float32 on both sides (8 bytes). The FF kernels move the hidden as float32
  // (4 bytes), the softmax the scores.
  RunPlan routed = make_plan(b);
  routed.gemm_route = GemmRoute::kFloat32;
  EXPECT_DOUBLE_EQ(step_work(routed, 1000).at("copy").bytes, 6000 + heads * 8);
  EXPECT_DOUBLE_EQ(step_work(routed, 1000).at("loss").bytes, 3.0 * 4 * 256 * 8);
  EXPECT_DOUBLE_EQ(step_work(make_plan(b), 1000).at("loss").bytes, 3.0 * 2 * 256 * 8);
  EXPECT_DOUBLE_EQ(step_work(routed, 1000).at("normalisation").bytes, 2.0 * (16 + 20) * 64);
  EXPECT_DOUBLE_EQ(step_work(routed, 1000).at("pointwise").bytes, 5.0 * 4 * 16 * 8);
  EXPECT_DOUBLE_EQ(step_work(make_plan(b), 1000).at("attention").bytes, 5.0 * 2 * 2 * 2 * 16);
  EXPECT_DOUBLE_EQ(step_work(routed, 1000).at("attention").bytes, 5.0 * 4 * 2 * 2 * 16);
}

TEST(StepBounds, EachBoundIsItsWorkAtTheRatesAndTheStepsIsTheirSum) {
  const auto w = step_work(make_plan(small_()), 1000);
  const nlohmann::json ms = {{"gemm", 0.5},       {"attention", 0.1}, {"normalisation", 0.2},
                             {"pointwise", 0.1},  {"copy", 0.02},     {"loss", 0.05},
                             {"optimizer", 0.05}, {"data", 0.01},     {"other", 0.0},
                             {"untraced", 0.09}};
  const nlohmann::json b = step_bounds(ms, w, 1e9, 2e9);
  EXPECT_DOUBLE_EQ(b["gemm"]["bound_ms"].get<double>(), 125952.0 / 1e9 * 1e3);
  EXPECT_DOUBLE_EQ(b["loss"]["bound_ms"].get<double>(), 3.0 * 4 * 256 * 8 / 2e9 * 1e3);
  EXPECT_DOUBLE_EQ(b["gemm"]["times"].get<double>(), 0.5 / (125952.0 / 1e6));
  EXPECT_FALSE(b.contains("data"));  // no work modelled: no bound
  double sum = 0;
  for (const char* c :
       {"gemm", "attention", "normalisation", "pointwise", "copy", "loss", "optimizer"}) {
    sum += b[c]["bound_ms"].get<double>();
    EXPECT_DOUBLE_EQ(b[c]["bound_ms"].get<double>(),
                     (b[c]["flops"].get<double>() / 1e9 + b[c]["bytes"].get<double>() / 2e9) * 1e3);
  }
  EXPECT_DOUBLE_EQ(b["step"]["bound_ms"].get<double>(), sum);
  EXPECT_DOUBLE_EQ(b["step"]["ms"].get<double>(), 1.12);
  EXPECT_EQ(b["gemm_flops_per_s"], 1e9);
  EXPECT_EQ(b["memory_bytes_per_s"], 2e9);
}

TEST(StepBounds, TheBandwidthProbeMeasuresAPlausibleRate) {
  const double bw = memory_bandwidth_probe(torch::kCPU, 8 << 20, 2);
  EXPECT_GT(bw, 1e8);   // more than 0.1 GB/s
  EXPECT_LT(bw, 1e13);  // less than 10 TB/s
}

}  // namespace
}  // namespace trainbench
