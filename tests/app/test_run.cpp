// A whole run (app/run.h, run_benchmark): its result files and their contract fields, the
// train figure's steps, divergence, resume bit for bit, and the folders it refuses.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "test_util.h"
#include "trainbench/app/run.h"
#include "trainbench/core/log.h"
#include "trainbench/core/run_files.h"
#include "trainbench/report/env_info.h"
#include "trainbench/report/results.h"
#include "trainbench/train/checkpoint.h"

namespace trainbench {
namespace {

class RunTest : public ::testing::Test {
 protected:
  void SetUp() override { log_set_quiet(true); }
  void TearDown() override { log_set_quiet(false); }
  RunConfig config() {
    RunConfig c = testing::tiny_config();
    c.save_dir = dir / "run";
    return c;
  }
  testing::TempDir dir;
};

std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

// env.json's contract fields and the machine beside the device, for a float32 CPU run.
void expect_env_contract_(const nlohmann::json& env) {
  for (const char* k :
       {"libtorch_version", "device_name", "cuda_version", "num_threads", "blas", "compiler",
        "git_revision", "hostname", "started_at", "build_revision", "build_source_hash",
        "build_diff_hash", "tree_revision", "tree_source_hash"}) {
    EXPECT_TRUE(env.contains(k)) << k;
  }
  EXPECT_TRUE(env["cuda_version"].is_null());
  // LibTorch 2.11 or later (the supported range), as "MAJOR.MINOR.PATCH".
  int major = 0, minor = 0;
  ASSERT_EQ(
      std::sscanf(env["libtorch_version"].get<std::string>().c_str(), "%d.%d", &major, &minor), 2)
      << env["libtorch_version"];
  EXPECT_GE(major * 100 + minor, 211) << env["libtorch_version"];
  EXPECT_NE(env["blas"].get<std::string>().find("mkl"), std::string::npos) << env["blas"];
  for (const std::string& var : thread_env_vars()) {
    EXPECT_TRUE(env["thread_env"].contains(var)) << var;
  }
  // The machine beside the device, as pyperf records it.
  EXPECT_FALSE(env["cpu"]["vendor"].get<std::string>().empty()) << env["cpu"];
  EXPECT_FALSE(env["cpu"]["family"].get<std::string>().empty()) << env["cpu"];
  EXPECT_FALSE(env["cpu"]["model"].get<std::string>().empty()) << env["cpu"];
  EXPECT_TRUE(env["cpu"]["isa"].is_array());
  EXPECT_GT(env["memory_bytes"].get<int64_t>(), int64_t{1} << 30);
  EXPECT_EQ(env["kernel"].get<std::string>().rfind("Linux ", 0), 0u) << env["kernel"];
  EXPECT_FALSE(env["os"].get<std::string>().empty());
  EXPECT_EQ(env["load_average"].size(), 3u);
  EXPECT_NE(env["command_line"][0].get<std::string>().find("trainbench_tests"), std::string::npos)
      << env["command_line"];
  EXPECT_EQ(env["gemm_path"]["dtype"], "float32");
  EXPECT_EQ(env["gemm_path"]["model_gemms"], "mkl_float32");
}

TEST_F(RunTest, ResultFilesParseAndHoldTheirContractFields) {
  RunConfig c = config();
  c.eval_every = 4;
  const RunResult r = run_benchmark(c);
  EXPECT_EQ(r.status, RunStatus::kCompleted);
  EXPECT_EQ(r.run_dir, dir / "run_handcraft_layer1_float32");
  const auto cfg = read_json_file(r.run_dir + "/config.json");
  for (const char* k :
       {"model",     "dtype",   "num_layer", "flash",      "compile",    "seq_len",     "d_model",
        "num_heads", "ff_dim",  "dropout",   "batch_size", "lr",         "steps",       "data",
        "device",    "threads", "seed",      "log_every",  "eval_every", "warmup_steps"}) {
    EXPECT_TRUE(cfg.contains(k)) << k;
  }
  EXPECT_EQ(cfg["schema_version"], kSchemaVersion);
  EXPECT_EQ(cfg["device"], "cpu");
  const auto env = read_json_file(r.run_dir + "/env.json");
  expect_env_contract_(env);
  const auto lines = read_jsonl(r.run_dir + "/metrics.jsonl");
  std::vector<int64_t> train_steps, eval_steps, initial_steps;
  for (const auto& l : lines) {
    if (l.contains("initial_loss")) {
      // The loss before any update (step 1's forward), where the loss curves start.
      initial_steps.push_back(l["step"]);
      EXPECT_NEAR(l["initial_bpb"].get<double>(), l["initial_loss"].get<double>() / std::log(2.0),
                  1e-9);
      EXPECT_NEAR(l["initial_loss"].get<double>(), std::log(256.0), 1.0) << l.dump();
      EXPECT_EQ(l["elapsed_s"], 0.0);
    } else if (l.contains("loss")) {
      train_steps.push_back(l["step"]);
      for (const char* k : {"sequences_per_s", "tokens_per_s", "elapsed_s"})
        EXPECT_TRUE(l[k].is_number()) << k;
      EXPECT_DOUBLE_EQ(l["tokens_per_s"].get<double>(), l["sequences_per_s"].get<double>() * 32);
    } else {
      eval_steps.push_back(l["step"]);
      EXPECT_NEAR(l["valid_bpb"].get<double>(), l["valid_loss"].get<double>() / std::log(2.0),
                  1e-9);
    }
  }
  EXPECT_EQ(train_steps, (std::vector<int64_t>{2, 4, 6}));
  EXPECT_EQ(initial_steps, (std::vector<int64_t>{0}));
  EXPECT_TRUE(lines.front().contains("initial_loss"));
  EXPECT_EQ(eval_steps, (std::vector<int64_t>{4, 6}));
  const auto s = read_json_file(r.run_dir + "/summary.json");
  EXPECT_EQ(s["status"], "completed");
  EXPECT_EQ(s["steps_done"], 6);
  EXPECT_EQ(s["steps_timed"], 5);  // 6 steps minus 1 warm-up
  EXPECT_LE(s["step_time_ms"]["min"].get<double>(), s["step_time_ms"]["median"].get<double>());
  EXPECT_LE(s["step_time_ms"]["median"].get<double>(), s["step_time_ms"]["max"].get<double>());
  EXPECT_NEAR(s["sequences_per_s"].get<double>(),
              4 * 1e3 / s["step_time_ms"]["median"].get<double>(), 1e-6);
  EXPECT_EQ(s["peak_flops_source"], "flag");
  // The fairness manifest: this run's choices, its parameter count and its first loss (the
  // metrics' step-0 record).
  const nlohmann::json m = s["manifest"];
  EXPECT_EQ(m["framework"], "libtorch");
  EXPECT_EQ(m["implementation"], "eager");
  EXPECT_TRUE(m["tf32"].is_null());  // no TF32 on a CPU
  EXPECT_EQ(m["compute"], "float32");
  EXPECT_EQ(m["master_weights"], "float32");
  EXPECT_EQ(m["optimizer"], "torch::optim::Adam (for-loop)");
  EXPECT_EQ(m["threads"], env["num_threads"]);
  EXPECT_EQ(m["attention"], "naive");
  EXPECT_EQ(m["data_in_timer"], true);
  EXPECT_EQ(m["params"], s["params"]);
  EXPECT_DOUBLE_EQ(m["first_loss"].get<double>(), lines.front()["initial_loss"].get<double>());
  EXPECT_NEAR(s["mfu"].get<double>(),
              s["tokens_per_s"].get<double>() * s["flops_per_token"].get<double>() / 1e12, 1e-9);
  for (const char* k : {"params", "warmup_seconds", "peak_memory_bytes", "final_train_loss",
                        "final_valid_loss", "final_valid_bpb", "peak_flops"}) {
    EXPECT_TRUE(s[k].is_number()) << k;
  }
  EXPECT_EQ(s["step_time_ms_samples"].size(), 5u);
  EXPECT_TRUE(s["compile_seconds"].is_null());  // an eager run compiled nothing
}

// The tables' train figure is in bits per byte, like the validation one, and covers the timed
// steps only: a last window that holds warm-up steps leaves them out. summary.json's train loss
// (nats) covers the same steps, so the two never disagree.
TEST_F(RunTest, TrainBitsPerByteComeFromTheLastWindowsTimedStepsOnly) {
  RunConfig c = config();
  c.steps = 3;
  c.warmup_steps = 2;
  c.log_every = 1;
  c.save_dir = dir / "each";
  const RunResult each = run_benchmark(c);
  const auto losses = testing::window_values(each.run_dir);
  ASSERT_EQ(losses.size(), 3u);
  c.log_every = 3;  // one window: two warm-up steps and the timed one
  c.save_dir = dir / "one";
  const RunResult one = run_benchmark(c);
  EXPECT_NEAR(one.summary["final_train_bpb"].get<double>(), losses[2] / std::log(2.0), 1e-9);
  EXPECT_NEAR(one.summary["final_train_loss"].get<double>(), losses[2], 1e-9);
  EXPECT_NEAR(one.summary["final_train_bpb"].get<double>(),
              one.summary["final_train_loss"].get<double>() / std::log(2.0), 1e-12);
  EXPECT_EQ(one.summary["final_train_steps"], 1);
}

// summary.json holds exactly the keys of its table (report/summary_fields.h, which bench exports
// for the peers): every key a one-process run writes, completed or diverged, is a row.
TEST_F(RunTest, SummaryJsonHoldsExactlyItsTablesKeys) {
  const std::set<std::string> want = testing::summary_keys({SummaryWhen::kAlways}, false);
  const RunResult done = run_benchmark(config());
  EXPECT_EQ(testing::keys_of(read_json_file(done.run_dir + "/summary.json")), want);
  RunConfig c = config();
  c.fault_nan_step = 3;
  c.save_dir = dir / "nan";
  const RunResult nan = run_benchmark(c);
  EXPECT_EQ(nan.status, RunStatus::kDiverged);
  EXPECT_EQ(testing::keys_of(read_json_file(nan.run_dir + "/summary.json")), want);
}

// Time to target: the first evaluation at or below --target_bpb records the training seconds
// (evaluations excluded), steps and tokens to it; --stop_at_target 1 ends the run there,
// completed; a target never reached is "not reached" (null figures), never a number.
TEST_F(RunTest, ARunStopsAtItsTargetAndSaysNotReachedOtherwise) {
  RunConfig c = config();
  c.steps = 8;
  c.eval_every = 4;
  c.eval_batches = 4;
  c.lr = 0.01;  // this tiny model starts above 8 bits per byte, below 7.9 by step 4
  c.target_bpb = 7.9;
  c.stop_at_target = true;
  const RunResult hit = run_benchmark(c);
  EXPECT_EQ(hit.status, RunStatus::kCompleted);
  const auto s = read_json_file(hit.run_dir + "/summary.json");
  EXPECT_EQ(s["target_bpb"], 7.9);
  EXPECT_EQ(s["target_reached"], true);
  EXPECT_EQ(s["stopped_at_target"], true);
  EXPECT_EQ(s["steps_to_target"], 4);
  EXPECT_EQ(s["steps_done"], 4);
  EXPECT_EQ(s["tokens_to_target"], 4 * c.batch_size * c.seq_len);
  EXPECT_GT(s["time_to_target_s"].get<double>(), 0);
  EXPECT_LT(s["time_to_target_s"].get<double>(), s["total_seconds"].get<double>());
  EXPECT_GT(s["eval_seconds_to_target"].get<double>(), 0);
  EXPECT_LE(s["final_valid_bpb"].get<double>(), 7.9);
  int evaluations = 0;  // the one at the target, no second one at the end
  for (const auto& l : read_jsonl(hit.run_dir + "/metrics.jsonl"))
    evaluations += l.contains("valid_bpb");
  EXPECT_EQ(evaluations, 1);
  // Its metrics line carries the clock's reading (the x of a bpb-against-time curve).
  EXPECT_EQ(testing::window_values(hit.run_dir, "train_s", "valid_bpb"),
            std::vector<double>{s["time_to_target_s"].get<double>()});

  c.target_bpb = 0.01;  // never reached
  c.stop_at_target = false;
  c.save_dir = dir / "never";
  const auto never = read_json_file(run_benchmark(c).run_dir + "/summary.json");
  EXPECT_EQ(never["target_reached"], false);
  EXPECT_EQ(never["steps_done"], 8);
  EXPECT_EQ(never["stopped_at_target"], false);
  for (const char* k :
       {"steps_to_target", "tokens_to_target", "time_to_target_s", "eval_seconds_to_target"}) {
    EXPECT_TRUE(never[k].is_null()) << k;
  }
  c.target_bpb = 0;  // no target: no figures at all
  c.save_dir = dir / "none";
  const auto none = read_json_file(run_benchmark(c).run_dir + "/summary.json");
  EXPECT_TRUE(none["target_bpb"].is_null());
  EXPECT_TRUE(none["target_reached"].is_null());

  // Bad input: one line, exit 2, nothing created.
  const std::string save = " --save_dir " + (dir / "bad");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--target_bpb 9",
       "bench: error: --target_bpb: 9 is out of range; allowed: 0 (none) or in (0, 8]\n"},
      {"--target_bpb -1",
       "bench: error: --target_bpb: -1 is out of range; allowed: 0 (none) or in (0, 8]\n"},
      {"--target_bpb 2 --eval_every 0",
       "bench: error: --target_bpb: needs evaluations during the run; give --eval_every N > 0\n"},
      {"--target_bpb 2 --eval_batches 2",
       "bench: error: --target_bpb: --eval_batches 2 is too few to judge a target; give 4 or "
       "more, or 0 for the whole held-out range\n"},
      {"--stop_at_target 1", "bench: error: --stop_at_target: needs --target_bpb\n"},
  };
  for (const auto& [args, expected] : cases) {
    const auto r = testing::run_bench(args + save);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_EQ(r.output, expected) << args;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "bad"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/bad_handcraft_layer24_float32"));
}

TEST_F(RunTest, InjectedNanStopsTheRunAsDiverged) {
  RunConfig c = config();
  c.fault_nan_step = 3;
  const RunResult r = run_benchmark(c);
  EXPECT_EQ(r.status, RunStatus::kDiverged);
  const auto s = read_json_file(r.run_dir + "/summary.json");
  EXPECT_EQ(s["status"], "diverged");
  EXPECT_EQ(s["steps_done"], 3);
  EXPECT_TRUE(s["final_valid_loss"].is_null());  // not evaluated; non-finite is null
}

std::vector<std::pair<int64_t, double>> train_lines(const std::string& run_dir) {
  std::vector<std::pair<int64_t, double>> out;
  for (const auto& l : read_jsonl(run_dir + "/metrics.jsonl")) {
    if (l.contains("loss")) out.emplace_back(l["step"], l["loss"]);
  }
  return out;
}

TEST_F(RunTest, TwentyStepsPlusResumePlusTwentyEqualFortyStraight) {
  RunConfig c = config();
  const auto [straight, first] = testing::straight_and_split(c, dir);
  c.log_every = 1;
  c.checkpoint_every = 10;
  c.save_dir = dir / "split";
  EXPECT_EQ(latest_checkpoint(first.run_dir), first.run_dir + "/checkpoint-20.pt");
  c.resume = first.run_dir;
  c.steps = 40;
  const RunResult resumed = run_benchmark(c);
  EXPECT_EQ(resumed.run_dir, first.run_dir);
  EXPECT_EQ(resumed.summary["resumed_from_step"], 20);
  const auto a = train_lines(straight.run_dir), b = train_lines(resumed.run_dir);
  ASSERT_EQ(a.size(), 40u);
  ASSERT_EQ(b.size(), 40u);  // no step missing or repeated
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(b[i].first, static_cast<int64_t>(i) + 1);
    EXPECT_EQ(a[i].second, b[i].second) << "step " << i + 1;
  }
  // Only the newest keep_checkpoints (2) remain.
  EXPECT_TRUE(std::filesystem::exists(first.run_dir + "/checkpoint-30.pt"));
  EXPECT_TRUE(std::filesystem::exists(first.run_dir + "/checkpoint-40.pt"));
  EXPECT_FALSE(std::filesystem::exists(first.run_dir + "/checkpoint-20.pt"));
}

TEST_F(RunTest, ResumeRefusesChangedFlagsAndFoldersWithoutCheckpoints) {
  RunConfig c = config();
  c.checkpoint_every = 3;
  const RunResult first = run_benchmark(c);
  c.resume = first.run_dir;
  c.steps = 12;
  c.lr = 5e-3;
  c.batch_size = 8;
  try {
    run_benchmark(c);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("these flags differ from the run in '" + first.run_dir +
                                         "': --batch_size, --lr"),
              std::string::npos)
        << e.what();
  }
  RunConfig plain = config();
  plain.save_dir = dir / "plain";
  const RunResult no_ckpt = run_benchmark(plain);
  plain.resume = no_ckpt.run_dir;
  plain.steps = 12;
  EXPECT_THROW(run_benchmark(plain), ConfigError);
}

TEST_F(RunTest, AnOccupiedRunFolderIsNeverOverwritten) {
  RunConfig c = config();
  const RunResult first = run_benchmark(c);
  const std::string before = testing::read_file(first.run_dir + "/summary.json");
  EXPECT_THROW(run_benchmark(c), ConfigError);
  EXPECT_EQ(testing::read_file(first.run_dir + "/summary.json"), before);
  c.overwrite = true;
  EXPECT_EQ(run_benchmark(c).status, RunStatus::kCompleted);
}

std::set<std::string> files_in_(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    out.insert(e.path().filename().string());
  }
  return out;
}

// Every file a run writes is a row of core/run_files.h, and --overwrite 1 clears each of them:
// a run with a profile, checkpoints and TensorBoard files, overwritten by one with none of
// them, leaves exactly the files a fresh run of the second kind writes (and a file bench never
// writes where it was).
TEST_F(RunTest, OverwriteLeavesNoFileOfTheEarlierRun) {
  RunConfig c = config();
  c.profile_steps = 1;
  c.checkpoint_every = 2;
  const RunResult first = run_benchmark(c);
  const std::set<std::string> before = files_in_(first.run_dir);
  for (const std::string& name : before) {
    EXPECT_NE(run_file_of(name), nullptr) << name << " is not in core/run_files.h";
  }
  EXPECT_TRUE(before.count(name_of(RunFile::kTrace)));
  EXPECT_TRUE(before.count("checkpoint-6.pt"));
  testing::write_file(first.run_dir + "/notes.txt", "mine");
  c.profile_steps = 0;
  c.checkpoint_every = -1;
  c.tensorboard = false;
  c.overwrite = true;
  const RunResult second = run_benchmark(c);
  c.save_dir = dir / "fresh";
  std::set<std::string> fresh = files_in_(run_benchmark(c).run_dir);
  fresh.insert("notes.txt");
  EXPECT_EQ(files_in_(second.run_dir), fresh);
  EXPECT_EQ(testing::read_file(second.run_dir + "/notes.txt"), "mine");
}

}  // namespace
}  // namespace trainbench
