// The bench binary end to end: exit codes, one-line errors, nothing created on bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "trainbench/app/cli.h"
#include "trainbench/core/flags.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;
using testing::run_bench;

const char* kTinyCli =
    " --num_layer 1 --d_model 32 --num_heads 2 --ff_dim 64 --seq_len 32 --batch_size 4"
    " --steps 3 --warmup_steps 1 --log_every 1 --threads 1 --device cpu --peak_tflops 1";

TEST(Cli, HelpExitsZeroAndListsFlags) {
  const auto r = run_bench("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("--num_layer"), std::string::npos);
  EXPECT_NE(r.output.find("--preset"), std::string::npos);
}

// Not a terminal (a pipe, like a log file): each warm-up step and the first three timed steps
// get a line, then one per window, and the first timed step a projection of the run.
TEST(Cli, ALogThatIsNotATerminalSpeaksFromTheFirstStep) {
  testing::TempDir dir;
  const auto r = run_bench(
      " --num_layer 1 --d_model 32 --num_heads 2 --ff_dim 64 --seq_len 32 --batch_size 4"
      " --steps 12 --warmup_steps 2 --log_every 10 --threads 1 --device cpu --peak_tflops 1"
      " --save_dir " +
      (dir / "r"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const std::string line :
       {"step 1/12 (warm-up)  loss ", "step 2/12 (warm-up)  loss ", "step 3/12  loss ",
        "step 4/12  loss ", "step 5/12  loss ", "step 10/12  loss ", "step 12/12  loss "}) {
    EXPECT_EQ(testing::count_of(r.output, line), 1) << line << r.output;
  }
  for (const std::string line : {"step 6/12", "step 9/12", "step 11/12"}) {
    EXPECT_EQ(r.output.find(line), std::string::npos) << line << r.output;
  }
  EXPECT_EQ(testing::count_of(r.output, "projected: "), 1) << r.output;
  EXPECT_NE(r.output.find("for the 9 steps left at "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("sized for a GPU"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("\r"), std::string::npos);  // no live line outside a terminal
}

// A CPU run projected past ten minutes says so after its first timed step, with the hint.
TEST(Cli, ALongCpuRunIsProjectedWithAHint) {
  testing::TempDir dir;
  const auto r = run_bench(
      " --num_layer 1 --d_model 32 --num_heads 2 --ff_dim 64 --seq_len 32 --batch_size 4"
      " --steps 10000000 --warmup_steps 1 --threads 1 --device cpu --peak_tflops 1"
      " --fault_exit_step 4 --save_dir " +
      (dir / "r"));
  EXPECT_EQ(r.exit_code, 3) << r.output;  // the testing aid's exit, after the projection
  EXPECT_NE(r.output.find("for the 9999998 steps left at "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("sized for a GPU: --preset quick"), std::string::npos) << r.output;
}

// `bench --resume DIR` alone continues a run that stopped (here: crashed before step 11) with
// the flags recorded in its config.json, to the straight run's losses; timing figures say which
// session they cover and the wall time goes on; an explicit flag that may not change is refused.
TEST(Cli, ResumeAloneContinuesTheRunWithItsRecordedFlags) {
  testing::TempDir dir;
  const std::string args =
      " --num_layer 1 --d_model 32 --num_heads 2 --ff_dim 64 --seq_len 32 --batch_size 4"
      " --steps 16 --warmup_steps 1 --log_every 1 --eval_every 0 --checkpoint_every 8"
      " --threads 1 --device cpu --peak_tflops 1";
  ASSERT_EQ(run_bench(args + " --save_dir " + (dir / "straight")).exit_code, 0);
  const auto crashed = run_bench(args + " --fault_exit_step 11 --save_dir " + (dir / "split"));
  ASSERT_EQ(crashed.exit_code, 3) << crashed.output;
  const std::string split = dir / "split_handcraft_layer1_float32";
  const auto resumed = run_bench("--resume " + split);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const auto a = testing::window_values(dir / "straight_handcraft_layer1_float32");
  const auto b = testing::window_values(split);
  ASSERT_EQ(a.size(), 16u);
  ASSERT_EQ(b.size(), 16u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << "step " << i + 1;
  const auto elapsed = testing::window_values(split, "elapsed_s");
  for (size_t i = 1; i < elapsed.size(); ++i) EXPECT_GE(elapsed[i], elapsed[i - 1]) << i;
  const auto s = nlohmann::json::parse(testing::read_file(split + "/summary.json"));
  EXPECT_EQ(s["resumed_from_step"], 8);
  EXPECT_EQ(s["session"]["first_step"], 9);
  EXPECT_EQ(s["session"]["last_step"], 16);
  EXPECT_EQ(s["steps_timed"], 7);  // steps 10-16: the resumed session's first step is warm-up
  EXPECT_GT(s["total_seconds"].get<double>(), s["session"]["seconds"].get<double>());
  const auto refused = run_bench("--resume " + split + " --lr 0.5 --steps 20");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.output.find("these flags differ from the run in '" + split + "': --lr"),
            std::string::npos)
      << refused.output;
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
       "bench: error: --bogus: unknown flag (see bench --help for the allowed "
       "flags)\n"},
      {"--num_layers 2",
       "bench: error: --num_layers: unknown flag; did you mean --num_layer? (see bench --help "
       "for the allowed flags)\n"},
      {"--lowp_gem float32",
       "bench: error: --lowp_gem: unknown flag; did you mean --lowp_gemm? (see bench --help "
       "for the allowed flags)\n"},
      {"--out_dir x",  // another trainer's spelling
       "bench: error: --out_dir: unknown flag; did you mean --save_dir? (see bench --help "
       "for the allowed flags)\n"},
      {"stray",
       "bench: error: unexpected argument 'stray'; flags take the form --name value "
       "(see bench --help)\n"},
      {"--dtype bfloat16 --dtype float32",
       "bench: error: --dtype: given twice ('bfloat16', then 'float32'); give each flag once\n"},
      {"--steps=5 --lr 0.1 --steps 6",
       "bench: error: --steps: given twice ('5', then '6'); give each flag once\n"},
  };
  for (const auto& [args, expected] : cases) {
    const auto r = run_bench(args + save);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_EQ(r.output, expected) << args;
  }
  // A model that cannot fit in memory: refused before anything is allocated, with the estimate.
  const auto big = run_bench("--d_model 99999999 --num_heads 1" + save);
  EXPECT_EQ(big.exit_code, 2) << big.output;
  EXPECT_EQ(big.output.rfind("bench: error: this configuration needs about ", 0), 0u) << big.output;
  EXPECT_NE(big.output.find(" available; use a smaller --batch_size, --num_layer, --d_model or "
                            "--seq_len (--preset quick is sized for a CPU)\n"),
            std::string::npos)
      << big.output;
  EXPECT_EQ(big.output.find("Exception raised from"), std::string::npos) << big.output;
  // More threads than cores: refused, naming the cores this process may use.
  const auto r = run_bench("--threads 100000" + save);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(r.output.rfind("bench: error: --threads: 100000 is more than the ", 0), 0u) << r.output;
  EXPECT_NE(r.output.find(" cores available to this process; allowed: 0 (all of them) to "),
            std::string::npos)
      << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(Cli, BadDataExitsTwoAndCreatesNothing) {
  testing::TempDir dir;
  testing::write_file(dir / "tiny.txt", "just a few bytes");
  const std::string save = " --save_dir " + (dir / "out" + "/r");
  for (const std::string& data : {dir / "missing.txt", dir / "tiny.txt", dir.path()}) {
    const auto r = run_bench(std::string(kTinyCli) + save + " --data " + data);
    EXPECT_EQ(r.exit_code, 2) << data << r.output;
    EXPECT_NE(r.output.find("bench: error: --data: '" + data + "'"), std::string::npos) << r.output;
  }
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(Cli, SmokeRunExitsZeroPrintsTheTableAndRefusesToOverwrite) {
  testing::TempDir dir;
  const std::string args = std::string(kTinyCli) + " --save_dir " + (dir / "r");
  const auto r = run_bench(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("| handcraft | float32 | 1 | 0 | none | cpu |"), std::string::npos)
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
  const auto r = run_bench(
      testing::merge_flags(kTinyCli, " --steps 4 --warmup_steps 2 --compile 1 --save_model " +
                                         (dir / "net.pt") + " --save_dir " + (dir / "r")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string summary =
      testing::read_file(dir / "r_handcraft_layer1_float32_compiled/summary.json");
  EXPECT_NE(summary.find("\"compile_backend\": \"torchscript"), std::string::npos) << summary;
  EXPECT_EQ(summary.find("\"compile_seconds\": 0.0,"), std::string::npos) << summary;
  EXPECT_GT(fs::file_size(dir / "net.pt"), 10'000u);
}

// A signal from outside (SIGHUP: a closed terminal, as SIGTERM): acknowledged at once, the
// current step finishes, the files are written and parse, the status says interrupted and the
// exit status is 128 + the signal.
TEST(Cli, SigintSigtermAndSighupStopTheRunWithItsFilesWhole) {
  for (const auto& [sig, code] :
       {std::pair<std::string, int>{"INT", 130}, {"TERM", 143}, {"HUP", 129}}) {
    testing::TempDir dir;
    const std::string run_dir = dir / "r_handcraft_layer1_float32";
    const auto r = testing::run_command(
        "bash -c '" + std::string(TB_BENCH_EXE) +
        testing::merge_flags(kTinyCli, " --steps 100000 --save_dir " + (dir / "r")) +
        " >/dev/null 2>" + (dir / "err") + " & pid=$!; for i in $(seq 600); do [ -s " + run_dir +
        "/metrics.jsonl ] && break; sleep 0.05; done; kill -" + sig +
        " $pid; wait $pid; echo exit=$?'");
    EXPECT_NE(r.output.find("exit=" + std::to_string(code)), std::string::npos) << r.output;
    EXPECT_NE(testing::read_file(dir / "err")
                  .find("bench: stopping after this step and writing "
                        "the results so far (again to quit now)"),
              std::string::npos)
        << sig;
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
  const auto r = run_bench(std::string(kTinyCli) + " --save_dir " + (dir / "file") + "/sub/r");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("bench: failed: cannot create run folder '" + (dir / "file") +
                          "/sub/r_handcraft_layer1_float32'"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("step 1/"), std::string::npos);  // no training step ran
  EXPECT_EQ(testing::read_file(dir / "file"), "not a folder");
}

// A write that fails mid-run (here: the step-2 checkpoint's place is a non-empty folder, which
// no rename may replace) ends the run as "failed" with its summary written; the step-1
// checkpoint survives, and no temporary file is left.
TEST(Cli, AFailedCheckpointWriteMidRunIsRecordedAndKeepsThePreviousOne) {
  testing::TempDir dir;
  const std::string run_dir = dir / "r_handcraft_layer1_float32";
  fs::create_directories(run_dir + "/checkpoint-2.pt");
  testing::write_file(run_dir + "/checkpoint-2.pt/blocker", "x");
  const auto r = run_bench(std::string(kTinyCli) +
                           " --checkpoint_every 1 --overwrite 1 --save_dir " + (dir / "r"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("bench: failed: cannot write checkpoint"), std::string::npos) << r.output;
  const auto summary = nlohmann::json::parse(testing::read_file(run_dir + "/summary.json"));
  EXPECT_EQ(summary["status"], "failed");
  EXPECT_NE(summary["error_message"].get<std::string>().find("checkpoint-2.pt"), std::string::npos);
  // A failed run's keys are the table's, its failure's key included (report/summary_fields.h).
  EXPECT_EQ(testing::keys_of(summary),
            testing::summary_keys({SummaryWhen::kAlways, SummaryWhen::kFailed}, false));
  EXPECT_EQ(summary["steps_done"], 2);
  EXPECT_TRUE(fs::exists(run_dir + "/checkpoint-1.pt"));
  for (const auto& e : fs::directory_iterator(run_dir)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  }
}

TEST(Cli, DivergedRunExitsOne) {
  testing::TempDir dir;
  const auto r = run_bench(std::string(kTinyCli) + " --fault_nan_step 2 --save_dir " + (dir / "r"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("diverged"), std::string::npos);
}

// Log lines carry the time of day and the ETA; on a terminal (a pty from `script`) the live line
// says the share done, s/step, elapsed and ETA.
TEST(Cli, ProgressSaysTheTimeStepTimeElapsedAndEta) {
  testing::TempDir dir;
  const auto r = run_bench(
      testing::merge_flags(kTinyCli, " --steps 40 --log_every 10 --save_dir " + (dir / "log")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::regex_search(
      r.output, std::regex("\\[I\\] [0-9]{2}:[0-9]{2}:[0-9]{2}Z  step 10/40  loss [0-9.]+  "
                           "[0-9.]+ seq/s  [0-9]+ tok/s  ETA [0-9]+s")))
      << r.output;
  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "no script(1)";
  const auto tty = testing::run_command(
      "script -qec '" + std::string(TB_BENCH_EXE) +
      testing::merge_flags(kTinyCli, " --steps 400 --log_every 400 --save_dir " + (dir / "tty")) +
      "' /dev/null");
  EXPECT_EQ(tty.exit_code, 0) << tty.output;
  EXPECT_TRUE(std::regex_search(
      tty.output, std::regex("step [0-9]+/400 \\([0-9]+%\\)  loss [0-9.]+  [0-9.]+ s/step  "
                             "[0-9]+ tok/s  elapsed [0-9]+s  ETA [0-9]+s")))
      << tty.output;
  // The warm-up step's live line projects nothing from a step that compiles and allocates.
  EXPECT_TRUE(std::regex_search(
      tty.output, std::regex("step 1/400 \\(0%\\)  loss [0-9.]+  [0-9.]+ s/step  [0-9]+ tok/s  "
                             "elapsed [0-9]+s  ETA after warm-up")))
      << tty.output;
}

// The title of a help group as --help prints it: "Checkpoints:" on a line of its own.
std::string title_(const std::string& group) {
  std::string t = group;
  t[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(t[0])));
  return "\n" + t + ":\n";
}

// --help lists every flag of the table once, in its group (a column of the flag table, so no
// flag is without one), the groups in their order under titles in plain words; the testing aids
// come last, and the exit codes close it.
TEST(Cli, HelpGroupsEveryFlagAndKeepsTestingAidsApart) {
  const auto r = run_bench("--help");
  ASSERT_EQ(r.exit_code, 0);
  size_t at = 0;
  for (const std::string& g : choice_names<HelpGroup>()) {
    const size_t next = r.output.find(title_(g));
    ASSERT_NE(next, std::string::npos) << g << "\n" << r.output;
    EXPECT_GT(next, at) << g;
    at = next;
  }
  EXPECT_EQ(r.output.find(" options:"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(title_("other")), std::string::npos) << r.output;
  for (const FlagSpec& f : flag_table()) {
    EXPECT_NE(r.output.find("--" + std::string(f.name) + " "), std::string::npos) << f.name;
  }
  EXPECT_GT(r.output.find("--fault_nan_step"), r.output.find(title_("testing aids")));
  EXPECT_NE(r.output.find("Exit status: 0 the run completed; 1 it failed or its loss diverged"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("128+N stopped by signal N (130 Ctrl-C"), std::string::npos);
}

// `bench --preset quick --help` shows the preset's values as the defaults, and says so.
TEST(Cli, HelpWithAPresetShowsThePresetsValues) {
  const auto ref = run_bench("--help");
  const auto quick = run_bench("--preset quick --help");
  ASSERT_EQ(quick.exit_code, 0);
  const std::regex layers("--num_layer arg +transformer blocks \\(>= 1\\) \\(default: ([0-9]+)\\)");
  std::smatch a, b;
  ASSERT_TRUE(std::regex_search(ref.output, a, layers)) << ref.output;
  ASSERT_TRUE(std::regex_search(quick.output, b, layers)) << quick.output;
  EXPECT_EQ(a[1], "24");
  EXPECT_EQ(b[1], "2");
  EXPECT_NE(quick.output.find("(defaults shown: --preset quick's values)"), std::string::npos);
  EXPECT_EQ(ref.output.find("(defaults shown: --preset"), std::string::npos);
}

TEST(Cli, VersionNamesTheRevisionAndLibTorchAndRunsNothing) {
  testing::TempDir dir;
  const auto r = run_bench("--version --save_dir " + (dir / "r"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("bench (trainbench) "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(", LibTorch 2."), std::string::npos) << r.output;
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

}  // namespace
}  // namespace trainbench
