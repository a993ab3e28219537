// The GPU fast-path flags on the CPU: --sdpa_backend, --fused_adam, --gpu_kernels and
// --cuda_graph errors and exit codes, and the attention backend a run records.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "trainbench/app/cli.h"
#include "trainbench/app/run.h"
#include "trainbench/app/validate.h"
#include "trainbench/core/log.h"
#include "trainbench/model/sdpa_backend.h"
#include "trainbench/report/results.h"
#include "trainbench/train/trainer.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;

// The ConfigError message for a command line, or "" when it parses and validates.
std::string gpu_flags_error(std::vector<std::string> args) {
  args.insert(args.begin(), "bench");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    validate(parse_cli(static_cast<int>(argv.size()), argv.data()).config);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(GpuFlags, BadValuesAndCombinationsNameTheFlagValueAndAllowed) {
  std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--sdpa_backend", "fast"},
       "--sdpa_backend: 'fast' is not allowed; use one of auto|flash|efficient|cudnn|math"},
      {{"--sdpa_backend", "math"},
       "--sdpa_backend: 'math' needs --flash 1 (the naive attention path does not call "
       "scaled-dot-product attention); use --flash 1 or --sdpa_backend auto"},
      {{"--sdpa_backend", "efficient", "--flash", "1", "--device", "cpu"},
       "--sdpa_backend: 'efficient' has no CPU kernel (the CPU has flash and math); use "
       "--sdpa_backend auto|flash|math or --device cuda"},
      {{"--sdpa_backend", "cudnn", "--flash", "1", "--device", "cpu"},
       "--sdpa_backend: 'cudnn' has no CPU kernel"},
      {{"--fused_adam", "2"}, "--fused_adam: 2 is not allowed; use 0|1"},
      {{"--adam_kernel", "multi"},
       "--adam_kernel: 'multi' needs --fused_adam 1 (it launches bench's Adam kernel); use "
       "--fused_adam 1 or --adam_kernel param"},
      {{"--adam_kernel", "many"}, "--adam_kernel: 'many' is not allowed"},
      {{"--gpu_kernels", "v3"}, "--gpu_kernels: 'v3' is not allowed; use one of v1|v2"},
      {{"--gpu_kernels", "v2", "--compile", "fused", "--device", "cpu"},
       "--gpu_kernels: 'v2' picks the CUDA kernels of --compile fused; this run is --compile "
       "fused on cpu; use --compile fused on a CUDA device or --gpu_kernels v1"},
      {{"--gpu_kernels", "v2", "--device", "cpu"},
       "--gpu_kernels: 'v2' picks the CUDA kernels of --compile fused; this run is --compile "
       "none on cpu"},
      {{"--cuda_graph", "2"}, "--cuda_graph: 2 is not allowed; use 0|1"},
      {{"--cuda_graph", "1"},
       "--cuda_graph: 1 needs --fused_adam 1 (torch::optim::Adam keeps its step count on the "
       "host, which a captured graph would freeze); use --fused_adam 1 or --cuda_graph 0"},
      {{"--cuda_graph", "1", "--fused_adam", "1", "--compile", "1"},
       "--cuda_graph: 1 is not allowed with --compile torchscript"},
      {{"--cuda_graph", "1", "--fused_adam", "1", "--compile", "fused", "--device", "cpu"},
       "--cuda_graph: 1 needs a CUDA device (this run is on cpu)"},  // fused is captured
      {{"--cuda_graph", "1", "--fused_adam", "1", "--dropout_impl", "parallel"},
       "--cuda_graph: 1 is not allowed with --dropout_impl parallel (a CPU-only kernel); use "
       "--dropout_impl auto|native"},
      {{"--cuda_graph", "1", "--fused_adam", "1", "--warmup_steps", "2"},
       "--warmup_steps: 2 with --cuda_graph 1; allowed: >= 3 (eager steps on a side stream, "
       "then the capture)"},
      {{"--cuda_graph", "1", "--fused_adam", "1", "--fault_nan_step", "4"},
       "--fault_nan_step: not supported with --cuda_graph 1"},
      {{"--cuda_graph", "1", "--fused_adam", "1", "--device", "cpu"},
       "--cuda_graph: 1 needs a CUDA device (this run is on cpu); use --cuda_graph 0"},
  };
  for (const auto& [args, expected] : cases) {
    std::string line;
    for (const auto& a : args) line += a + " ";
    const std::string error = gpu_flags_error(args);
    EXPECT_EQ(error.substr(0, expected.size()), expected) << line;
    EXPECT_EQ(error.find('\n'), std::string::npos) << line;  // one line
  }
  // Allowed everywhere: math (and auto) with --flash 1, the flags off.
  EXPECT_EQ(gpu_flags_error({"--sdpa_backend", "math", "--flash", "1", "--device", "cpu"}), "");
  EXPECT_EQ(gpu_flags_error({"--fused_adam", "0", "--cuda_graph", "0", "--device", "cpu"}), "");
}

TEST(GpuFlags, BadGpuFlagsExitTwoWithOneLineAndCreateNothing) {
  testing::TempDir dir;
  const std::string save = " --device cpu --save_dir " + (dir / "r");
  for (const char* args : {"--sdpa_backend efficient --flash 1", "--sdpa_backend flash",
                           "--cuda_graph 1", "--cuda_graph 1 --fused_adam 1", "--fused_adam 7"}) {
    const auto r = testing::run_bench(args + save);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_EQ(r.output.rfind("bench: error: --", 0), 0u) << r.output;
    EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << r.output;  // exactly one line
  }
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(GpuFlags, HelpListsTheNewFlags) {
  const auto r = testing::run_bench("--help");
  for (const char* flag : {"--sdpa_backend", "--fused_adam", "--cuda_graph"}) {
    EXPECT_NE(r.output.find(flag), std::string::npos) << flag;
  }
}

class GpuFlagsRun : public ::testing::Test {
 protected:
  void SetUp() override { log_set_quiet(true); }
  void TearDown() override { log_set_quiet(false); }
  testing::TempDir dir;
};

TEST_F(GpuFlagsRun, TheBackendThatRanIsRecordedInConfigAndSummary) {
  RunConfig c = testing::tiny_config();
  c.steps = 2;
  c.save_dir = dir / "naive";
  RunResult r = run_benchmark(c);
  EXPECT_TRUE(r.summary["sdpa_backend_used"].is_null());
  EXPECT_TRUE(read_json_file(r.run_dir + "/config.json")["sdpa_backend_used"].is_null());
  EXPECT_EQ(read_json_file(r.run_dir + "/config.json")["fused_adam"], false);
  EXPECT_EQ(read_json_file(r.run_dir + "/config.json")["cuda_graph"], false);
  // No GPU, no energy counter: null figures and why (measure/energy.h).
  EXPECT_TRUE(r.summary["energy_joules"].is_null());
  EXPECT_TRUE(r.summary["tokens_per_joule"].is_null());
  EXPECT_EQ(r.summary["energy_source"], "none: a CPU run (NVML's counter is a GPU's)");

  c.flash = 1;
  c.sdpa_backend = SdpaBackend::kMath;
  c.save_dir = dir / "math";
  const SdpaFlags before = sdpa_flags();
  r = run_benchmark(c);
  EXPECT_EQ(r.status, RunStatus::kCompleted);
  EXPECT_EQ(r.summary["sdpa_backend_used"], "math");
  const auto config = read_json_file(r.run_dir + "/config.json");
  EXPECT_EQ(config["sdpa_backend"], "math");
  EXPECT_EQ(config["sdpa_backend_used"], "math");
  EXPECT_TRUE(sdpa_flags() == before);  // the run's guard restored the switches

  c.sdpa_backend = SdpaBackend::kAuto;
  c.save_dir = dir / "auto";
  r = run_benchmark(c);
  EXPECT_TRUE(r.summary["sdpa_backend_used"].is_string());
}

}  // namespace
}  // namespace trainbench
