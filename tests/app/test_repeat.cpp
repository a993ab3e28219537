// --repeat N (app/repeat.h): repetitions as fresh processes in RUN_DIR/rep-K, their aggregate,
// one at a time for a sweep, a signal passed on, and the refusals.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "trainbench/app/repeat.h"
#include "trainbench/measure/stats.h"
#include "trainbench/report/results.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;

const std::string kTinyRepeat =
    " --num_layer 1 --d_model 32 --num_heads 2 --ff_dim 64 --seq_len 32 --batch_size 4"
    " --steps 6 --warmup_steps 1 --log_every 3 --eval_every 0 --eval_batches 1 --threads 1"
    " --device cpu --peak_tflops 1";

TEST(Repeat, ThreeRepetitionsAreThreeProcessesAndTheirAggregate) {
  testing::TempDir dir;
  const std::string run = dir / "r_handcraft_layer1_float32";
  const auto r = testing::run_bench(kTinyRepeat + " --repeat 3 --save_dir " + (dir / "r"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<double> seq, tok, step;
  std::vector<int64_t> pids;
  for (int k = 1; k <= 3; ++k) {
    const std::string rep = run + "/rep-" + std::to_string(k);
    const auto s = read_json_file(rep + "/summary.json");
    EXPECT_EQ(s["status"], "completed") << k;
    seq.push_back(s["sequences_per_s"].get<double>());
    tok.push_back(s["tokens_per_s"].get<double>());
    step.push_back(s["step_time_ms"]["median"].get<double>());
    const auto c = read_json_file(rep + "/config.json");
    EXPECT_EQ(c["repeat"], 1);
    EXPECT_EQ(c["run_dir"], rep);
    EXPECT_EQ(c["num_layer"], 1);  // the parent's flags, passed on
    EXPECT_EQ(c["steps"], 6);
    const auto env = read_json_file(rep + "/env.json");
    EXPECT_NE(env["command_line"].dump().find("rep-" + std::to_string(k)), std::string::npos);
  }
  const auto a = read_json_file(run + "/summary.json");
  EXPECT_EQ(a["status"], "completed");
  EXPECT_EQ(a["repetitions"]["planned"], 3);
  EXPECT_EQ(a["repetitions"]["completed"], 3);
  EXPECT_EQ(a["repetitions"]["folders"], nlohmann::json({"rep-1", "rep-2", "rep-3"}));
  const auto& st = a["statistics"];
  EXPECT_EQ(st["sequences_per_s"]["samples"], nlohmann::json(seq));
  const SampleSummary s = summarize(seq);
  EXPECT_DOUBLE_EQ(st["sequences_per_s"]["median"].get<double>(), s.median);
  EXPECT_DOUBLE_EQ(st["sequences_per_s"]["mean"].get<double>(), s.mean);
  EXPECT_DOUBLE_EQ(st["sequences_per_s"]["stddev"].get<double>(), s.stddev);
  EXPECT_DOUBLE_EQ(st["sequences_per_s"]["cv"].get<double>(), s.cv);
  EXPECT_DOUBLE_EQ(st["sequences_per_s"]["min"].get<double>(), s.min);
  EXPECT_DOUBLE_EQ(st["sequences_per_s"]["max"].get<double>(), s.max);
  EXPECT_DOUBLE_EQ(a["sequences_per_s"].get<double>(), s.median);
  EXPECT_DOUBLE_EQ(a["tokens_per_s"].get<double>(), summarize(tok).median);
  EXPECT_DOUBLE_EQ(st["step_time_ms_median"]["median"].get<double>(), summarize(step).median);
  EXPECT_EQ(read_json_file(run + "/config.json")["repeat"], 3);
  EXPECT_NE(r.output.find("3 of 3 repetitions completed; seq/s median "), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("repetition 2 of 3, a fresh process: " + run + "/rep-2"),
            std::string::npos);
  // bench report reads the folder as its three repetitions.
  const auto rep = testing::run_bench("report " + run);
  EXPECT_EQ(rep.exit_code, 0) << rep.output;
  EXPECT_NE(rep.output.find("(n=3, "), std::string::npos) << rep.output;
  // The same command again is refused, and nothing changes.
  const std::string before = testing::read_file(run + "/summary.json");
  const auto again = testing::run_bench(kTinyRepeat + " --repeat 3 --save_dir " + (dir / "r"));
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.output.find("already holds results"), std::string::npos) << again.output;
  EXPECT_EQ(testing::read_file(run + "/summary.json"), before);
  // The folder of repetitions is not resumed as one run.
  const auto resume = testing::run_bench("--resume " + run);
  EXPECT_EQ(resume.exit_code, 2);
  EXPECT_NE(resume.output.find("bench: error: --resume: '" + run +
                               "' holds repetitions (--repeat 3); resume one of them: --resume " +
                               run + "/rep-K\n"),
            std::string::npos)
      << resume.output;
}

// A sweep interleaves configurations one repetition at a time: --repetition K adds rep-K and
// refreshes the aggregate; another configuration is refused in that folder.
TEST(Repeat, OneRepetitionAtATimeFillsTheFolder) {
  testing::TempDir dir;
  const std::string run = dir / "r_handcraft_layer1_float32";
  const std::string args = kTinyRepeat + " --repeat 3 --save_dir " + (dir / "r");
  ASSERT_EQ(testing::run_bench(args + " --repetition 2").exit_code, 0);
  auto a = read_json_file(run + "/summary.json");
  EXPECT_EQ(a["status"], "incomplete");
  EXPECT_EQ(a["repetitions"]["statuses"], nlohmann::json({"not run", "completed", "not run"}));
  EXPECT_FALSE(fs::exists(run + "/rep-1"));
  ASSERT_EQ(testing::run_bench(args + " --repetition 1").exit_code, 0);
  a = read_json_file(run + "/summary.json");
  EXPECT_EQ(a["repetitions"]["completed"], 2);
  const auto other = testing::run_bench(args + " --repetition 3 --lr 0.01");
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.output.find("holds the repetitions of another configuration (--lr differ)"),
            std::string::npos)
      << other.output;
  const auto twice = testing::run_bench(args + " --repetition 1");
  EXPECT_EQ(twice.exit_code, 2);  // rep-1 holds results
  EXPECT_NE(twice.output.find("rep-1' already holds results"), std::string::npos) << twice.output;
  ASSERT_EQ(testing::run_bench(args + " --repetition 3").exit_code, 0);
  EXPECT_EQ(read_json_file(run + "/summary.json")["status"], "completed");
}

TEST(Repeat, BadRepetitionFlagsAreOneLineErrors) {
  testing::TempDir dir;
  for (const auto& [flags, line] : std::vector<std::pair<std::string, std::string>>{
           {"--repeat 3 --repetition 4",
            "bench: error: --repetition: 4 needs --repeat N with N >= 4; allowed: 0 (all of them) "
            "to --repeat (3)\n"},
           {"--repetition 1",
            "bench: error: --repetition: 1 needs --repeat N with N >= 1; allowed: 0 (all of them) "
            "to --repeat (1)\n"},
           {"--repeat 0", "bench: error: --repeat: 0 is out of range; allowed: >= 1\n"}}) {
    const auto r = testing::run_bench(kTinyRepeat + " " + flags + " --save_dir " + (dir / "r"));
    EXPECT_EQ(r.exit_code, 2) << flags;
    EXPECT_EQ(r.output, line) << flags;
  }
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

// Ctrl-C (SIGINT to bench) during a repetition: it stops as a run does, with a checkpoint that
// --resume continues; no further repetition starts; the aggregate says interrupted; exit 130.
TEST(Repeat, ASignalStopsTheRunningRepetitionAndNoOtherStarts) {
  testing::TempDir dir;
  const std::string run = dir / "r_handcraft_layer1_float32";
  const auto r = testing::run_command(
      "bash -c '" + std::string(TB_BENCH_EXE) +
      testing::merge_flags(kTinyRepeat,
                           " --steps 1000000 --log_every 1 --repeat 3 --save_dir " + (dir / "r")) +
      " >/dev/null 2>" + (dir / "err") + " & pid=$!; for i in $(seq 600); do [ -s " + run +
      "/rep-1/metrics.jsonl ] && break; sleep 0.05; done; kill -INT $pid; wait $pid; "
      "echo exit=$?'");
  EXPECT_NE(r.output.find("exit=130"), std::string::npos) << r.output;
  const auto a = read_json_file(run + "/summary.json");
  EXPECT_EQ(a["status"], "interrupted");
  EXPECT_EQ(a["repetitions"]["statuses"], nlohmann::json({"interrupted", "not run", "not run"}));
  EXPECT_FALSE(fs::exists(run + "/rep-2"));
  const std::string err = testing::read_file(dir / "err");
  EXPECT_NE(err.find("bench --resume " + run + "/rep-1 continues it"), std::string::npos) << err;
}

}  // namespace
}  // namespace trainbench
