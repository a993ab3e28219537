// One run folder, one writer (report/run_lock.h): runs that collide lose nothing, a killed
// holder frees its folder at once, a damaged newest checkpoint does not end a resume, and a
// file bench reads back names the field that is wrong.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "test_util.h"
#include "trainbench/app/run.h"
#include "trainbench/core/log.h"
#include "trainbench/report/report.h"
#include "trainbench/report/results.h"
#include "trainbench/report/run_lock.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;

const std::string kTinyFolder =
    " --num_layer 1 --d_model 32 --num_heads 2 --ff_dim 64 --seq_len 32 --batch_size 4"
    " --warmup_steps 1 --eval_every 0 --eval_batches 1 --threads 1 --device cpu"
    " --peak_tflops 1";

size_t lines_(const std::string& text) {
  size_t n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

// Starts bench in the background; returns its pid.
pid_t start_bench_(const std::string& args, const std::string& log) {
  const auto r = testing::run_command(std::string(TB_BENCH_EXE) + " " + args + " < /dev/null > " +
                                      log + " 2>&1 & echo $!");
  return static_cast<pid_t>(std::stol(r.output));
}

// The newest checkpoint step in `run` (0: none).
int newest_checkpoint_(const std::string& run) {
  int newest = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("checkpoint-", 0) == 0 && e.path().extension() == ".pt") {
      newest = std::max(newest, std::stoi(name.substr(11)));
    }
  }
  return newest;
}

// Waits (up to 60 s) until `run` holds a checkpoint (the rotation removes old ones quickly).
bool wait_for_checkpoint_(const std::string& run) {
  for (int i = 0; i < 600 && newest_checkpoint_(run) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return newest_checkpoint_(run) > 0;
}

TEST(RunFolder, TwoRunsStartedTogetherGiveOneRunAndOneOneLineRefusal) {
  testing::TempDir dir;
  const std::string args = kTinyFolder + " --steps 200 --log_every 10 --save_dir " + (dir / "r");
  const std::string cmd = std::string(TB_BENCH_EXE) + " " + args;
  const auto r = testing::run_command(
      "( " + cmd + " > " + (dir / "a.log") + " 2>&1; echo a $? >> " + (dir / "a.log") + " ) & ( " +
      cmd + " > " + (dir / "b.log") + " 2>&1; echo b $? >> " + (dir / "b.log") + " ) & wait");
  const std::string a = testing::read_file(dir / "a.log"), b = testing::read_file(dir / "b.log");
  const bool a_won = a.find("a 0") != std::string::npos;
  const std::string& lost = a_won ? b : a;
  EXPECT_NE((a_won ? b : a).find(a_won ? "b 2" : "a 2"), std::string::npos) << a << b;
  EXPECT_EQ(lines_(lost), 2u) << lost;  // the refusal, then the exit status echoed
  const bool in_use = lost.find("' is in use by bench pid ") != std::string::npos;
  const bool finished = lost.find("already holds results") != std::string::npos;
  EXPECT_TRUE(in_use || finished) << lost;
  const std::string run = dir / "r_handcraft_layer1_float32";
  const auto steps = testing::window_values(run, "step");
  ASSERT_EQ(steps.size(), 20u);  // every window once
  for (size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i], 10.0 * (i + 1));
  EXPECT_EQ(read_json_file(run + "/summary.json")["status"], "completed");
}

TEST(RunFolder, AResumeOfALiveRunIsRefusedAndAKilledHolderFreesItAtOnce) {
  testing::TempDir dir;
  const std::string run = dir / "live_handcraft_layer1_float32";
  const pid_t pid =
      start_bench_(kTinyFolder + " --steps 1000000 --log_every 5 --checkpoint_every 5" +
                       " --save_dir " + (dir / "live"),
                   dir / "live.log");
  ASSERT_TRUE(wait_for_checkpoint_(run)) << testing::read_file(dir / "live.log");
  const std::string before = testing::read_file(run + "/config.json");
  const auto refused = testing::run_bench("--resume " + run + " --steps 1000001");
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_EQ(lines_(refused.output), 1u) << refused.output;
  EXPECT_NE(refused.output.find("is in use by bench pid " + std::to_string(pid) + " on host "),
            std::string::npos)
      << refused.output;
  EXPECT_EQ(testing::read_file(run + "/config.json"), before);
  // SIGKILL: no handler runs, the kernel drops the hold with the process.
  kill(pid, SIGKILL);
  for (int i = 0; i < 100 && kill(pid, 0) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const int newest = newest_checkpoint_(run);
  const auto resumed =
      testing::run_bench("--resume " + run + " --steps " + std::to_string(newest + 2));
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(read_json_file(run + "/summary.json")["steps_done"], newest + 2);
}

// Twenty steps with checkpoints at 10 and 20, the newest one damaged (or without its record),
// then a resume to forty:
// the run continues from step 10 and its losses are the straight run's, bit for bit.
class DamagedCheckpoint : public ::testing::TestWithParam<const char*> {};

TEST_P(DamagedCheckpoint, ResumeContinuesFromThePreviousOneWithTheStraightRunsLosses) {
  log_set_quiet(true);
  testing::TempDir dir;
  RunConfig c = testing::tiny_config();
  c.dropout = 0.1;
  const auto [straight, first] = testing::straight_and_split(c, dir);
  const std::string newest = first.run_dir + "/checkpoint-20.pt";
  const auto size = fs::file_size(newest);
  if (std::string(GetParam()) == "truncated") {
    fs::resize_file(newest, size / 2);
  } else if (std::string(GetParam()) == "unrecorded") {
    fs::remove(newest + ".sum");  // every checkpoint bench writes has its record
  } else {
    std::fstream f(newest, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(size / 2));
    char byte = 0;
    f.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x10);
    f.seekp(static_cast<std::streamoff>(size / 2));
    f.write(&byte, 1);
  }
  // No new checkpoints, so that the rotation does not remove the damaged one.
  const auto r =
      testing::run_bench("--resume " + first.run_dir + " --steps 40 --checkpoint_every 0");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("checkpoint '" + newest + "' is damaged ("), std::string::npos)
      << r.output;
  EXPECT_NE(
      r.output.find("resuming " + first.run_dir + " from " + first.run_dir + "/checkpoint-10.pt"),
      std::string::npos)
      << r.output;
  EXPECT_TRUE(fs::exists(newest));  // left in place
  const auto a = testing::window_values(straight.run_dir),
             b = testing::window_values(first.run_dir);
  ASSERT_EQ(a.size(), 40u);
  ASSERT_EQ(b.size(), 40u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << "step " << i + 1;
  // With every checkpoint damaged: one line, exit 2.
  fs::resize_file(first.run_dir + "/checkpoint-10.pt", 10);
  const auto none = testing::run_bench("--resume " + first.run_dir + " --steps 50");
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_NE(none.output.find("holds no checkpoint that reads whole ("), std::string::npos)
      << none.output;
  log_set_quiet(false);
}

INSTANTIATE_TEST_SUITE_P(RunFolder, DamagedCheckpoint,
                         ::testing::Values("truncated", "bitflip", "unrecorded"));

// A second run of a folder that a live run is writing names the holder (not "already holds
// results"). Ctrl-C with the default --checkpoint_every writes a checkpoint of the step reached;
// the stop line says how to go on, and --resume gives the straight run's losses, bit for bit.
TEST(RunFolder, ACtrlCStopIsResumedToTheStraightRunsLosses) {
  testing::TempDir dir;
  const std::string flags = kTinyFolder + " --dropout 0.1 --log_every 1";
  const std::string run = dir / "split_handcraft_layer1_float32";
  const pid_t pid =
      start_bench_(flags + " --steps 1000000 --save_dir " + (dir / "split"), dir / "split.log");
  for (int i = 0; i < 600 && testing::window_values(run).size() < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const auto second = testing::run_bench(flags + " --steps 1000000 --save_dir " + (dir / "split"));
  EXPECT_EQ(second.exit_code, 2);
  EXPECT_EQ(lines_(second.output), 1u) << second.output;
  EXPECT_NE(second.output.find("' is in use by bench pid " + std::to_string(pid)),
            std::string::npos)
      << second.output;
  kill(pid, SIGINT);
  // Not our child (a shell started it): its hold goes when it has exited.
  for (int i = 0; i < 600 && run_folder_in_use(run); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const auto stopped = read_json_file(run + "/summary.json");
  ASSERT_EQ(stopped["status"], "interrupted");
  const int64_t at = stopped["steps_done"].get<int64_t>();
  EXPECT_EQ(newest_checkpoint_(run), at);
  EXPECT_NE(testing::read_file(dir / "split.log")
                .find("after step " + std::to_string(at) +
                      "; writing the results so far and a checkpoint: bench --resume " + run +
                      " continues it"),
            std::string::npos)
      << testing::read_file(dir / "split.log");
  const std::string steps = " --steps " + std::to_string(at + 4);
  const auto resumed = testing::run_bench("--resume " + run + steps);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  ASSERT_EQ(testing::run_bench(flags + steps + " --save_dir " + (dir / "straight")).exit_code, 0);
  const auto a = testing::window_values(dir / "straight_handcraft_layer1_float32"),
             b = testing::window_values(run);
  ASSERT_EQ(a.size(), static_cast<size_t>(at + 4));
  ASSERT_EQ(b.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << "step " << i + 1;
  // --checkpoint_every -1: no checkpoint at a stop, and the line says so.
  const std::string never = dir / "never_handcraft_layer1_float32";
  const pid_t p2 =
      start_bench_(flags + " --steps 1000000 --checkpoint_every -1 --save_dir " + (dir / "never"),
                   dir / "never.log");
  for (int i = 0; i < 600 && testing::window_values(never).size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(p2, SIGINT);
  for (int i = 0; i < 600 && run_folder_in_use(never); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(newest_checkpoint_(never), 0);
  EXPECT_NE(testing::read_file(dir / "never.log").find("(no checkpoint: --checkpoint_every -1)"),
            std::string::npos);
  const auto none = testing::run_bench("--resume " + never);
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.output.find("holds no checkpoint; a run writes one when a signal stops it"),
            std::string::npos)
      << none.output;
}

TEST(RunFolder, AWrongTypedConfigFieldIsNamedInOneLine) {
  testing::TempDir dir;
  const auto first = testing::run_bench(
      kTinyFolder + " --steps 4 --log_every 2 --checkpoint_every 2" + " --save_dir " + (dir / "r"));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const std::string run = dir / "r_handcraft_layer1_float32";
  nlohmann::json cfg = read_json_file(run + "/config.json");
  cfg["num_layer"] = "two";
  testing::write_file(run + "/config.json", cfg.dump());
  const auto r = testing::run_bench("--resume " + run);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(lines_(r.output), 1u) << r.output;
  EXPECT_NE(r.output.find("config.json': field 'num_layer' is string (\"two\"); expected an "
                          "integer"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("json.exception"), std::string::npos) << r.output;
  testing::write_file(run + "/config.json", "{\"num_layer\": 2,");
  const auto broken = testing::run_bench("--resume " + run);
  EXPECT_EQ(broken.exit_code, 2);
  EXPECT_NE(broken.output.find("is not valid JSON: parse error at line 1, column"),
            std::string::npos)
      << broken.output;
  const auto report = testing::run_bench("report " + run);
  EXPECT_EQ(report.output.find("json.exception"), std::string::npos) << report.output;
}

// One schema: a folder of another (here rewritten as schema 1 with its 0/1 switches) is refused
// by --resume in one line that says what to do, and nothing in it changes.
TEST(RunFolder, AResumeOfAnotherSchemaIsRefusedAndTheFolderKept) {
  testing::TempDir dir;
  const auto first = testing::run_bench(
      kTinyFolder + " --steps 4 --log_every 2 --checkpoint_every 2" + " --save_dir " + (dir / "r"));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const std::string run = dir / "r_handcraft_layer1_float32";
  nlohmann::json cfg = read_json_file(run + "/config.json");
  cfg["schema_version"] = 1;
  cfg["flash"] = 0;
  testing::write_file(run + "/config.json", cfg.dump());
  std::map<std::string, std::string> before;
  for (const auto& e : std::filesystem::directory_iterator(run)) {
    before[e.path().filename()] = testing::read_file(e.path());
  }
  const auto r = testing::run_bench("--resume " + run + " --steps 6");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(lines_(r.output), 1u) << r.output;
  EXPECT_NE(r.output.find("--resume: '" + run +
                          "/config.json' has schema_version 1; this bench "
                          "reads " +
                          std::to_string(kSchemaVersion) +
                          " only: start the run again with its flags into a new folder"),
            std::string::npos)
      << r.output;
  std::map<std::string, std::string> after;
  for (const auto& e : std::filesystem::directory_iterator(run)) {
    after[e.path().filename()] = testing::read_file(e.path());
  }
  EXPECT_EQ(after, before);
}

// A folder without summary.json (SIGHUP before the handler existed, SIGKILL, a crash) is listed
// by bench report as killed with the last step it logged, or as running while a bench holds it.
TEST(RunFolder, AReportListsAFolderWithoutSummaryAsKilledOrRunning) {
  log_set_quiet(true);
  testing::TempDir dir;
  RunConfig c = testing::tiny_config();
  c.steps = 6;
  c.save_dir = dir / "k";
  const RunResult r = run_benchmark(c);
  log_set_quiet(false);
  fs::remove(r.run_dir + "/summary.json");
  const RunRecord killed = read_run(r.run_dir);
  EXPECT_EQ(killed.status, "killed");
  EXPECT_EQ(killed.last_step, 6);
  const std::string md = render_report({killed}, ReportOptions{});
  EXPECT_NE(md.find("| killed at step 6 | "), std::string::npos) << md;
  // Where and when it ran, from its env.json.
  EXPECT_EQ(killed.date,
            read_json_file(r.run_dir + "/env.json")["started_at"].get<std::string>().substr(0, 10));
  EXPECT_FALSE(killed.machine.empty());
  EXPECT_NE(md.find(" | " + killed.machine + " | " + killed.date + " | " + killed.revision + " | " +
                    r.run_dir + " |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| float32 | killed |"), std::string::npos) << md;
  {
    const RunFolderLock live = RunFolderLock::acquire(r.run_dir, false);
    EXPECT_TRUE(run_folder_in_use(r.run_dir));
    EXPECT_EQ(read_run(r.run_dir).status, "running");
  }
  EXPECT_FALSE(run_folder_in_use(r.run_dir));
  const auto cli = testing::run_bench("report " + r.run_dir);
  EXPECT_EQ(cli.exit_code, 0) << cli.output;
  EXPECT_NE(cli.output.find("killed at step 6"), std::string::npos) << cli.output;
}

}  // namespace
}  // namespace trainbench
