// The GPU call (scripts/gpu_bench.sh) rehearsed on this CPU machine by scripts/gpu_rehearse.sh,
// with our Debian packages hidden as the GPU machine lacks them: configure and protoc from
// gpu-deps/ alone, every stage's files from the carried binaries with tiny CPU shapes, a second
// call resuming from the first's files, and the refusals that come before anything is built.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;

bool gpu_call_can_rehearse() {
  return testing::run_command("[ \"$(id -u)\" = 0 ] && unshare -m true").exit_code == 0;
}
std::string gpu_call_rehearsal(const std::string& env, const testing::TempDir& dir,
                               const std::string& out) {
  return "cd " TB_SOURCE_DIR " && " + env + " PYTHON=" TB_PYTHON " BUILD_DIR=" + (dir / "build") +
         " bash scripts/gpu_rehearse.sh " + (dir / out);
}
// The stages.tsv lines without their seconds: "machine ok,build ok,...".
std::string gpu_call_stages(const std::string& path) {
  std::string text = testing::read_file(path), stages;
  const std::regex line("([a-z_0-9]+)\t([a-z ]+)\t[0-9]+\n");
  for (std::sregex_iterator it(text.begin(), text.end(), line), end; it != end; ++it) {
    stages += (stages.empty() ? "" : ",") + (*it)[1].str() + " " + (*it)[2].str();
  }
  return stages;
}

// Configure and the protoc-generated TensorBoard writer from gpu-deps/ and the Python's torch
// (BUILD=1: the carried binaries hidden too, as where they do not start).
TEST(GpuCall, ConfiguresWithoutOurDebianPackages) {
  if (!gpu_call_can_rehearse()) GTEST_SKIP() << "needs root and unshare -m";
  testing::TempDir dir;
  const auto r = testing::run_command(
      gpu_call_rehearsal("BUILD=1 TARGETS=trainbench_tensorboard", dir, "out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("carries [0-9]+ MiB of 64"))) << r.output;
  EXPECT_NE(r.output.find("no bench among TARGETS (trainbench_tensorboard): stopping after the "
                          "build"),
            std::string::npos)
      << r.output;
  const std::string configure = testing::read_file(dir / "build/logs/configure.log");
  EXPECT_NE(configure.find("Found Protobuf: " + (dir / "build/deps/proto/")), std::string::npos)
      << configure;
  EXPECT_NE(configure.find("Found nlohmann_json: " + (dir / "build/deps/common/")),
            std::string::npos);
  EXPECT_EQ(testing::read_file(dir / "out/build.txt").rfind("carried binaries: none", 0), 0u);
  EXPECT_EQ(gpu_call_stages(dir / "out/stages.tsv"), "machine ok,build ok");
}

// The whole call with the carried binaries (this build's, as gpu_deps.sh bin puts them), one
// dtype: the eight files, the stages, bench's six columns and the four peers' in the report;
// then a call with RESUME keeps the first one's tests and runs without running them again.
TEST(GpuCall, TheRehearsalLeavesEveryStagesFilesAndAResumeKeepsThem) {
  if (!gpu_call_can_rehearse()) GTEST_SKIP() << "needs root and unshare -m";
  testing::TempDir dir;
  const std::string bin_from = fs::path(TB_BENCH_EXE).parent_path().string();
  const auto r =
      testing::run_command(gpu_call_rehearsal("DTYPES=float32 BIN_FROM=" + bin_from, dir, "out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::set<std::string> files;
  for (const auto& e : fs::directory_iterator(dir / "out")) files.insert(e.path().filename());
  EXPECT_EQ(files, (std::set<std::string>{"build.txt", "machine.txt", "profile.md", "report.json",
                                          "report.md", "runs.tar.gz", "stages.tsv", "tests.txt"}));
  EXPECT_EQ(gpu_call_stages(dir / "out/stages.tsv"),
            "machine ok,build ok,tests ok,profile ok,runs_float32 ok");
  // The profile stage's report: its three runs (the multi-tensor Adam's too), each category
  // beside its bound.
  const std::string profile = testing::read_file(dir / "out/profile.md");
  EXPECT_NE(profile.find("x bound)"), std::string::npos) << profile;
  EXPECT_NE(profile.find("flash fused_adam bfloat16 |"), std::string::npos) << profile;
  EXPECT_NE(profile.find("flash fused_adam adam-multi bfloat16 |"), std::string::npos) << profile;
  EXPECT_NE(profile.find("| time of | host ops | host ops |"), std::string::npos) << profile;
  EXPECT_EQ(testing::read_file(dir / "out/build.txt").rfind("carried binaries start here", 0), 0u);
  const std::string machine = testing::read_file(dir / "out/machine.txt");
  std::smatch total;
  ASSERT_TRUE(std::regex_search(machine, total, std::regex("total +([0-9]+)"))) << machine;
  EXPECT_LE(std::stoi(total[1]), 480) << machine;  // the real call's estimate, one dtype
  const std::string tests = testing::read_file(dir / "out/tests.txt");
  EXPECT_NE(tests.find("[  PASSED  ]"), std::string::npos) << tests;
  EXPECT_EQ(tests.find("FAILED"), std::string::npos) << tests;
  const auto report = nlohmann::json::parse(testing::read_file(dir / "out/report.json"));
  std::multiset<std::string> labels;
  for (const auto& run : report["runs"]) labels.insert(run["configuration"].get<std::string>());
  EXPECT_EQ(
      labels,
      (std::multiset<std::string>{
          "libtorch handcraft", "libtorch handcraft torchscript", "libtorch handcraft flash",
          "bench handcraft keep_memory", "bench handcraft parallel-dropout",
          "bench handcraft fused fused_adam", "bench handcraft fused flash fused_adam",
          "libtorch torch", "pytorch handcraft", "pytorch handcraft compiled",
          "pytorch handcraft compiled max-autotune", "pytorch handcraft flash", "jax handcraft"}));
  const auto listing = testing::run_command("tar -tzf " + (dir / "out/runs.tar.gz"));
  EXPECT_NE(listing.output.find("float32/bench/1_handcraft_layer1_float32/summary.json"),
            std::string::npos)
      << listing.output;

  const auto again = testing::run_command(
      gpu_call_rehearsal("DTYPES=float32 RESUME=" + (dir / "out"), dir, "out2"));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(gpu_call_stages(dir / "out2/stages.tsv"),
            "machine ok,build ok,tests ok,profile ok,runs_float32 ok");
  EXPECT_EQ(again.output.find("== profile"), std::string::npos) << again.output;
  EXPECT_EQ(again.output.find("== runs: float32"), std::string::npos) << again.output;
  EXPECT_EQ(nlohmann::json::parse(testing::read_file(dir / "out2/report.json"))["runs"].size(),
            13u);
}

// The call's new items (scripts/gpu_items.py): each runs unless a GPU test of it failed in the
// tests stage; one that failed is named with its failed tests and left out, the others kept; a
// missing summary is one line, exit 2.
TEST(GpuCall, ANewItemWhoseGpuTestFailedIsNamedAndLeftOut) {
  testing::TempDir dir;
  testing::write_file(dir / "passed.txt", "[  PASSED  ] 40 tests.\n[  SKIPPED ] 2 tests\n");
  testing::write_file(dir / "failed.txt",
                      "[  PASSED  ] 38 tests.\n[  FAILED  ] 2 tests, listed below:\n"
                      "[  FAILED  ] KernelTableBits.ADAM_LIST(dtype=bf16,n=1,w=3,copy=dtype)\n"
                      "[  FAILED  ] KernelTableBitsV2.STORE(dtype=f16)\n");
  const auto items = [&](const std::string& file) {
    return testing::run_command(TB_PYTHON " " TB_SOURCE_DIR "/scripts/gpu_items.py " + file);
  };
  EXPECT_EQ(items(dir / "passed.txt").output,
            "--cuda_graph 1\n--adam_kernel multi\n--gpu_kernels v2\n");
  const auto left = items(dir / "failed.txt");
  EXPECT_EQ(left.exit_code, 0);
  EXPECT_EQ(left.output,
            "--cuda_graph 1\nleft out: --adam_kernel multi (failed: "
            "KernelTableBits.ADAM_LIST(dtype=bf16,n=1,w=3,copy=dtype))\n"
            "left out: --gpu_kernels v2 (failed: KernelTableBitsV2.STORE(dtype=f16))\n");
  const auto missing = items(dir / "none.txt");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.output,
            "gpu_items.py: TESTS_TXT: No such file or directory: '" + (dir / "none.txt") + "'\n");
}

// What stops the call before anything is built: one line, exit 2, no output folder.
TEST(GpuCall, BadInputIsOneLineAndExitTwoBeforeAnythingIsBuilt) {
  testing::TempDir dir;
  // A tree of the scripts alone (no gpu-deps/), and one with a stand-in .deb and a Python
  // whose torch is 2.10, or 2.11 without CUDA.
  for (const char* tree : {"bare", "deps", "stale"}) {
    fs::create_directories(dir / tree);
    fs::copy(TB_SOURCE_DIR "/scripts", dir / (std::string(tree) + "/scripts"),
             fs::copy_options::recursive);
  }
  fs::create_directories(dir / "deps/gpu-deps");
  testing::write_file(dir / "deps/gpu-deps/stand-in.deb", "");
  // Carried binaries of other sources than the tree's (their SOURCES hash differs).
  fs::create_directories(dir / "stale/gpu-deps/bin");
  fs::create_directories(dir / "stale/src");
  testing::write_file(dir / "stale/gpu-deps/stand-in.deb", "");
  testing::write_file(dir / "stale/gpu-deps/bin/bench", "");
  testing::write_file(dir / "stale/gpu-deps/bin/SOURCES", "0123456789abcdef\n");
  testing::write_file(dir / "stale/src/a.cpp", "int a;\n");
  testing::write_file(dir / "py_old",
                      "#!/bin/sh\ncase \"$*\" in *torch_build_info*) echo 2.10.0 /opt/t 1 ;;\n"
                      "*version.cuda*) echo 12.8 ;; *) exec " TB_PYTHON " \"$@\" ;; esac\n");
  testing::write_file(dir / "py_cpu",
                      "#!/bin/sh\ncase \"$*\" in *torch_build_info*) echo 2.11.0 /opt/t 1 ;;\n"
                      "*version.cuda*) echo ;; *) exec " TB_PYTHON " \"$@\" ;; esac\n");
  fs::permissions(dir / "py_old", fs::perms::owner_all);
  fs::permissions(dir / "py_cpu", fs::perms::owner_all);
  const std::string bare = "bash " + (dir / "bare/scripts/gpu_bench.sh") + " " + (dir / "out");
  const std::string deps = "bash " + (dir / "deps/scripts/gpu_bench.sh") + " " + (dir / "out");
  const std::pair<std::string, std::string> cases[] = {
      {"REHEARSAL=1 DTYPES=float64 " + bare,
       "gpu_bench.sh: DTYPES: 'float64' is not allowed; use some of: bfloat16 float16 float32"},
      {"REHEARSAL=1 RESUME=" + (dir / "none") + " " + bare,
       "gpu_bench.sh: RESUME: '" + (dir / "none") + "' holds no stages.tsv of an earlier call"},
      {"REHEARSAL=1 " + bare, "gpu_bench.sh: gpu-deps/ holds no .deb files"},
      {"REHEARSAL=1 PYTHON=" + (dir / "py_old") + " " + deps,
       "gpu_bench.sh: torch 2.10.0 at /opt/t is not 2.11"},
      {"REHEARSAL=1 PYTHON=" + (dir / "py_cpu") + " " + deps,
       "gpu_bench.sh: torch 2.11.0 has no CUDA"},
      {"REHEARSAL=1 PYTHON=" + (dir / "py_old") + " bash " + (dir / "stale/scripts/gpu_bench.sh") +
           " " + (dir / "out"),
       "gpu_bench.sh: gpu-deps/bin was built from other sources (0123456789abcdef) than this "
       "tree ("},
      {"PYTHON=" TB_PYTHON " " + bare, "gpu_bench.sh: no CUDA device"},
  };
  const auto estimate =
      testing::run_command(TB_PYTHON " " TB_SOURCE_DIR "/scripts/gpu_estimate.py --dtypes float64");
  EXPECT_EQ(estimate.exit_code, 2) << estimate.output;
  EXPECT_EQ(estimate.output,
            "gpu_estimate.py: dtypes ['float64'] / steps 60: use bfloat16, float16, float32 and "
            "steps >= 1\n");
  const bool gpu = testing::run_command("nvidia-smi -L").exit_code == 0;
  for (const auto& [command, line] : cases) {
    if (gpu && line == "gpu_bench.sh: no CUDA device") continue;
    const auto r = testing::run_command(command);
    EXPECT_EQ(r.exit_code, 2) << command << "\n" << r.output;
    EXPECT_EQ(r.output.rfind(line, 0), 0u) << command << "\n" << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    EXPECT_FALSE(fs::exists(dir / "out")) << command;
  }
}

// gpu_deps.sh bin carries bench and trainbench_tests only when no source is newer than a binary
// built from it: an edited test (tests/) against trainbench_tests alone (bench is not relinked
// for it), src/ against both, benchmarks/ against neither; a stale one is one line, exit 2.
TEST(GpuCall, TheCarriedBinariesAreRefusedWhereASourceIsNewerThanOneBuiltFromIt) {
  testing::TempDir dir;
  fs::copy(TB_SOURCE_DIR "/scripts", dir / "scripts", fs::copy_options::recursive);
  for (const char* d : {"src", "tests", "benchmarks", "build/tests"})
    fs::create_directories(dir / d);
  const auto now = fs::file_time_type::clock::now();
  const auto at = [&](const std::string& path, int minutes_ago) {
    testing::write_file(dir / path, "#!/bin/sh\n");
    fs::permissions(dir / path, fs::perms::owner_all);
    fs::last_write_time(dir / path, now - std::chrono::minutes(minutes_ago));
  };
  const auto bin = [&] {
    return testing::run_command("cd " + dir.path() + " && bash scripts/gpu_deps.sh bin build");
  };
  at("src/a.cpp", 50);
  at("build/bench", 40);
  at("tests/t.cpp", 30);
  at("build/tests/trainbench_tests", 20);
  at("benchmarks/b.cpp", 10);
  const auto fresh = bin();
  EXPECT_EQ(fresh.exit_code, 0) << fresh.output;
  EXPECT_TRUE(fs::exists(dir / "gpu-deps/bin/trainbench_tests")) << fresh.output;
  const auto refused = [&](const std::string& stale) {
    const auto r = bin();
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(r.output.rfind("gpu_deps.sh: " + stale + "; build first", 0), 0u) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  };
  at("src/a.cpp", 30);  // newer than bench, older than trainbench_tests
  refused("src/a.cpp is newer than build/bench");
  at("src/a.cpp", 50);
  at("tests/t.cpp", 5);
  refused("tests/t.cpp is newer than build/tests/trainbench_tests");
}

}  // namespace
}  // namespace trainbench
