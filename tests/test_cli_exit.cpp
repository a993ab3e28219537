// The bench binary end to end: exit codes, one-line errors, nothing created on bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;
using testing::run_bench;

const char* kTiny =
    " --num_layer 1 --d_model 32 --num_heads 2 --ff_dim 64 --seq_len 32 --batch_size 4"
    " --steps 3 --warmup_steps 1 --log_every 1 --threads 1 --device cpu --peak_tflops 1";

TEST(Cli, HelpExitsZeroAndListsFlags) {
  const auto r = run_bench("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("--num_layer"), std::string::npos);
  EXPECT_NE(r.output.find("--preset"), std::string::npos);
}

TEST(Cli, BadFlagsExitTwoWithOneLineAndCreateNothing) {
  testing::TempDir dir;
  const std::string save = " --save_dir " + (dir / "r");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--num_layer 0", "bench: error: --num_layer: 0 is out of range; allowed: >= 1\n"},
      {"--dtype fp8",
       "bench: error: --dtype: 'fp8' is not allowed; use one of "
       "float32|float16|bfloat16\n"},
      {"--batch_size ten",
       "bench: error: --batch_size: 'ten' is not an integer; allowed: an "
       "integer\n"},
      {"--bogus 1",
       "bench: error: --bogus: unknown flag; see bench --help for the allowed "
       "flags\n"},
      {"stray",
       "bench: error: unexpected argument 'stray'; flags take the form --name value "
       "(see bench --help)\n"},
  };
  for (const auto& [args, expected] : cases) {
    const auto r = run_bench(args + save);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_EQ(r.output, expected) << args;
  }
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(Cli, BadDataExitsTwoAndCreatesNothing) {
  testing::TempDir dir;
  testing::write_file(dir / "tiny.txt", "just a few bytes");
  const std::string save = " --save_dir " + (dir / "out" + "/r");
  for (const std::string& data : {dir / "missing.txt", dir / "tiny.txt", dir.path()}) {
    const auto r = run_bench(std::string(kTiny) + save + " --data " + data);
    EXPECT_EQ(r.exit_code, 2) << data << r.output;
    EXPECT_NE(r.output.find("bench: error: --data: '" + data + "'"), std::string::npos) << r.output;
  }
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(Cli, SmokeRunExitsZeroPrintsTheTableAndRefusesToOverwrite) {
  testing::TempDir dir;
  const std::string args = std::string(kTiny) + " --save_dir " + (dir / "r");
  const auto r = run_bench(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("| handcraft | float32 | 1 | 0 | 0 | cpu |"), std::string::npos)
      << r.output;
  const std::string run_dir = dir / "r_handcraft_layer1_float32";
  for (const char* f : {"config.json", "env.json", "metrics.jsonl", "summary.json"}) {
    EXPECT_TRUE(fs::exists(run_dir + "/" + f)) << f;
  }
  const std::string summary = testing::read_file(run_dir + "/summary.json");
  const auto again = run_bench(args);
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.output.find("already holds results"), std::string::npos) << again.output;
  EXPECT_EQ(testing::read_file(run_dir + "/summary.json"), summary);
}

TEST(Cli, CompiledRunRecordsItsBackendAndSavesTheNetwork) {
  testing::TempDir dir;
  const auto r = run_bench(std::string(kTiny) + " --steps 4 --warmup_steps 2 --compile 1" +
                           " --save_model " + (dir / "net.pt") + " --save_dir " + (dir / "r"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string summary =
      testing::read_file(dir / "r_handcraft_layer1_float32_compiled/summary.json");
  EXPECT_NE(summary.find("\"compile_backend\": \"torchscript"), std::string::npos) << summary;
  EXPECT_EQ(summary.find("\"compile_seconds\": 0.0,"), std::string::npos) << summary;
  EXPECT_GT(fs::file_size(dir / "net.pt"), 10'000u);
}

// A signal from outside: the current step finishes, the files are written and parse, the
// status says interrupted and the exit status is 128 + the signal.
TEST(Cli, SigintAndSigtermStopTheRunWithItsFilesWhole) {
  for (const auto& [sig, code] : {std::pair<std::string, int>{"INT", 130}, {"TERM", 143}}) {
    testing::TempDir dir;
    const std::string run_dir = dir / "r_handcraft_layer1_float32";
    const auto r = testing::run_command(
        "bash -c '" + std::string(TB_BENCH_EXE) + " " + kTiny + " --steps 100000 --save_dir " +
        (dir / "r") + " >/dev/null 2>&1 & pid=$!; for i in $(seq 600); do [ -s " + run_dir +
        "/metrics.jsonl ] && break; sleep 0.05; done; kill -" + sig +
        " $pid; wait $pid; echo exit=$?'");
    EXPECT_NE(r.output.find("exit=" + std::to_string(code)), std::string::npos) << r.output;
    const auto summary = nlohmann::json::parse(testing::read_file(run_dir + "/summary.json"));
    EXPECT_EQ(summary["status"], "interrupted");
    EXPECT_EQ(summary["stop_signal"], code - 128);
    EXPECT_GT(summary["steps_done"].get<int64_t>(), 0);
    EXPECT_LT(summary["steps_done"].get<int64_t>(), 100000);
    std::istringstream lines(testing::read_file(run_dir + "/metrics.jsonl"));
    int n = 0;
    for (std::string line; std::getline(lines, line); ++n) {
      EXPECT_NO_THROW(nlohmann::json::parse(line)) << line;
    }
    EXPECT_GT(n, 0);
    for (const char* f : {"/config.json", "/env.json"}) {
      EXPECT_NO_THROW(nlohmann::json::parse(testing::read_file(run_dir + f))) << f;
    }
  }
}

TEST(Cli, UnwritableSaveDirExitsOneBeforeTrainingAndLeavesNothing) {
  testing::TempDir dir;
  testing::write_file(dir / "file", "not a folder");
  const auto r = run_bench(std::string(kTiny) + " --save_dir " + (dir / "file") + "/sub/r");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("bench: failed: cannot create run folder '" + (dir / "file") +
                          "/sub/r_handcraft_layer1_float32'"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("step 1/"), std::string::npos);  // no training step ran
  EXPECT_EQ(testing::read_file(dir / "file"), "not a folder");
}

// A write that fails mid-run (here: the temp path of the step-2 checkpoint is a non-empty
// folder) ends the run as "failed" with its summary written; the step-1 checkpoint survives.
TEST(Cli, AFailedCheckpointWriteMidRunIsRecordedAndKeepsThePreviousOne) {
  testing::TempDir dir;
  const std::string run_dir = dir / "r_handcraft_layer1_float32";
  fs::create_directories(run_dir + "/checkpoint-2.pt.tmp");
  testing::write_file(run_dir + "/checkpoint-2.pt.tmp/blocker", "x");
  const auto r = run_bench(std::string(kTiny) + " --checkpoint_every 1 --overwrite 1 --save_dir " +
                           (dir / "r"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("bench: failed: cannot write checkpoint"), std::string::npos) << r.output;
  const auto summary = nlohmann::json::parse(testing::read_file(run_dir + "/summary.json"));
  EXPECT_EQ(summary["status"], "failed");
  EXPECT_NE(summary["error_message"].get<std::string>().find("checkpoint-2.pt"), std::string::npos);
  EXPECT_EQ(summary["steps_done"], 2);
  EXPECT_TRUE(fs::exists(run_dir + "/checkpoint-1.pt"));
}

TEST(Cli, DivergedRunExitsOne) {
  testing::TempDir dir;
  const auto r = run_bench(std::string(kTiny) + " --fault_nan_step 2 --save_dir " + (dir / "r"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("diverged"), std::string::npos);
}

}  // namespace
}  // namespace trainbench
