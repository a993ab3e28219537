// --profile_steps beside the machine's limits, end to end: every profiled run's summary.json has
// each category's bound from the recorded rates and work, their sum as the step's bound, and
// the probe's rate of the run's own route's GEMMs (without the float32 route's conversions) as
// the GEMM rate, on both routes and in all three dtypes; and the breakdown itself over events made
// here (host ops' self times; a device's kernels in the category of the op that launched them).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>
#include <tuple>

#include <torch/cuda.h>

#include "test_util.h"
#include "trainbench/measure/profile.h"
#include "trainbench/report/report.h"
#include "trainbench/report/results.h"

namespace trainbench {
namespace {

const char* kShape =
    "--num_layer 1 --d_model 128 --num_heads 4 --ff_dim 512 --seq_len 64 --batch_size 8 "
    "--steps 5 --warmup_steps 1 --profile_steps 2 --log_every 2 --eval_every 0 --eval_batches 1 "
    "--device cpu";

nlohmann::json profiled_(const testing::TempDir& dir, const std::string& flags,
                         const std::string& name, const char* shape = kShape) {
  const auto r =
      testing::run_bench(std::string(shape) + " " + flags + " --save_dir " + (dir / name));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("profile bounds: GEMMs at "), std::string::npos) << r.output;
  // Without a GPU the profiler's own log is off (Kineto's ERROR line about the GPU it looked
  // for told a CPU user nothing).
  if (!torch::cuda::is_available()) {
    EXPECT_EQ(r.output.find("ERROR"), std::string::npos) << r.output;
  }
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    if (e.path().filename().string().rfind(name + "_", 0) == 0) {
      return read_json_file(e.path().string() + "/summary.json");
    }
  }
  ADD_FAILURE() << "no run folder for " << name;
  return {};
}

TEST(ProfileBounds, EachCategoryBesideItsBoundAtTheProbedRateOfTheRoutesGemms) {
  testing::TempDir dir;
  const std::pair<const char*, const char*> runs[] = {
      {"--dtype float32 --flash 1", "f32eager"},
      {"--dtype float32 --compile fused --flash 1", "f32"},
      {"--dtype bfloat16 --compile fused --lowp_gemm native --flash 1", "bf16native"},
      {"--dtype bfloat16 --compile fused --lowp_gemm float32 --flash 1", "bf16f32"},
      {"--dtype float16 --compile fused --lowp_gemm native --flash 1", "f16native"},
      {"--dtype float16 --compile fused --lowp_gemm float32 --flash 1", "f16f32"},
      {"--dtype float32 --compile fused --flash 0", "f32naive"},
  };
  for (const auto& [flags, name] : runs) {
    const nlohmann::json s = profiled_(dir, flags, name);
    const nlohmann::json b = s["profile"]["bounds"];
    ASSERT_TRUE(b.is_object()) << name << ": " << s["profile"].dump();
    EXPECT_EQ(s["profile"]["time_of"], "host ops") << name;  // the CPU's: no device events
    const double rate = b["gemm_flops_per_s"], bw = b["memory_bytes_per_s"];
    EXPECT_GT(bw, 0) << name;
    double sum = 0;
    for (const auto& [c, row] : b.items()) {
      if (!row.is_object() || c == "step") continue;  // a category with work
      const double expected =
          (row["flops"].get<double>() / rate + row["bytes"].get<double>() / bw) * 1e3;
      EXPECT_NEAR(row["bound_ms"].get<double>(), expected, 1e-9 * expected) << name << " " << c;
      EXPECT_NE(c, "data") << name;  // no work modelled, no bound
      EXPECT_DOUBLE_EQ(row["ms"].get<double>(), s["profile"]["ms_per_step"][c].get<double>());
      sum += row["bound_ms"].get<double>();
    }
    EXPECT_NEAR(b["step"]["bound_ms"].get<double>(), sum, 1e-9 * sum) << name;
    // A bfloat16/float16 run's conversions are the copy category's bytes (its weights rounded
    // each step), and so are the naive attention's heads passes (fused::heads); a float32 run
    // with flash has none.
    const bool naive = std::string(flags).find("--flash 0") != std::string::npos;
    EXPECT_EQ(b.contains("copy"), naive || std::string(flags).find("16") != std::string::npos)
        << name;
    if (naive) {
      EXPECT_GT(b["copy"]["ms"].get<double>(), 0.0) << name;
    }
    // The GEMM rate is the probe's for the run's own route, of its GEMMs alone: the float32
    // route's conversions are copy bytes, so they are not in the GEMMs' rate as well.
    const nlohmann::json* route = nullptr;
    for (const nlohmann::json& r : s["peak_probe"]["routes"]) {
      if (r["gemm_path"] == s["gemm_path"]) route = &r;
    }
    ASSERT_NE(route, nullptr) << name << ": " << s["peak_probe"].dump();
    EXPECT_DOUBLE_EQ(rate, (*route)["gemm_flops_per_s"].get<double>()) << name;
    // Each GEMM product of the step with its in-step rate; where the probe timed the same
    // product (the model's linear layers: every product of a float32 run's), its rate beside it.
    const nlohmann::json& products = s["profile"]["gemm_products"];
    ASSERT_FALSE(products.empty()) << name;
    std::set<std::tuple<int64_t, int64_t, int64_t>> probed;
    auto shape = [](const nlohmann::json& p) {
      return std::make_tuple(p["m"].get<int64_t>(), p["k"].get<int64_t>(), p["n"].get<int64_t>());
    };
    for (const nlohmann::json& p : (*route)["products"]) probed.insert(shape(p));
    size_t beside = 0;
    for (const nlohmann::json& p : products) {
      EXPECT_GT(p["flops_per_s"].get<double>(), 0) << name << " " << p.dump();
      EXPECT_GT(p["calls_per_step"].get<double>(), 0) << name;
      const bool shape_probed = p["batch"] == 1 && probed.count(shape(p)) > 0;
      EXPECT_EQ(p.contains("probe_flops_per_s"), shape_probed) << name << " " << p.dump();
      beside += shape_probed;
    }
    // Each probed shape ran in the step, where the probe timed the step's own rows (a slow path's
    // probe may cut them: its products then have other shapes).
    bool step_rows = true;
    for (const nlohmann::json& p : (*route)["products"]) {
      const bool weight_grad =
          p["what"].get<std::string>().find("weight-grad") != std::string::npos;
      step_rows &= p[weight_grad ? "k" : "m"].get<int64_t>() == 8 * 64;  // kShape's batch x seq
    }
    if (step_rows) {
      EXPECT_EQ(beside, probed.size()) << name << ": " << products.dump();
    }
    // The bound and the category's time, side by side, for whoever reads the log; their ratio is
    // a measurement (docs/BENCHMARKS.md), not something a test on a shared machine can hold.
    std::printf("%s: probe's GEMMs %.1f GFLOP/s (the route's calls %.1f), run's GEMMs %.1f\n", name,
                rate / 1e9, (*route)["flops_per_s"].get<double>() / 1e9,
                b["gemm"]["flops"].get<double>() / b["gemm"]["ms"].get<double>() / 1e6);
  }
}

TEST(ProfileBounds, TheReportShowsEachCategoryAgainstItsBound) {
  testing::TempDir dir;
  profiled_(dir, "--dtype float32 --compile fused --flash 1", "rep");
  std::string folder;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) folder = e.path().string();
  const std::string md = render_report({read_run(folder)}, ReportOptions{});
  EXPECT_NE(md.find("x bound)"), std::string::npos) << md;
  EXPECT_NE(md.find("| bound |"), std::string::npos) << md;
  EXPECT_NE(md.find("| time of | host ops |"), std::string::npos) << md;
  EXPECT_NE(md.find("GEMM products of "), std::string::npos) << md;
  EXPECT_NE(md.find("| qkv forward |"), std::string::npos) << md;
}

// On a GPU the profile is the device's: its kernels, each in the category of the op that launched
// it (bench's fused kernels and LibTorch's alike), within the step's wall time; untraced the rest.
TEST(ProfileOnCuda, TheGpusKernelsFillTheCategoriesOfTheOpsThatLaunchedThem) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  testing::TempDir dir;
  const char* shape =
      "--num_layer 1 --d_model 128 --num_heads 4 --ff_dim 512 --seq_len 64 --batch_size 8 "
      "--steps 6 --warmup_steps 2 --profile_steps 2 --log_every 2 --eval_every 0 "
      "--eval_batches 1 --tensorboard 0 --device cuda";
  const std::pair<const char*, const char*> runs[] = {
      {"--dtype bfloat16 --compile fused --fused_adam 1 --flash 0", "fused"},
      {"--dtype float32", "eager"},
  };
  for (const auto& [flags, name] : runs) {
    const nlohmann::json p = profiled_(dir, flags, name, shape)["profile"];
    ASSERT_TRUE(p.is_object()) << name;
    EXPECT_EQ(p["time_of"], "device") << name;
    const nlohmann::json& ms = p["ms_per_step"];
    double kernels = 0;
    for (const auto& [c, v] : ms.items()) kernels += c == "untraced" ? 0.0 : v.get<double>();
    for (const char* c : {"gemm", "normalisation", "optimizer"}) {
      EXPECT_GT(ms[c].get<double>(), 0.0) << name << " " << c << ": " << p.dump();
    }
    if (std::string(name) == "fused") {  // the heads passes and the softmax kernels
      EXPECT_GT(ms["copy"].get<double>(), 0.0) << p.dump();
      EXPECT_GT(ms["attention"].get<double>(), 0.0) << p.dump();
    }
    EXPECT_LE(ms["other"].get<double>(), 0.25 * kernels) << name << ": " << p.dump();
    EXPECT_LE(kernels, 1.05 * p["step_ms"].get<double>()) << name << ": " << p.dump();
    EXPECT_NEAR(kernels + ms["untraced"].get<double>(),
                std::max(kernels, p["step_ms"].get<double>()), 1e-6)
        << name;
  }
}

// ---- profile_breakdown over events made here (milliseconds as ns / 1e6, one thread each) ----
using Kind = ProfileEvent::Kind;
constexpr uint64_t kMs = 1000000;
ProfileEvent ev(Kind kind, uint64_t thread, uint64_t start_ms, uint64_t end_ms, const char* name,
                uint64_t correlation = 0, uint64_t linked = 0) {
  return {kind, thread, start_ms * kMs, end_ms * kMs, name, correlation, linked};
}

TEST(ProfileBreakdown, HostOpsSelfTimeGoesToTheNearestCategoryAndScopesClaimTheirChildren) {
  const std::vector<ProfileEvent> evs = {
      ev(Kind::kHostOp, 1, 0, 100, "trainbench::optimizer"),
      ev(Kind::kHostOp, 1, 10, 40, "aten::mm"),  // the optimizer's: its scope claims it
      ev(Kind::kHostOp, 1, 200, 300, "aten::addmm"),
      ev(Kind::kHostOp, 1, 210, 230, "aten::copy_"),     // a copy of its own inside a GEMM
      ev(Kind::kHostOp, 1, 240, 250, "mystery::thing"),  // "other" inside: the GEMM's
      ev(Kind::kHostOp, 2, 0, 50, "aten::layer_norm"),
  };
  const nlohmann::json j = profile_breakdown(evs, 2, 0.5);  // 2 steps, 250 ms each
  const nlohmann::json& ms = j["ms_per_step"];
  EXPECT_EQ(j["time_of"], "host ops");
  EXPECT_DOUBLE_EQ(j["step_ms"].get<double>(), 250.0);
  EXPECT_DOUBLE_EQ(ms["optimizer"].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(ms["gemm"].get<double>(), 40.0);  // (100 - 20) / 2
  EXPECT_DOUBLE_EQ(ms["copy"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(ms["normalisation"].get<double>(), 25.0);
  EXPECT_DOUBLE_EQ(ms["other"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(ms["untraced"].get<double>(), 250.0 - 125.0);
  EXPECT_DOUBLE_EQ(j["share"]["gemm"].get<double>(), 40.0 / 250.0);
  for (const std::string& c : profile_categories()) EXPECT_TRUE(ms.contains(c)) << c;
}

// A GEMM op's product from its input shapes (mm, addmm's bias first, bmm and baddbmm batched;
// nothing for other ops or shapes that are no product); the breakdown's GEMM products: each
// shape's calls, ms and rate per step, a GEMM inside a GEMM counted once, the slowest first.
TEST(ProfileBreakdown, GemmProductsAreTheirOpsShapesAtTheirWholeTimes) {
  auto gemm = [](ProfileEvent e, std::vector<std::vector<int64_t>> shapes) {
    set_gemm_product(e, shapes.data(), shapes.size());
    return e;
  };
  const ProfileEvent addmm =
      gemm(ev(Kind::kHostOp, 1, 0, 20, "aten::addmm"), {{1536}, {2048, 512}, {512, 1536}});
  EXPECT_EQ(addmm.m, 2048);
  EXPECT_EQ(addmm.k, 512);
  EXPECT_EQ(addmm.n, 1536);
  EXPECT_DOUBLE_EQ(addmm.flops, 2.0 * 2048 * 512 * 1536);
  const ProfileEvent bmm =
      gemm(ev(Kind::kHostOp, 1, 30, 40, "aten::bmm"), {{64, 256, 64}, {64, 64, 256}});
  EXPECT_EQ(bmm.batch, 64);
  EXPECT_DOUBLE_EQ(bmm.flops, 2.0 * 64 * 256 * 64 * 256);
  EXPECT_EQ(gemm(ev(Kind::kHostOp, 1, 0, 1, "aten::relu"), {{8, 8}}).flops, 0);
  EXPECT_EQ(gemm(ev(Kind::kHostOp, 1, 0, 1, "aten::mm"), {{8}}).flops, 0);  // not a product
  const std::vector<ProfileEvent> evs = {
      addmm,
      gemm(ev(Kind::kHostOp, 1, 5, 15, "aten::mm"), {{2048, 512}, {512, 1536}}),  // inside
      bmm,
      gemm(ev(Kind::kHostOp, 1, 50, 70, "aten::addmm"), {{1536}, {2048, 512}, {512, 1536}}),
  };
  const nlohmann::json rows = profile_breakdown(evs, 2, 0.2)["gemm_products"];
  ASSERT_EQ(rows.size(), 2u) << rows.dump();
  EXPECT_EQ(rows[0]["m"], 2048);  // 40 ms in two steps before the bmm's 10
  EXPECT_DOUBLE_EQ(rows[0]["calls_per_step"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(rows[0]["ms_per_step"].get<double>(), 20.0);
  EXPECT_DOUBLE_EQ(rows[0]["flops_per_s"].get<double>(), 2 * addmm.flops / 0.040);
  EXPECT_EQ(rows[1]["batch"], 64);
  EXPECT_DOUBLE_EQ(rows[1]["ms_per_step"].get<double>(), 5.0);
}

TEST(ProfileBreakdown, DeviceEventsCountInTheCategoryOfTheOpThatLaunchedThem) {
  const std::vector<ProfileEvent> evs = {
      ev(Kind::kHostOp, 1, 0, 100, "fused::causal_attention", 1),
      ev(Kind::kHostOp, 1, 10, 20, "aten::bmm", 2), ev(Kind::kHostOp, 1, 30, 40, "fused::heads", 3),
      ev(Kind::kHostRuntime, 1, 32, 33, "cudaLaunchKernel", 50),
      // An op on another thread whose id equals the launch's: ops' and launches' ids are apart.
      ev(Kind::kHostOp, 2, 0, 10, "aten::layer_norm", 50),
      ev(Kind::kDevice, 7, 100, 105, "gemm kernel", 40, 2),      // linked to aten::bmm
      ev(Kind::kDevice, 7, 105, 107, "heads kernel", 41, 3),     // linked to fused::heads
      ev(Kind::kDevice, 7, 107, 108, "unlinked kernel", 50, 0),  // its launch: inside the heads
      ev(Kind::kDevice, 7, 110, 114, "stray kernel", 77, 99),    // neither found: other
  };
  const nlohmann::json j = profile_breakdown(evs, 1, 0.2);
  const nlohmann::json& ms = j["ms_per_step"];
  EXPECT_EQ(j["time_of"], "device");
  // The device's time alone: the host's self times (attention 80 ms, normalisation 10) are not.
  EXPECT_DOUBLE_EQ(ms["gemm"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(ms["copy"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(ms["attention"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(ms["normalisation"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(ms["other"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(ms["untraced"].get<double>(), 200.0 - 12.0);  // the device idle
}

}  // namespace
}  // namespace trainbench
