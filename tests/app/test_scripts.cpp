// The scripts of scripts/ apart from the matrix runner (test_sweep.cpp): help and output
// folders, the offline download, and the Python each script keeps in a file of its own.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;

// Every script answers -h/--help with its usage (the header's Usage/Example lines) and exits 0
// without running anything: no folder is made, no install, build or run starts.
// Offline, get_enwik9.sh says in one line why it could not download and that bench runs
// without it; it leaves no partial file.
TEST(Scripts, GetEnwik9OfflineSaysHowToRunWithoutIt) {
  if (fs::exists(std::string(TB_SOURCE_DIR) + "/data/enwik9.zip")) GTEST_SKIP() << "downloaded";
  const auto r = testing::run_command("ENWIK9_URL=http://127.0.0.1:9/enwik9.zip bash " TB_SOURCE_DIR
                                      "/scripts/get_enwik9.sh");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("get_enwik9.sh: cannot download http://127.0.0.1:9/enwik9.zip ("),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("bench runs without it on its embedded corpus (no --data)"),
            std::string::npos);
  EXPECT_EQ(r.output.find("Trying"), std::string::npos) << r.output;  // no curl chatter
  EXPECT_FALSE(fs::exists(std::string(TB_SOURCE_DIR) + "/data/enwik9.zip.part"));
}

TEST(Scripts, EveryScriptAnswersHelpAndRunsNothing) {
  for (const auto& e : fs::directory_iterator(TB_SOURCE_DIR "/scripts")) {
    const std::string path = e.path().string(), name = e.path().filename().string();
    const bool sh = e.path().extension() == ".sh", py = e.path().extension() == ".py";
    if (!sh && !py) continue;
    for (const char* flag : {"-h", "--help"}) {
      testing::TempDir cwd;
      const std::string run = sh ? "bash " + path : std::string(TB_PYTHON) + " " + path;
      const auto r =
          testing::run_command("cd " + cwd.path() + " && timeout 20 " + run + " " + flag);
      EXPECT_EQ(r.exit_code, 0) << name << " " << flag << "\n" << r.output;
      EXPECT_TRUE(r.output.find("sage") != std::string::npos ||
                  r.output.find("xample") != std::string::npos)
          << name << "\n"
          << r.output;
      EXPECT_TRUE(fs::is_empty(cwd.path())) << name;
    }
  }
}

// A peer or plot under a Python without its framework (python3 instead of .venv/bin/python;
// here the project's Python without site-packages) says which Python to use, exit 2.
TEST(Scripts, APythonWithoutTheFrameworkIsOneLineNamingTheEnvironment) {
  for (const auto& [script, lacks] :
       {std::pair<const char*, const char*>{"peers/pytorch_run.py --help", "torch"},
        {"peers/jax_run.py --help", "jax, flax, optax, numpy"},
        {"plot_runs.py --out /nonexistent x", "matplotlib"}}) {
    const auto r = testing::run_command(std::string(TB_PYTHON) + " -S " TB_SOURCE_DIR "/scripts/" +
                                        script + " 2>&1");
    EXPECT_EQ(r.exit_code, 2) << script << "\n" << r.output;
    EXPECT_NE(r.output.find(std::string(" has no ") + lacks + "; run it with .venv/bin/python"),
              std::string::npos)
        << script << "\n"
        << r.output;
    EXPECT_EQ(r.output.find("Traceback"), std::string::npos) << r.output;
  }
}

// The scripts' Python in files of its own, each on hand-made inputs of the format it reads.
std::string py_script_(const std::string& name, const std::string& args) {
  return std::string(TB_PYTHON) + " " TB_SOURCE_DIR "/scripts/" + name + " " + args;
}

// build_times.py: the newest entry of each output (Ninja appends one per build), objects and
// precompiled headers as compiler time, binaries and libraries as links; a file that is not a
// Ninja log and a folder without one are one line and exit 2.
TEST(Scripts, BuildTimesSumsEachUnitsNewestEntryAndListsTheSlowest) {
  testing::TempDir dir;
  fs::create_directories(dir / "b");
  fs::create_directories(dir / "c");
  testing::write_file(dir / "b/.ninja_log",
                      "# ninja log v5\n"
                      "0\t9000\t1\tCMakeFiles/x.dir/src/a.cpp.o\t1\n"  // rebuilt below
                      "0\t30000\t1\tCMakeFiles/x.dir/cmake_pch.hxx.gch\t2\n"
                      "100\t2600\t1\tlibx.a\t3\n"
                      "0\t4000\t2\tCMakeFiles/x.dir/src/a.cpp.o\t4\n"
                      "0\t12500\t2\tCMakeFiles/x.dir/Unity/unity_x_cxx.cxx.o\t5\n");
  const auto r = testing::run_command(py_script_("build_times.py", (dir / "b") + " --top 2"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output,
            "compiler 46 s in 3 units, links 2 s, other 0 s\n"
            "   30.0 s  cmake_pch.hxx.gch\n"
            "   12.5 s  Unity/unity_x_cxx.cxx\n")
      << r.output;
  testing::write_file(dir / "c/.ninja_log", "not a log\n");
  const auto bad = testing::run_command(py_script_("build_times.py", dir / "c"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("not a Ninja log"), std::string::npos) << bad.output;
  const auto none = testing::run_command(py_script_("build_times.py", dir / "none"));
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.output.find("build with scripts/build.sh (Ninja) first"), std::string::npos)
      << none.output;
}

TEST(Scripts, KernelBenchTableTurnsGoogleBenchmarkMediansIntoRatios) {
  testing::TempDir dir;
  auto bm = [](const std::string& name, double ns, double bps, const std::string& label) {
    return nlohmann::json{{"run_name", name},  {"aggregate_name", "median"}, {"real_time", ns},
                          {"time_unit", "ns"}, {"bytes_per_second", bps},    {"label", label}};
  };
  const nlohmann::json j = {{"benchmarks",
                             {bm("BM_MemoryCopy/real_time", 1e6, 20e9, ""),
                              bm("BM_KernelCausalSoftmax/0/real_time", 2000, 10e9, "float32"),
                              bm("BM_OpAttention/0/0/real_time", 4e6, 0, ""),
                              bm("BM_OpAttention/0/1/real_time", 2e6, 0, ""),
                              {{"run_name", "BM_FmaPeak/256/real_time"},
                               {"aggregate_name", "median"},
                               {"FLOP/s", 203.1e9},
                               {"label", "2 threads"}},
                              {{"run_name", "BM_FmaPeak/512/real_time"},
                               {"aggregate_name", "median"},
                               {"error_occurred", true}},
                              {{"run_name", "BM_KernelCausalSoftmax/0/real_time"},
                               {"aggregate_name", "mean"},
                               {"real_time", 1}}}}};
  testing::write_file(dir / "kb.json", j.dump());
  const auto r = testing::run_command(py_script_("kernel_bench_table.py", dir / "kb.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("| memory copy | - | - | 20.0 | 100% |"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("| CausalSoftmax | float32 | 2 | 10.0 | 50% |"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("| Attention | float32 | 4.00 | 2.00 | 2.00x |"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("FMA peak (256-bit vectors, 2 threads): 203.1 GFLOP/s"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("512-bit"), std::string::npos) << r.output;  // skipped: no figure
}

TEST(Scripts, ThreadEnvCheckSaysWhetherTheRunsShareOneThreadEnvironment) {
  testing::TempDir dir;
  for (const auto& [name, omp] :
       {std::pair<const char*, const char*>{"a", "2"}, {"b", "2"}, {"c", "1"}}) {
    std::filesystem::create_directories(dir / name);
    testing::write_file(
        dir / name + "/env.json",
        nlohmann::json{{"thread_env", {{"OMP_NUM_THREADS", omp}, {"MKL_NUM_THREADS", nullptr}}}}
            .dump());
  }
  const auto same =
      testing::run_command(py_script_("thread_env_check.py", (dir / "a") + " " + (dir / "b")));
  EXPECT_EQ(same.exit_code, 0) << same.output;
  EXPECT_NE(same.output.find("the same in all 2 runs: {'OMP_NUM_THREADS': '2'}"), std::string::npos)
      << same.output;
  const auto differ =
      testing::run_command(py_script_("thread_env_check.py", (dir / "a") + " " + (dir / "c")));
  EXPECT_NE(differ.output.find("WARNING: the runs' thread environments differ"), std::string::npos)
      << differ.output;
  // A run that failed before writing env.json is named and left out; the others still compare.
  std::filesystem::create_directories(dir / "failed");
  const auto partial = testing::run_command(
      py_script_("thread_env_check.py", (dir / "a") + " " + (dir / "failed") + " " + (dir / "b")));
  EXPECT_EQ(partial.exit_code, 0) << partial.output;
  EXPECT_NE(
      partial.output.find(dir / "failed" + ": no readable env.json (FileNotFoundError); left out"),
      std::string::npos)
      << partial.output;
  EXPECT_NE(partial.output.find("the same in all 2 runs"), std::string::npos) << partial.output;
}

TEST(Scripts, FlashBackendUsedNamesTheKernelOrTheMissingFolder) {
  testing::TempDir dir;
  const std::string run = dir / "flash_handcraft_layer2_bfloat16_flash";
  std::filesystem::create_directories(run);
  testing::write_file(run + "/summary.json", R"({"sdpa_backend_used": "flash"})");
  const auto r =
      testing::run_command(py_script_("flash_backend_used.py", dir.path() + " bfloat16"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "bfloat16: the flash run's attention kernel: flash\n");
  EXPECT_EQ(
      testing::run_command(py_script_("flash_backend_used.py", dir.path() + " float32")).exit_code,
      2);
}

TEST(Scripts, HostNetTableFitsTheRingModelToTheMeasuredAllReduces) {
  testing::TempDir dir;
  auto run = [&](const std::string& name, double step_ms, double comm_ms) {
    std::filesystem::create_directories(dir / name);
    testing::write_file(dir / name + "/summary.json",
                        nlohmann::json{{"params", 1000000},
                                       {"step_time_ms", {{"median", step_ms}}},
                                       {"communication_ms", comm_ms}}
                            .dump());
  };
  run("one_x", 100, 0);
  run("seq_none_x", 120, 20);
  run("ov_none_x", 110, 5);
  // 1 KiB in 0.2 ms and 1 MiB in 2 ms: alpha = 0.1 ms, busbw on the free link 1 MiB / 2 ms.
  testing::write_file(dir / "allreduce_none.log", "| 1024 | 0.2 |\n| 1048576 | 2.0 |\n");
  const auto r = testing::run_command(py_script_("host_net_table.py", dir.path() + " none"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("1000000 parameters = 4.0 MB of float32 gradients; 1 process: 100 "
                          "ms/step; alpha = 0.10 ms"),
            std::string::npos)
      << r.output;
  // ring(2, 1 MiB) = 2 (2-1)/2 * 1 MiB / busbw + 2 alpha = 2.0 + 0.2 ms.
  EXPECT_NE(r.output.find("| unlimited (veth) | 2.0 | 2.2 | 0.524 | 120 | 20 | 110 | 5 |"),
            std::string::npos)
      << r.output;
}

// gpu_bench.sh reads three words from torch_build_info.py: torch's version, the folder that
// holds its CMake config, and its C++ ABI (1: the C++11 one).
TEST(Scripts, TorchBuildInfoPrintsVersionCMakePrefixAndAbi) {
  if (testing::run_command(TB_PYTHON " -c 'import torch'").exit_code != 0) {
    GTEST_SKIP() << TB_PYTHON " has no torch";
  }
  const auto r = testing::run_command(py_script_("torch_build_info.py", ""));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream words(r.output);
  std::string version, prefix, abi, more;
  words >> version >> prefix >> abi;
  EXPECT_FALSE(words >> more) << r.output;
  EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(version[0]))) << r.output;
  EXPECT_TRUE(fs::exists(prefix + "/Torch/TorchConfig.cmake")) << r.output;
  EXPECT_TRUE(abi == "0" || abi == "1") << r.output;
  EXPECT_EQ(testing::run_command(py_script_("torch_build_info.py", "extra")).exit_code, 2);
}

// compare.sh's first table: one row per configuration and dtype in the order the runs came
// (the matrix's), repetitions as a median with n= and range, the ratio to bench eager of the
// same dtype, and the status.
TEST(Scripts, CompareTableHasOneRowPerConfigurationInTheMatrixOrder) {
  testing::TempDir dir;
  auto run = [](const std::string& label, const std::string& dtype, double seq,
                const std::string& status) {
    return nlohmann::json{{"configuration", label}, {"dtype", dtype},
                          {"sequences_per_s", seq}, {"tokens_per_s", seq * 256},
                          {"mfu_percent", 10.0},    {"status", status},
                          {"unstable", false}};
  };
  const nlohmann::json report = {
      {"runs",
       {run("libtorch handcraft", "float32", 10, "completed"),
        run("libtorch handcraft torchscript", "float32", 12, "completed"),
        run("bench handcraft fused fused_adam", "float32", 16, "completed"),
        run("bench handcraft fused fused_adam", "float32", 14, "completed"),
        run("bench handcraft fused fused_adam", "float32", 15, "completed"),
        run("pytorch handcraft", "float32", 8, "completed"),
        run("jax handcraft", "float32", 0, "failed")}}};
  testing::write_file(dir / "report.json", report.dump());
  testing::write_file(dir / "failed.tsv",
                      "model=handcraft dtype=bfloat16 compile=none flash=0\tbench: failed: out of "
                      "memory | retry\n");
  const auto r = testing::run_command(TB_PYTHON " " TB_SOURCE_DIR
                                                "/scripts/compare_table.py "
                                                "--failed " +
                                      (dir / "failed.tsv") + " < " + (dir / "report.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const size_t eager = r.output.find("| libtorch handcraft | float32 | 10.00 | 2,560 | 1.00x |");
  const size_t ts =
      r.output.find("| libtorch handcraft torchscript | float32 | 12.00 | 3,072 | 1.20x |");
  const size_t fused = r.output.find(
      "| bench handcraft fused fused_adam | float32 | 15.00 (n=3, 14.00-16.00) | 3,840 | 1.50x "
      "| 10.0 | completed |");
  const size_t py = r.output.find("| pytorch handcraft | float32 | 8.00 | 2,048 | 0.80x |");
  const size_t jax = r.output.find("| jax handcraft | float32 | - | - | - | - | failed |");
  // A configuration that left no result: its flags, its dtype and bench's line, last.
  EXPECT_NE(r.output.find("| jax handcraft | float32 | - | - | - | - | failed |\n| "
                          "model=handcraft dtype=bfloat16 compile=none flash=0 | bfloat16 | - | "
                          "- | - | - | failed: out of memory / retry |"),
            std::string::npos)
      << r.output;
  ASSERT_NE(eager, std::string::npos) << r.output;
  ASSERT_NE(ts, std::string::npos) << r.output;
  ASSERT_NE(fused, std::string::npos) << r.output;
  ASSERT_NE(py, std::string::npos) << r.output;
  ASSERT_NE(jax, std::string::npos) << r.output;
  EXPECT_LT(eager, ts);
  EXPECT_LT(ts, fused);
  EXPECT_LT(fused, py);
  EXPECT_LT(py, jax);
  EXPECT_LT(r.output.find('\n'), 120u) << "a header a person reads: " << r.output;
}

// plot_runs.py's curves start at step 0 (the loss before any update) and put each window's
// mean loss at the window's middle, in steps and in seconds; an evaluation stands at its step,
// its training seconds (train_s) and its tokens (step x batch x seq_len).
TEST(Scripts, PlotCurvesStartAtStepZeroWithWindowsAtTheirMiddle) {
  testing::TempDir dir;
  testing::write_file(dir / "config.json", R"({"batch_size": 4, "seq_len": 16})");
  testing::write_file(dir / "summary.json", R"({"status": "completed"})");
  testing::write_file(dir / "metrics.jsonl",
                      "{\"step\": 0, \"initial_loss\": 5.5, \"elapsed_s\": 0.0}\n"
                      "{\"step\": 20, \"loss\": 3.0, \"window_steps\": 20, "
                      "\"sequences_per_s\": 8.0, \"elapsed_s\": 12.0}\n"
                      "{\"step\": 20, \"valid_loss\": 2.9, \"valid_bpb\": 4.2, "
                      "\"train_s\": 10.5}\n");
  const auto r =
      testing::run_command(std::string(TB_PYTHON) +
                           " -c \"import sys; sys.path.insert(0, '" TB_SOURCE_DIR
                           "/scripts'); import plot_runs; s, train, valid = plot_runs.read_run('" +
                           dir.path() + "'); print(train, valid)\"");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // 20 steps of 4 sequences at 8 seq/s took 10 s: the window's middle is step 10 at 12 - 5 s.
  EXPECT_NE(r.output.find("[(0, 0.0, 5.5), (10.0, 7.0, 3.0)] [(20, 2.9, 10.5, 1280)]"),
            std::string::npos)
      << r.output;
}

// plot_runs.py's bars and legends come as compare.sh's first table reads: by dtype, then
// framework, then the matrix's entry (2_ before 10_), whatever order the report found them in.
TEST(Scripts, PlotsComeByDtypeThenFrameworkThenTheMatrixEntry) {
  const std::string runs =
      "[dict(dir='c/bench/10_fused_bf16', configuration='bench handcraft fused', "
      "dtype='bfloat16'), dict(dir='c/py_float32', configuration='pytorch handcraft', "
      "dtype='float32'), dict(dir='c/jax_bfloat16', configuration='jax handcraft', "
      "dtype='bfloat16'), dict(dir='c/bench/2_eager_bf16/rep-1', configuration='libtorch "
      "handcraft', dtype='bfloat16'), dict(dir='c/bench/1_eager_f32', configuration='libtorch "
      "handcraft', dtype='float32')]";
  const auto r =
      testing::run_command(std::string(TB_PYTHON) +
                           " -c \"import sys; sys.path.insert(0, '" TB_SOURCE_DIR
                           "/scripts'); import plot_runs; print(' '.join(r['dir'] for r in "
                           "plot_runs.comparison_order(" +
                           runs + ")))\"");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output,
            "c/bench/1_eager_f32 c/py_float32 c/bench/2_eager_bf16/rep-1 c/bench/10_fused_bf16 "
            "c/jax_bfloat16\n");
}

}  // namespace
}  // namespace trainbench
