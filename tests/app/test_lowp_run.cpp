// bfloat16/float16 on CPUs without their GEMM instructions, end to end: forced with
// ONEDNN_MAX_CPU_ISA=AVX2 (LibTorch then takes its reference GEMM, as on an AVX2-only CPU), the
// eager run warns once with the measured slowdown and the fused run takes the float32 route;
// the route and the CPU's sets are in env.json and config.json; MFU is never above 100%; a run
// that shared its CPU with other work says so.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <regex>

#include "test_util.h"
#include "trainbench/core/cpu_isa.h"
#include "trainbench/measure/cpu_noise.h"
#include "trainbench/report/env_info.h"
#include "trainbench/report/report.h"
#include "trainbench/report/results.h"

namespace trainbench {
namespace {

const char* kTinyLowp =
    "--num_layer 1 --d_model 32 --num_heads 2 --ff_dim 64 --seq_len 32 --batch_size 4 "
    "--steps 4 --warmup_steps 1 --log_every 2 --eval_every 0 --eval_batches 1 --threads 1 "
    "--device cpu";
const char* kAvx2 = "ONEDNN_MAX_CPU_ISA=AVX2 ";

size_t count_(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class LowpRun : public ::testing::Test {
 protected:
  std::string run_(const std::string& env, const std::string& flags, const std::string& name,
                   testing::CommandResult* out = nullptr) {
    const std::string prefix = dir / name;
    const auto r =
        testing::run_command(env + TB_BENCH_EXE + std::string(" ") +
                             testing::merge_flags(kTinyLowp, flags) + " --save_dir " + prefix);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    if (out) *out = r;
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
      if (e.path().filename().string().rfind(name + "_", 0) == 0) return e.path().string();
    }
    ADD_FAILURE() << "no run folder for " << name << "\n" << r.output;
    return "";
  }
  testing::TempDir dir;
};

TEST_F(LowpRun, EagerBfloat16WithoutNativeGemmWarnsOnceWithTheSlowdownAndTheWayOut) {
  testing::CommandResult r;
  const std::string run = run_(kAvx2, "--dtype bfloat16", "eager", &r);
  EXPECT_EQ(count_(r.output,
                   "bfloat16 has no native GEMM on this CPU (it lacks AVX512-BF16 or "
                   "AMX-BF16): LibTorch's reference GEMM (one thread) took "),
            1u)
      << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("took [0-9]+\\.[0-9]x the time of float32 "
                                                     "GEMMs of bfloat16 operands in a probe at "
                                                     "this model's GEMM shapes; for speed use "
                                                     "--compile fused")))
      << r.output;
  const nlohmann::json env = read_json_file(run + "/env.json");
  EXPECT_EQ(env["gemm_path"]["model_gemms"], "reference");
  EXPECT_EQ(env["gemm_path"]["libtorch"], "reference");
  EXPECT_EQ(env["gemm_path"]["native_gemm"], false);
  for (const auto& s : env["gemm_path"]["cpu_isa"]) {
    EXPECT_EQ(s.get<std::string>().find("avx512"), std::string::npos) << s;  // capped
  }
  EXPECT_EQ(read_json_file(run + "/config.json")["lowp_gemm"], "native");  // LibTorch's own
  EXPECT_EQ(read_json_file(run + "/summary.json")["gemm_path"], "reference");
}

TEST_F(LowpRun, Float16IsWarnedAboutWithItsOwnInstructions) {
  testing::CommandResult r;
  run_(kAvx2, "--dtype float16", "half", &r);
  EXPECT_EQ(count_(r.output,
                   "float16 has no native GEMM on this CPU (it lacks AVX512-FP16 or "
                   "AMX-FP16)"),
            1u)
      << r.output;
}

TEST_F(LowpRun, FusedBfloat16TakesTheFloat32RouteWithoutAWarning) {
  testing::CommandResult r;
  const std::string run = run_(kAvx2, "--dtype bfloat16 --compile fused", "fused", &r);
  EXPECT_EQ(r.output.find("no native GEMM"), std::string::npos) << r.output;
  EXPECT_EQ(read_json_file(run + "/config.json")["lowp_gemm"], "float32");
  EXPECT_EQ(read_json_file(run + "/env.json")["gemm_path"]["model_gemms"], "float32_rounded");
  const nlohmann::json summary = read_json_file(run + "/summary.json");
  EXPECT_EQ(summary["gemm_path"], "float32_rounded");
  EXPECT_EQ(read_run(run).label, "bench handcraft fused float32-gemm");
  // Chosen by measurement: the reference GEMM's rate and the float32 route's, both recorded.
  const nlohmann::json route = summary["gemm_route"];
  EXPECT_EQ(route["lowp_gemm"], "auto");
  EXPECT_EQ(route["chosen"], "float32");
  EXPECT_EQ(route["chosen_by"], "measurement");
  EXPECT_LT(route["flops_per_s"]["reference"].get<double>(),
            route["flops_per_s"]["float32_rounded"].get<double>());
  EXPECT_EQ(read_json_file(run + "/env.json")["gemm_path"]["route"], route);
  EXPECT_NE(r.output.find("--lowp_gemm auto takes the float32 route: float32 GEMMs of bfloat16 "
                          "operands measured "),
            std::string::npos)
      << r.output;
  // Forcing the native route there is LibTorch's slow path again, and says so.
  testing::CommandResult forced;
  const std::string native =
      run_(kAvx2, "--dtype bfloat16 --compile fused --lowp_gemm native", "forced", &forced);
  EXPECT_EQ(read_json_file(native + "/config.json")["lowp_gemm"], "native");
  EXPECT_NE(forced.output.find("for speed use --lowp_gemm auto|float32"), std::string::npos)
      << forced.output;
}

// On this CPU, uncapped: auto takes whichever route measured faster, in both dtypes, and the
// report's GEMM column says so.
TEST_F(LowpRun, AutoOnThisCpuTakesTheFasterMeasuredRoute) {
  for (const char* dtype : {"bfloat16", "float16"}) {
    const std::string run =
        run_("", std::string("--dtype ") + dtype + " --compile fused", std::string("auto") + dtype);
    const nlohmann::json route = read_json_file(run + "/summary.json")["gemm_route"];
    const std::string own =
        name_of(libtorch_gemm_path(effective_isa(), choice_of<Precision>("dtype", dtype)));
    const bool rounded_faster = route["flops_per_s"]["float32_rounded"].get<double>() >
                                route["flops_per_s"][own].get<double>();
    EXPECT_EQ(route["chosen"], rounded_faster ? "float32" : "native") << route.dump();
    EXPECT_EQ(read_json_file(run + "/config.json")["lowp_gemm"], route["chosen"]);
    EXPECT_EQ(read_run(run).gemm_choice.rfind("auto ", 0), 0u) << read_run(run).gemm_choice;
  }
}

// Rates injected through the test hook: auto follows them both ways and records both; a forced
// route is said to be forced; the report's GEMM column shows the ratio.
TEST_F(LowpRun, AutoFollowsTheProbesRatesBothWays) {
  testing::CommandResult r;
  const std::string slow_native = run_("TB_TEST_GEMM_RATES=native=1e9,float32_rounded=4e9 ",
                                       "--dtype bfloat16 --compile fused", "slow", &r);
  EXPECT_EQ(read_json_file(slow_native + "/config.json")["lowp_gemm"], "float32");
  EXPECT_NE(r.output.find("GEMM probe took "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" (rates injected); --lowp_gemm auto takes the float32 route: "),
            std::string::npos)
      << r.output;
  EXPECT_EQ(read_run(slow_native).gemm_choice, "auto 4.00x");
  EXPECT_NE(render_report({read_run(slow_native)}, ReportOptions{})
                .find("| float32_rounded (auto 4.00x) |"),
            std::string::npos);
  const std::string fast_native = run_("TB_TEST_GEMM_RATES=native=8e9,float32_rounded=2e9 ",
                                       "--dtype bfloat16 --compile fused", "fast");
  const nlohmann::json s = read_json_file(fast_native + "/summary.json");
  EXPECT_EQ(s["gemm_route"]["chosen"], "native");
  EXPECT_EQ(s["peak_probe"]["injected"], true);
  EXPECT_DOUBLE_EQ(s["peak_flops"].get<double>(), 8e9);  // the native route's peak
  EXPECT_EQ(read_run(fast_native).gemm_choice, "auto 4.00x");
  const std::string forced = run_("TB_TEST_GEMM_RATES=native=8e9,float32_rounded=2e9 ",
                                  "--dtype bfloat16 --compile fused --lowp_gemm float32", "forced");
  EXPECT_EQ(read_json_file(forced + "/config.json")["lowp_gemm"], "float32");
  EXPECT_EQ(read_run(forced).gemm_choice, "forced");
}

// A native GEMM that the probe measured slower than the float32 route is warned about in eager
// runs too, though the CPU has the instructions.
TEST_F(LowpRun, AMeasuredSlowNativeGemmIsWarnedAboutInEagerRuns) {
  testing::CommandResult r;
  const std::string eager = run_("TB_TEST_GEMM_RATES=native=1e9,float32_rounded=3e9 ",
                                 "--dtype bfloat16", "eagerslow", &r);
  EXPECT_EQ(count_(r.output, " took 3.0x the time of float32 GEMMs of bfloat16 operands"), 1u)
      << r.output;
  // Eager runs take LibTorch's GEMM whatever the probe says: nothing was chosen.
  EXPECT_EQ(read_json_file(eager + "/summary.json")["gemm_route"]["chosen_by"], "one route");
  EXPECT_EQ(read_run(eager).gemm_choice, "");
  testing::CommandResult quiet;
  run_("TB_TEST_GEMM_RATES=native=3e9,float32_rounded=3.1e9 ", "--dtype bfloat16", "eagerok",
       &quiet);
  if (libtorch_gemm_path(effective_isa(), Precision::kBFloat16) == GemmPath::kOnednnNative) {
    EXPECT_EQ(quiet.output.find("the time of float32 GEMMs"), std::string::npos) << quiet.output;
  }
}

TEST_F(LowpRun, Float32RouteOutsideTheFusedPathIsRefusedInOneLine) {
  const auto r =
      testing::run_bench(std::string(kTinyLowp) + " --dtype bfloat16 --lowp_gemm float32" +
                         " --save_dir " + (dir / "x"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(count_(r.output, "\n"), 1u) << r.output;
  EXPECT_NE(r.output.find("--lowp_gemm: 'float32' is not allowed with --compile none"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST_F(LowpRun, MfuIsNeverAboveOneHundredPercent) {
  testing::CommandResult r;
  // A peak far below what the run achieves: the peak is called unreliable, no MFU printed.
  const std::string low = run_("", "--peak_tflops 0.000001", "low", &r);
  const nlohmann::json s = read_json_file(low + "/summary.json");
  EXPECT_TRUE(s["mfu"].is_null());
  EXPECT_EQ(s["peak_unreliable"], true);
  EXPECT_GT(s["achieved_flops_per_s"].get<double>(), 1e6);
  EXPECT_NE(r.output.find("MFU not shown: the run's model FLOP rate"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("| unreliable peak |"), std::string::npos) << r.output;
  EXPECT_NE(render_report({read_run(low)}, ReportOptions{}).find(" | unreliable | "),
            std::string::npos);
  // The probe: the model's shapes on the run's path, kept in summary.json.
  const std::string probed = run_("", "--peak_tflops 0", "probed");
  const nlohmann::json p = read_json_file(probed + "/summary.json");
  EXPECT_EQ(p["peak_flops_source"], "gemm_probe");
  ASSERT_EQ(p["peak_probe"]["routes"].size(), 1u);
  EXPECT_EQ(p["peak_probe"]["routes"][0]["gemm_path"], "mkl_float32");
  EXPECT_EQ(p["peak_probe"]["routes"][0]["products"].size(), 9u);
  EXPECT_DOUBLE_EQ(p["peak_flops"].get<double>(),
                   p["peak_probe"]["routes"][0]["peak_flops_per_s"].get<double>());
  if (p["mfu"].is_number()) {
    EXPECT_LE(p["mfu"].get<double>(), 1.0);
    EXPECT_EQ(p["peak_unreliable"], false);
  } else {
    EXPECT_EQ(p["peak_unreliable"], true);
  }
}

// A busy loop on each of the machine's cores while a run trains: most timed steps are
// disturbed, summary.json says so and bench warns; a report shows the figure. bench weighs the
// other work against the online CPUs: where this process may use fewer (an affinity mask, a
// container's cpuset), loops on its own cores are no such share, and the test cannot hold.
TEST_F(LowpRun, ARunThatSharedTheCpuSaysItSeemsUnstable) {
  if (available_cores() != online_cpus()) {
    GTEST_SKIP() << "this process may run on " << available_cores() << " of the " << online_cpus()
                 << " online CPUs";
  }
  std::vector<pid_t> loops;
  const pid_t test = getpid();
  for (long i = 0; i < online_cpus(); ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive a test that ctest kills
      if (getppid() != test) _exit(0);   // killed before the line above took effect
      volatile uint64_t spin = 0;
      for (;;) spin = spin + 1;
    }
    loops.push_back(pid);
  }
  testing::CommandResult r;
  const std::string run =
      run_("", "--steps 8 --d_model 128 --ff_dim 512 --seq_len 128 --batch_size 8 --threads 0",
           "busy", &r);
  for (pid_t pid : loops) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  const nlohmann::json n = read_json_file(run + "/summary.json")["noise"];
  EXPECT_GE(n["disturbed_step_share"].get<double>(), 0.5) << n.dump();
  EXPECT_GT(n["other_cpu_share"].get<double>(), 0.2) << n.dump();
  EXPECT_EQ(n["unstable"], true);
  EXPECT_EQ(count_(r.output, "the benchmark seems unstable: "), 1u) << r.output;
  ReportOptions o;
  EXPECT_NE(render_report({read_run(run)}, o).find("% disturbed"), std::string::npos);
}

}  // namespace
}  // namespace trainbench
