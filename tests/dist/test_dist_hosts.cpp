// Data parallel across separate network hosts: each test makes its own hosts (network
// namespaces cabled to a bridge, scripts/test_hosts.sh) and runs one bench rank on each, with
// MASTER_ADDR = rank 0's host address and GLOO_SOCKET_IFNAME = the host's interface, as on two
// machines. Skips, saying why, where namespaces are refused (no privilege).
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "trainbench/report/results.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;
using testing::run_command;

const std::string kHosts = "bash " TB_SOURCE_DIR "/scripts/test_hosts.sh ";
const int kPort = 29500;  // every test has its own hosts, so one port serves all

// A tiny model, dropout off, as the loopback equivalence test uses.
const std::string kArgs =
    " --num_layer 1 --d_model 32 --num_heads 2 --ff_dim 64 --seq_len 32 --warmup_steps 2"
    " --log_every 1 --eval_every 10 --eval_batches 2 --threads 1 --device cpu --peak_tflops 1"
    " --dropout 0";

class DistHosts : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto check = run_command(kHosts + "check");
    if (check.exit_code != 0) GTEST_SKIP() << check.output;
    prefix_ = "tbh-" + std::to_string(getpid() % 100000);
    const auto up = run_command(kHosts + "up " + prefix_ + " 2");
    ASSERT_EQ(up.exit_code, 0) << up.output;
  }
  void TearDown() override {
    if (!prefix_.empty()) run_command(kHosts + "down " + prefix_);
  }

  // The command line of rank `rank` of `world` on host `host`, rendezvous at `master`.
  std::string rank_cmd(int host, int rank, int world, const std::string& args,
                       const std::string& master = "10.77.0.1") const {
    return kHosts + "exec " + prefix_ + " " + std::to_string(host) +
           " env RANK=" + std::to_string(rank) + " WORLD_SIZE=" + std::to_string(world) +
           " MASTER_ADDR=" + master + " MASTER_PORT=" + std::to_string(kPort) +
           " GLOO_SOCKET_IFNAME=eth0 " TB_BENCH_EXE + args;
  }

  std::string prefix_;
  testing::TempDir dir_;

 public:
  std::string rank_cmd_public(int host, int rank, int world, const std::string& args) const {
    return rank_cmd(host, rank, world, args);
  }
};

// 2 hosts x 1 rank = 1 process at twice the batch: the same losses (1e-4, the loopback test's
// tolerance), identical replicas, and only rank 0's host prints and writes results.
TEST_F(DistHosts, TwoHostsMatchOneProcessWithTwiceTheBatch) {
  const std::string args =
      kArgs + " --steps 20 --batch_size 4 --dist_timeout 20 --save_dir " + (dir_ / "two");
  const auto two =
      run_command("{ " + rank_cmd(1, 1, 2, args) + " > " + (dir_ / "log1") + " 2>&1 & " +
                  rank_cmd(0, 0, 2, args) + "; rc=$?; wait $! || rc=9;" + " exit $rc; }");
  ASSERT_EQ(two.exit_code, 0) << two.output << testing::read_file(dir_ / "log1");
  const auto one =
      run_command(TB_BENCH_EXE + kArgs + " --steps 20 --batch_size 8 --save_dir " + (dir_ / "one"));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const auto l2 = testing::window_values(dir_ / "two_handcraft_layer1_float32");
  const auto l1 = testing::window_values(dir_ / "one_handcraft_layer1_float32");
  ASSERT_EQ(l2.size(), 20u);
  ASSERT_EQ(l1.size(), 20u);
  for (size_t i = 0; i < l1.size(); ++i) EXPECT_NEAR(l2[i], l1[i], 1e-4) << "step " << i + 1;
  const auto s = read_json_file(dir_ / "two_handcraft_layer1_float32/summary.json");
  EXPECT_EQ(s["world_size"], 2);
  EXPECT_EQ(s["replicas_identical"], true);
  EXPECT_NE(two.output.find("results:"), std::string::npos) << two.output;
  EXPECT_EQ(testing::read_file(dir_ / "log1").find("results:"), std::string::npos);
}

// A rendezvous address nobody answers at: the rank fails within --dist_timeout plus start-up,
// naming the address.
TEST_F(DistHosts, AnUnreachableRendezvousHostFailsWithinTheTimeoutNamingIt) {
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_command(rank_cmd(1, 1, 2,
                                      kArgs +
                                          " --steps 4 --batch_size 4 --dist_timeout 3 "
                                          "--save_dir " +
                                          (dir_ / "u"),
                                      "10.77.0.9"));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("10.77.0.9:" + std::to_string(kPort)), std::string::npos) << r.output;
  EXPECT_LT(seconds, 3 + 30) << r.output;  // start-up and a loaded machine: well under a minute
  EXPECT_FALSE(fs::exists(dir_ / "u_handcraft_layer1_float32"));
}

// A rank that joins late, within the timeout: the run proceeds and completes.
TEST_F(DistHosts, ARankJoiningLateWithinTheTimeoutIsWaitedFor) {
  const std::string args =
      kArgs + " --steps 4 --batch_size 4 --dist_timeout 20 --save_dir " + (dir_ / "late");
  const auto r =
      run_command("{ (sleep 3; " + rank_cmd(1, 1, 2, args) + ") > " + (dir_ / "log1") + " 2>&1 & " +
                  rank_cmd(0, 0, 2, args) + "; rc=$?; wait $! || rc=9;" + " exit $rc; }");
  ASSERT_EQ(r.exit_code, 0) << r.output << testing::read_file(dir_ / "log1");
  const auto s = read_json_file(dir_ / "late_handcraft_layer1_float32/summary.json");
  EXPECT_EQ(s["status"], "completed");
  EXPECT_EQ(s["world_size"], 2);
}

// Runs both ranks in the background, waits for rank 0's first checkpoint, does `fault` (a shell
// command; $p1 is rank 1's pid), then waits for both. Returns the output with each rank's exit
// status ("rc0=N", "rc1=N") and the seconds from the fault to the last exit ("after=N").
testing::CommandResult run_with_fault(const DistHosts& t, const std::string& args,
                                      const std::string& run_dir, const std::string& fault,
                                      const std::string& logs) {
  return run_command("{ " + t.rank_cmd_public(1, 1, 2, args) + " > " + logs + "1 2>&1 & p1=$!; " +
                     t.rank_cmd_public(0, 0, 2, args) + " > " + logs + "0 2>&1 & p0=$!; " +
                     "for i in $(seq 600); do ls " + run_dir +
                     "/checkpoint-*.pt >/dev/null 2>&1 && break; sleep 0.05; done; " + fault +
                     "; t0=$(date +%s); wait $p0; echo rc0=$?; wait $p1; echo rc1=$?;" +
                     " echo after=$(( $(date +%s) - t0 )); }");
}

// Both ranks again, on the same run folder, with --resume: the run completes.
void expect_resume_completes(const DistHosts& t, const std::string& args,
                             const std::string& run_dir, const std::string& logs) {
  const std::string resume = args + " --resume " + run_dir;
  const auto r = run_command("{ " + t.rank_cmd_public(1, 1, 2, resume) + " > " + logs +
                             "r1 2>&1 & " + t.rank_cmd_public(0, 0, 2, resume) + " > " + logs +
                             "r0 2>&1; rc=$?; wait $! || rc=9; exit $rc; }");
  EXPECT_EQ(r.exit_code, 0) << testing::read_file(logs + "r0") << testing::read_file(logs + "r1");
  const auto s = read_json_file(run_dir + "/summary.json");
  EXPECT_EQ(s["status"], "completed");
  EXPECT_EQ(s["replicas_identical"], true);
}

// Long enough that a fault lands mid-run (each step takes about a millisecond).
std::string fault_args(const testing::TempDir& dir) {
  return testing::merge_flags(kArgs,
                              " --steps 3000 --batch_size 4 --log_every 100 --eval_every 0"
                              " --checkpoint_every 100 --dist_timeout 5 --save_dir " +
                                  (dir / "f"));
}

// SIGKILL to the process on host 1: rank 0 fails at once naming rank 1 and its host, writes
// summary.json `failed`, keeps its last checkpoint, and the run resumes to the end.
TEST_F(DistHosts, AHostsKilledProcessFailsTheOtherNamingRankAndHost) {
  const std::string run = dir_ / "f_handcraft_layer1_float32";
  const auto r = run_with_fault(*this, fault_args(dir_), run, "kill -9 $p1", dir_ / "log");
  const std::string log0 = testing::read_file(dir_ / "log0");
  EXPECT_NE(r.output.find("rc0=1"), std::string::npos) << r.output << log0;
  EXPECT_NE(r.output.find("rc1=137"), std::string::npos) << r.output;
  EXPECT_NE(log0.find("rank 1 stopped responding (host 10.77.0.2;"), std::string::npos) << log0;
  const auto s = read_json_file(run + "/summary.json");
  EXPECT_EQ(s["status"], "failed");
  expect_resume_completes(*this, fault_args(dir_), run, dir_ / "log");
}

// Host 1's cable pulled mid-run: both ranks stop within --dist_timeout (5 s) plus a grace and
// teardown, rank 0 naming rank 1 and its host, rank 1 naming rank 0's store; once the cable is
// back the run resumes from the last checkpoint to the end.
TEST_F(DistHosts, ALinkTakenDownStopsBothRanksAndTheRunResumesOnceItIsBack) {
  const std::string run = dir_ / "f_handcraft_layer1_float32";
  const auto r = run_with_fault(*this, fault_args(dir_), run,
                                kHosts + "link " + prefix_ + " 1 down", dir_ / "log");
  const std::string log0 = testing::read_file(dir_ / "log0");
  const std::string log1 = testing::read_file(dir_ / "log1");
  EXPECT_NE(r.output.find("rc0=1"), std::string::npos) << r.output << log0;
  EXPECT_NE(r.output.find("rc1=1"), std::string::npos) << r.output << log1;
  int after = 999;
  const size_t at = r.output.find("after=");
  if (at != std::string::npos) after = std::stoi(r.output.substr(at + 6));
  // --dist_timeout (5 s) and the grace before teardown, with room for a loaded machine; a rank
  // without the timeout would wait on the dead link for many minutes.
  EXPECT_LE(after, 5 + 30) << r.output;
  EXPECT_NE(log0.find("rank 1 stopped responding (host 10.77.0.2;"), std::string::npos) << log0;
  EXPECT_NE(log1.find("rank 0 (host of the store at 10.77.0.1:"), std::string::npos) << log1;
  EXPECT_EQ(read_json_file(run + "/summary.json")["status"], "failed");
  ASSERT_EQ(run_command(kHosts + "link " + prefix_ + " 1 up").exit_code, 0);
  expect_resume_completes(*this, fault_args(dir_), run, dir_ / "log");
}

// The scripts' bad arguments: one line naming what was wrong and what is allowed, nothing made.
TEST(TestHostsScripts, BadArgumentsAreOneLineErrors) {
  auto r = run_command(kHosts + "up evil 2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "test_hosts.sh: PREFIX 'evil': use tbh- and 1-6 letters or digits\n");
  r = run_command(kHosts + "up tbh-x 12");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("N '12': use 1-9 hosts"), std::string::npos) << r.output;
  r = run_command(kHosts + "frobnicate");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "test_hosts.sh: unknown command 'frobnicate'\n");
  testing::TempDir dir;
  r = run_command("bash " TB_SOURCE_DIR "/scripts/host_net_bench.sh " + (dir / "o") +
                  " none 1gbps");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output,
            "host_net_bench.sh: RATE '1gbps': use none or a number with kbit|mbit|gbit\n");
  EXPECT_FALSE(fs::exists(dir / "o"));
}

}  // namespace
}  // namespace trainbench
