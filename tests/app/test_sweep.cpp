// The matrix runner (scripts/sweep.sh): runs each MATRIX entry, a set of bench flags (as PROCS
// processes through scripts/launch.sh), skips with bench's own reason what bench refuses, and
// prints every finished run through `bench report`; scripts/dist_scaling.sh runs through it and
// prints through bench; an output folder is the caller's and never a dash argument.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"
#include "trainbench/report/env_info.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;

const std::string kSweep =
    "BENCH=" TB_BENCH_EXE " PYTHON=" TB_PYTHON " bash " TB_SOURCE_DIR "/scripts/sweep.sh ";
// A model that trains a few steps in well under a second (no --threads: set per run).
const std::string kTinySweep =
    " --num_layer 1 --d_model 32 --num_heads 2 --ff_dim 64 --seq_len 32 --batch_size 4"
    " --steps 3 --warmup_steps 1 --eval_batches 1 --device cpu --peak_tflops 1";

TEST(Sweep, RunsTheMatrixSkipsWhatBenchRefusesAndReportsThroughBench) {
  testing::TempDir dir;
  const auto r = testing::run_command(
      "MATRIX='--model handcraft --dtype float32 --compile none --flash 0;"
      " --model torch --dtype float32 --compile none --flash 1' " +
      kSweep + (dir / "s") +
      " --num_layer 1 --d_model 32 --num_heads 2 --ff_dim 64 --seq_len 32 --batch_size 4"
      " --steps 3 --warmup_steps 1 --eval_batches 1 --threads 1 --device cpu --peak_tflops 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("done: model=handcraft dtype=float32 compile=none flash=0\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("skipped: model=torch dtype=float32 compile=none flash=1: --flash"),
            std::string::npos)
      << r.output;
  const std::string report = testing::read_file(dir / "s/report.md");
  EXPECT_NE(report.find("| float32 |"), std::string::npos) << report;
  EXPECT_NE(report.find("| dtype | handcraft |"), std::string::npos) << report;
  EXPECT_EQ(report.find("| torch"), std::string::npos) << report;
  EXPECT_TRUE(fs::exists(dir / "s/report.csv"));
  EXPECT_TRUE(fs::exists(dir / "s/report.json"));
  EXPECT_TRUE(fs::exists(dir / "s/throughput.png"));
}

// A configuration that fails (here an error no caller can catch) is a row with bench's one
// line, in failed.tsv and under the report, and the others' report still prints.
TEST(Sweep, AConfigurationThatFailsIsARowWithBenchsLineAndTheOthersStillPrint) {
  testing::TempDir dir;
  const auto r = testing::run_command(
      "MATRIX='--model handcraft --dtype float32; --model handcraft --seed 7 "
      "--fault_escape_step 2' " +
      kSweep + (dir / "s") + kTinySweep + " --threads 1 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string line = "a tensor's deleter threw (the --fault_escape_step testing aid)";
  EXPECT_NE(r.output.find("failed: model=handcraft seed=7 fault_escape_step=2: bench: failed: " +
                          line + "\n"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("frame #"), std::string::npos) << r.output;
  EXPECT_EQ(testing::read_file(dir / "s/failed.tsv"),
            "model=handcraft seed=7 fault_escape_step=2\tbench: failed: " + line + "\n");
  const std::string report = testing::read_file(dir / "s/report.md");
  EXPECT_NE(report.find("| float32 |"), std::string::npos) << report;
  EXPECT_NE(
      report.find("| model=handcraft seed=7 fault_escape_step=2 | bench: failed: " + line + " |"),
      std::string::npos)
      << report;
  const std::string listed = testing::read_file(dir / "s/dirs.txt");
  EXPECT_EQ(testing::count_of(listed, "\n"), 1) << listed;
  EXPECT_NE(listed.find("/1_handcraft_layer1_float32"), std::string::npos) << listed;
}

// A second sweep into an OUT_DIR whose run folder another process holds: each entry is skipped
// with bench's own refusal (the folder, who holds it), and the earlier run's log stays as it was.
TEST(Sweep, ASecondSweepIntoAHeldFolderSaysWhoHoldsItAndKeepsTheFirstsLog) {
  testing::TempDir dir;
  const std::string matrix = "MATRIX='--model handcraft --dtype float32' ";
  const auto first = testing::run_command(matrix + kSweep + (dir / "s") + kTinySweep);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const std::string log_before = testing::read_file(dir / "s/1.log");
  std::string run_dir;  // OUT_DIR/1_<run name>: the first entry's run folder
  for (const auto& e : fs::directory_iterator(dir / "s")) {
    if (e.is_directory() && e.path().filename().string().rfind("1_", 0) == 0) {
      run_dir = e.path().string();
    }
  }
  ASSERT_FALSE(run_dir.empty());
  // The shell holds the folder (flock(1) on the lock file) as a running bench would, until the
  // second sweep has ended.
  const auto second =
      testing::run_command("{ exec 9>>'" + run_dir + "/.lock'; flock -x 9; " + matrix + kSweep +
                           (dir / "s") + kTinySweep + " --overwrite 1; } 2>&1");
  EXPECT_EQ(second.exit_code, 1) << second.output;
  EXPECT_NE(second.output.find("skipped: model=handcraft dtype=float32: run folder '" + run_dir +
                               "' is in use by "),
            std::string::npos)
      << second.output;
  EXPECT_NE(second.output.find("sweep: no run finished"), std::string::npos) << second.output;
  EXPECT_EQ(testing::read_file(dir / "s/1.log"), log_before);
  for (const auto& e : fs::directory_iterator(dir / "s")) {
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
  }
}

// REPEAT=3: every entry three times, interleaved (repetition 1 of each, then 2, ...), each a
// folder of repetitions that the report aggregates; an entry bench refuses is tried once.
TEST(Sweep, RepeatInterleavesTheEntriesRepetitions) {
  testing::TempDir dir;
  const auto r = testing::run_command(
      "REPEAT=3 MATRIX='--model handcraft --flash 0; --model handcraft --flash 1;"
      " --model torch --flash 1' " +
      kSweep + (dir / "s") + kTinySweep + " --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const size_t a1 = r.output.find("done: model=handcraft flash=0 (repetition 1 of 3)");
  const size_t b1 = r.output.find("done: model=handcraft flash=1 (repetition 1 of 3)");
  const size_t a2 = r.output.find("done: model=handcraft flash=0 (repetition 2 of 3)");
  ASSERT_NE(a1, std::string::npos) << r.output;
  ASSERT_NE(b1, std::string::npos) << r.output;
  ASSERT_NE(a2, std::string::npos) << r.output;
  EXPECT_LT(a1, b1);
  EXPECT_LT(b1, a2);
  EXPECT_EQ(testing::count_of(r.output, "skipped: model=torch flash=1"), 1) << r.output;
  for (const char* run : {"/s/1_handcraft_layer1_float32", "/s/2_handcraft_layer1_float32_flash"}) {
    const auto s = nlohmann::json::parse(testing::read_file(dir.path() + run + "/summary.json"));
    EXPECT_EQ(s["repetitions"]["completed"], 3) << run;
  }
  const std::string report = testing::read_file(dir / "s/report.md");
  EXPECT_NE(report.find("(n=3, "), std::string::npos) << report;
  EXPECT_NE(report.find("x (p="), std::string::npos) << report;
  const auto bad = testing::run_command("REPEAT=x " + kSweep + (dir / "t") + kTinySweep);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("sweep.sh: REPEAT: 'x' is not allowed; use an integer in [1, 999]"),
            std::string::npos)
      << bad.output;
}

// An entry is checked for its shape ('--name value' pairs of one-word values) before anything
// runs, and never evaluated; each error is one line that names the entry.
TEST(Sweep, ABadMatrixEntryIsOneLineNamingItAndRunsNothing) {
  testing::TempDir dir;
  const std::string shape =
      ": use bench flags as '--name value' pairs (values: one word of letters, digits and "
      "._/:,+=@%~-), e.g. '--model handcraft --compile fused --flash 1'; entries are split at ';' "
      "and new lines\n";
  // MATRIX (in single quotes) -> the entry the error names.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"handcraft:float32:0:0", "handcraft:float32:0:0"},  // the former positional form
      {"--model handcraft; --dtype", "--dtype"},           // after a good entry: nothing runs
      {"--model handcraft --flash", "--model handcraft --flash"},
      {"--dtype=bfloat16", "--dtype=bfloat16"},
      {"--model --dtype --flash 1", "--model --dtype --flash 1"},
      {"model handcraft", "model handcraft"},
      {"--data \"a b\"", "--data \"a b\""},
      {"--model   $(touch pwned)", "--model $(touch pwned)"},
      {"--model handcraft\n  --model torch --seed *", "--model torch --seed *"}};
  for (const auto& [matrix, entry] : bad) {
    const auto r =
        testing::run_command("MATRIX='" + matrix + "' " + kSweep + (dir / "s") + kTinySweep);
    EXPECT_EQ(r.exit_code, 2) << matrix;
    EXPECT_EQ(r.output, "sweep.sh: MATRIX entry '" + entry + "'" + shape) << matrix;
  }
  for (const char* flag : {"--save_dir", "--run_folder", "--repeat", "--repetition"}) {
    const std::string entry = std::string("--model handcraft ") + flag + " 2";
    const auto r = testing::run_command("MATRIX='" + entry + "' " + kSweep + (dir / "s"));
    EXPECT_EQ(r.exit_code, 2) << flag;
    EXPECT_EQ(r.output,
              "sweep.sh: MATRIX entry '" + entry + "': " + flag +
                  " is set by sweep.sh for every run (OUT_DIR/i, REPEAT=N); leave it out\n");
  }
  const auto none = testing::run_command("MATRIX=' ; ;' " + kSweep + (dir / "s"));
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(none.output, "sweep.sh: MATRIX holds no entry;" + shape.substr(1)) << none.output;
  EXPECT_FALSE(fs::exists(dir / "s"));
}

// Each entry's flags reach its run (config.json) and no other's, after them the common flags;
// entries split at ';' and new lines alike, blank ones ignored, numbered in their order.
TEST(Sweep, AnEntrysFlagsReachItsRunAndNoOther) {
  testing::TempDir dir;
  const auto r = testing::run_command(
      "MATRIX='--model handcraft --seed 7 --dropout 0.25\n\n"
      "  --model torch --lr 0.002 ; --model handcraft --flash 1;' " +
      kSweep + (dir / "s") + kTinySweep + " --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const size_t first = r.output.find("done: model=handcraft seed=7 dropout=0.25\n");
  const size_t second = r.output.find("done: model=torch lr=0.002\n");
  const size_t third = r.output.find("done: model=handcraft flash=1\n");
  ASSERT_NE(first, std::string::npos) << r.output;
  ASSERT_NE(second, std::string::npos) << r.output;
  ASSERT_NE(third, std::string::npos) << r.output;
  EXPECT_LT(first, second);
  EXPECT_LT(second, third);
  auto config = [&](const std::string& run) {
    return nlohmann::json::parse(testing::read_file(dir / "s/" + run + "/config.json"));
  };
  const auto a = config("1_handcraft_layer1_float32");
  const auto b = config("2_torch_layer1_float32");
  const auto c = config("3_handcraft_layer1_float32_flash");
  EXPECT_EQ(a["model"], "handcraft");
  EXPECT_EQ(a["seed"], 7);
  EXPECT_EQ(a["dropout"], 0.25);
  EXPECT_EQ(a["flash"], false);
  EXPECT_EQ(b["model"], "torch");
  EXPECT_EQ(b["lr"], 0.002);
  EXPECT_NE(b["seed"], 7);
  EXPECT_EQ(c["flash"], true);
  EXPECT_NE(c["seed"], 7);
  EXPECT_NE(c["dropout"], 0.25);
  for (const auto* j : {&a, &b, &c}) {
    EXPECT_EQ((*j)["num_layer"], 1);  // the common flags, in every run
    EXPECT_EQ((*j)["d_model"], 32);
  }
  const std::string report = testing::read_file(dir / "s/report.md");
  EXPECT_NE(report.find("| dtype | handcraft | torch | handcraft flash |"), std::string::npos)
      << report;
}

// Without MATRIX: the reference matrix, handcraft then torch x float32, float16, bfloat16 x
// --compile none, torchscript x --flash 0, 1 (24 runs), in that order. A stand-in bench that
// refuses everything shows each entry without training one.
TEST(Sweep, TheDefaultMatrixIsTheReferenceMatrixInItsOrder) {
  testing::TempDir dir;
  const std::string refuse = dir / "refuse";
  testing::write_file(refuse, "#!/bin/sh\necho 'bench: error: refused here' >&2\nexit 2\n");
  fs::permissions(refuse, fs::perms::owner_all);
  const auto r = testing::run_command("BENCH=" + refuse +
                                      " bash " TB_SOURCE_DIR "/scripts/sweep.sh " + (dir / "s"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  size_t at = 0;
  int n = 0;
  for (const char* model : {"handcraft", "torch"}) {
    for (const char* dtype : {"float32", "float16", "bfloat16"}) {
      for (const char* compile : {"none", "torchscript"}) {
        for (const char* flash : {"0", "1"}) {
          const std::string line = std::string("skipped: model=") + model + " dtype=" + dtype +
                                   " compile=" + compile + " flash=" + flash + ": refused here\n";
          const size_t found = r.output.find(line, at);
          ASSERT_NE(found, std::string::npos) << line << r.output;
          at = found + line.size();
          ++n;
        }
      }
    }
  }
  EXPECT_EQ(testing::count_of(r.output, "skipped: "), n);
  EXPECT_EQ(n, 24);
  EXPECT_NE(r.output.find("sweep: no run finished"), std::string::npos) << r.output;
}

TEST(Sweep, ProcsRunsEachEntryAsThatManyRanksThroughLaunch) {
  testing::TempDir dir;
  const auto r = testing::run_command(
      "PROCS=2 MASTER_PORT=" + std::to_string(testing::free_port()) +
      " MATRIX='--model handcraft --dtype float32 --flash 0; --model torch --dtype float32 --flash "
      "1' " +
      kSweep + (dir / "s") + kTinySweep + " --threads 1 --dist_timeout 20");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("done: model=handcraft dtype=float32 flash=0 x2 processes\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("skipped: model=torch dtype=float32 flash=1 x2 processes: --flash"),
            std::string::npos)
      << r.output;
  const std::string report = testing::read_file(dir / "s/report.md");
  EXPECT_NE(report.find("| dtype | handcraft x2 processes |"), std::string::npos) << report;
  EXPECT_NE(report.find("| comm ms/step | comm share |"), std::string::npos) << report;
  EXPECT_NE(testing::read_file(dir / "s/report.csv").find(",communication_ms,"), std::string::npos);
}

TEST(Sweep, ABadProcessCountIsOneLineAndRunsNothing) {
  testing::TempDir dir;
  for (const std::string procs : {"0", "two", "-1", "99999"}) {
    const auto r = testing::run_command("PROCS='" + procs + "' MATRIX='--model handcraft' " +
                                        kSweep + (dir / "s"));
    EXPECT_EQ(r.exit_code, 2) << procs;
    EXPECT_EQ(r.output,
              "sweep.sh: PROCS: '" + procs + "' is not allowed; use an integer in [1, 9999]\n");
  }
  const auto port = testing::run_command("PROCS=2 MASTER_PORT=70000 " + kSweep + (dir / "s"));
  EXPECT_EQ(port.exit_code, 2);
  EXPECT_EQ(port.output,
            "sweep.sh: MASTER_PORT: '70000' is not allowed; use a TCP port in [1, 65535]\n");
  EXPECT_FALSE(fs::exists(dir / "s"));
}

// The four runs through sweep.sh, one table through `bench report`: the one-thread and
// two-thread single processes apart by their batch, the two overlap modes by their label, and
// the communication of the two-process runs.
TEST(DistScaling, RunsItsFourThroughSweepAndPrintsThemThroughBenchReport) {
  testing::TempDir dir;
  const auto r = testing::run_command("BENCH=" TB_BENCH_EXE " PYTHON=" TB_PYTHON " MASTER_PORT=" +
                                      std::to_string(testing::free_port()) +
                                      " bash " TB_SOURCE_DIR "/scripts/dist_scaling.sh " +
                                      (dir / "d") + kTinySweep + " --dist_timeout 20");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string report = testing::read_file(dir / "d/report.md");
  EXPECT_NE(r.output.find(report), std::string::npos) << r.output;
  // The caption names what the four share; the labels keep the batch, where they differ.
  EXPECT_NE(report.find("(libtorch; 1 layers, d_model 32, seq_len 32; ratios against"),
            std::string::npos)
      << report;
  const std::string shape = " [batch ";
  for (const std::string& column :
       {"| handcraft" + shape + "4] |", " handcraft x2 processes" + shape + "4] |",
        " handcraft x2 processes all-reduce after backward" + shape + "4] |"}) {
    EXPECT_NE(report.find(column), std::string::npos) << column << "\n" << report;
  }
  // One process of two threads needs two cores; with one it is skipped, naming --threads.
  if (available_cores() >= 2) {
    EXPECT_NE(report.find(" handcraft" + shape + "8] |"), std::string::npos) << report;
  } else {
    EXPECT_NE(r.output.find("--threads: 2 is more than"), std::string::npos) << r.output;
  }
  EXPECT_NE(report.find("| comm ms/step | comm share |"), std::string::npos) << report;
  EXPECT_TRUE(fs::exists(dir / "d/report.csv"));
  EXPECT_TRUE(fs::exists(dir / "d/report.json"));

  const auto bad = testing::run_command("bash " TB_SOURCE_DIR "/scripts/dist_scaling.sh " +
                                        (dir / "e") + " --threads 2");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.output, "dist_scaling.sh: --threads is set per run; leave it out\n");
}

// An argument starting with '-' is never taken for the output folder, and a relative output
// folder is the caller's (the scripts cd to the repository).
TEST(Scripts, AnOutputFolderIsNeverADashArgumentAndRelativeOnesAreTheCallers) {
  testing::TempDir cwd;
  for (const char* script : {"sweep.sh", "compare.sh", "kernel_bench.sh", "dist_scaling.sh"}) {
    const auto r = testing::run_command("cd " + cwd.path() + " && bash " TB_SOURCE_DIR "/scripts/" +
                                        script + " --num_layer 1");
    EXPECT_EQ(r.exit_code, 2) << script << r.output;
    EXPECT_NE(r.output.find("'--num_layer' is not an output folder (it starts with '-')"),
              std::string::npos)
        << script << r.output;
  }
  EXPECT_TRUE(fs::is_empty(cwd.path()));
  const auto r =
      testing::run_command("cd " + cwd.path() + " && MATRIX='--model handcraft --dtype float32' " +
                           kSweep + "rel" + kTinySweep + " --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(cwd / "rel/report.md")) << r.output;
}

// scripts/scaling.sh: each configuration at each value of DIM through sweep.sh, then the table
// (a row per configuration, a column per value, the growth exponent, flash against naive) and
// the plot; a point that fails is listed with its line and the others still print; a bad DIM
// or VALUES is one line, exit 2, nothing run.
TEST(Scaling, SweepsOneDimensionAndTablesEachConfigurationsGrowth) {
  testing::TempDir dir;
  const std::string scaling = "BENCH=" TB_BENCH_EXE " PYTHON=" TB_PYTHON
                              " PEER=0 bash " TB_SOURCE_DIR "/scripts/scaling.sh ";
  const auto r = testing::run_command(
      "DIM=seq_len VALUES='16 32' CONFIGS='--model handcraft --flash 0; --model handcraft "
      "--flash 1; --model handcraft --flash 0 --fault_escape_step 2' " +
      scaling + (dir / "s") +
      " --num_layer 1 --d_model 32 --num_heads 2 --ff_dim 64 --batch_size 4 --steps 3"
      " --warmup_steps 1 --eval_batches 1 --device cpu --peak_tflops 1 --threads 1 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string md = testing::read_file(dir / "s/scaling.md");
  EXPECT_NE(md.find("| configuration | seq_len 16 | seq_len 32 | growth |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| libtorch handcraft | "), std::string::npos) << md;
  EXPECT_NE(md.find("| libtorch handcraft flash | "), std::string::npos) << md;
  EXPECT_NE(md.find("libtorch handcraft flash against libtorch handcraft: flash "),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("Points that did not run:"), std::string::npos) << md;
  EXPECT_EQ(testing::count_of(md, "fault_escape_step=2 seq_len="), 2) << md;
  EXPECT_TRUE(fs::exists(dir / "s/scaling.png"));
  EXPECT_NE(testing::read_file(dir / "s/command.txt").find("DIM=seq_len"), std::string::npos);
  for (const auto& [env, line] : std::vector<std::pair<std::string, std::string>>{
           {"DIM=depth",
            "scaling.sh: DIM: 'depth' is not allowed; use seq_len, num_layer, "
            "batch_size or threads"},
           {"DIM=seq_len VALUES='16 x'",
            "scaling.sh: VALUES: 'x' is not allowed; give positive "
            "integers"},
           {"DIM=seq_len VALUES=16", "scaling.sh: VALUES: give two values or more"}}) {
    const auto bad = testing::run_command(env + " " + scaling + (dir / "bad") + " 2>&1");
    EXPECT_EQ(bad.exit_code, 2) << env;
    EXPECT_EQ(bad.output, line + "\n") << env;
  }
  EXPECT_FALSE(fs::exists(dir / "bad"));
}

// Seeds interleaved, one time-to-target table over them: every configuration reached the
// (easy) target with each seed, a failing one is a row with its reason per seed, the plot of
// bpb against training time is written; bad input is one line, exit 2, nothing created.
nlohmann::json json_of_(const std::string& path) {
  return nlohmann::json::parse(testing::read_file(path));
}

TEST(TimeToTarget, SeedsEveryConfigurationAndTablesItsTimeToTarget) {
  testing::TempDir dir;
  const std::string ttt = "BENCH=" TB_BENCH_EXE " PYTHON=" TB_PYTHON " bash " TB_SOURCE_DIR
                          "/scripts/time_to_target.sh ";
  const std::string common =
      " --num_layer 1 --d_model 32 --num_heads 2 --ff_dim 64 --seq_len 16 --batch_size 4"
      " --steps 8 --warmup_steps 1 --eval_every 4 --eval_batches 4 --lr 0.01 --device cpu"
      " --threads 1";
  const auto r = testing::run_command(
      "SEEDS=3 DTYPES=float32 PEERS=pytorch:float32 CONFIGS='--model handcraft --compile none; "
      "--model handcraft --compile none --fault_escape_step 2' " +
      ttt + (dir / "t") + common + " --target_bpb 7.9 --stop_at_target 1 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string md = testing::read_file(dir / "t/report.md");
  EXPECT_NE(md.find("Time to target (held-out bits per byte at or below 7.900)"), std::string::npos)
      << md;
  // Three seeds a configuration (bench's, the peer's), each stopped at the first evaluation.
  EXPECT_EQ(testing::count_of(md, " | float32 | 3/3 | "), 2) << md;
  EXPECT_NE(md.find("\n| pytorch handcraft"), std::string::npos) << md;
  for (int seed = 1; seed <= 3; ++seed) {
    const std::string run = dir / ("t/seed-" + std::to_string(seed) + "/bench");
    const auto config = json_of_(run + "/1_handcraft_layer1_float32/config.json");
    EXPECT_EQ(config["seed"], seed);
    const auto summary = json_of_(run + "/1_handcraft_layer1_float32/summary.json");
    EXPECT_EQ(summary["steps_to_target"], 4);
    EXPECT_EQ(summary["stopped_at_target"], true);
    EXPECT_EQ(json_of_(dir / ("t/seed-" + std::to_string(seed) +
                              "/pytorch_float32_handcraft_layer1_float32/config.json"))["seed"],
              seed);
  }
  EXPECT_EQ(testing::count_of(md, "| seed "), 3) << md;  // the failing entry, once a seed
  EXPECT_TRUE(fs::exists(dir / "t/valid_bpb.png"));
  EXPECT_NE(testing::read_file(dir / "t/command.txt").find("SEEDS=3"), std::string::npos);
  for (const auto& [env_args, line] : std::vector<std::pair<std::string, std::string>>{
           {"SEEDS=0 " + ttt + (dir / "bad") + " --target_bpb 3",
            "time_to_target.sh: SEEDS: '0' is not allowed; use an integer in [1, 999]"},
           {ttt + (dir / "bad") + " --steps 4",
            "time_to_target.sh: --target_bpb: missing; give the target among the flags, e.g. "
            "--target_bpb 3.0 (held-out bits per byte, in (0, 8])"},
           {ttt + (dir / "bad") + " --target_bpb 3 --seed 2",
            "time_to_target.sh: --seed: set by SEEDS (1 .. N), not allowed among the common "
            "flags"},
           {"PEERS=tf " + ttt + (dir / "bad") + " --target_bpb 3",
            "time_to_target.sh: PEERS: 'tf' is not allowed; use pytorch, jax or both (name or "
            "name:dtype)"}}) {
    const auto bad = testing::run_command(env_args + " 2>&1");
    EXPECT_EQ(bad.exit_code, 2) << env_args;
    EXPECT_EQ(bad.output, line + "\n") << env_args;
  }
  EXPECT_FALSE(fs::exists(dir / "bad"));
}

}  // namespace
}  // namespace trainbench
