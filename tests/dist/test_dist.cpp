// Multi-process data parallelism (CPU, Gloo, localhost): the launch environment, rank shards,
// equivalence with one process of twice the batch, identical replicas, signals, torchrun and
// the all-reduce benchmark (the failures are in test_dist_faults.cpp).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "dist/dist_util.h"
#include "test_util.h"
#include "trainbench/data/sampler.h"
#include "trainbench/dist/dist.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;
using testing::free_port;
using testing::merge_flags;
using testing::run_command;
using testing::dist::kArgs;
using testing::dist::launch;
using testing::dist::metric_lines;
using testing::dist::rank_env;

TEST(DistEnv, DefaultsAreOneProcessAndTorchrunValuesParse) {
  const DistEnv one = parse_dist_env({});
  EXPECT_FALSE(one.distributed());
  EXPECT_EQ(one.world_size, 1);
  const DistEnv e = parse_dist_env({{"RANK", "3"},
                                    {"WORLD_SIZE", "8"},
                                    {"LOCAL_RANK", "1"},
                                    {"LOCAL_WORLD_SIZE", "2"},
                                    {"MASTER_ADDR", "10.0.0.7"},
                                    {"MASTER_PORT", "29600"}});
  EXPECT_TRUE(e.distributed());
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.world_size, 8);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.local_world_size, 2);
  EXPECT_EQ(e.master_addr, "10.0.0.7");
  EXPECT_EQ(e.master_port, 29600);
  // Without LOCAL_*, all ranks are taken to share this machine.
  const DistEnv local = parse_dist_env({{"RANK", "1"}, {"WORLD_SIZE", "2"}});
  EXPECT_EQ(local.local_rank, 1);
  EXPECT_EQ(local.local_world_size, 2);
}

TEST(DistEnv, BadValuesNameTheVariableAndWhatIsAllowed) {
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {{{"WORLD_SIZE", "two"}}, "WORLD_SIZE: 'two' is not allowed; use an integer >= 1"},
      {{{"WORLD_SIZE", "0"}}, "WORLD_SIZE: '0' is not allowed; use an integer >= 1"},
      {{{"WORLD_SIZE", "2"}}, "RANK: not set while WORLD_SIZE is 2"},
      {{{"WORLD_SIZE", "2"}, {"RANK", "2"}},
       "RANK: '2' is not allowed; use an integer in [0, WORLD_SIZE-1 = 1]"},
      {{{"WORLD_SIZE", "2"}, {"RANK", "-1"}}, "RANK: '-1' is not allowed"},
      {{{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_PORT", "70000"}},
       "MASTER_PORT: '70000' is not allowed; use a TCP port in [1, 65535]"},
      {{{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"LOCAL_RANK", "5"}}, "LOCAL_RANK: '5' is not allowed"},
      {{{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"LOCAL_WORLD_SIZE", "3"}},
       "LOCAL_WORLD_SIZE: '3' is not allowed; use an integer in [1, WORLD_SIZE]"},
  };
  for (const auto& [vars, message] : cases) {
    try {
      parse_dist_env(vars);
      ADD_FAILURE() << "accepted: " << message;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
}

TEST(DistEnv, BenchRefusesABadLaunchEnvironmentWithExitTwo) {
  const auto r = run_command("RANK=2 WORLD_SIZE=2 " TB_BENCH_EXE " --device cpu");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output,
            "bench: error: RANK: '2' is not allowed; use an integer in [0, WORLD_SIZE-1 = 1]\n");
  const auto nccl =
      run_command("RANK=0 WORLD_SIZE=2 " TB_BENCH_EXE " --device cpu --dist_backend nccl");
  EXPECT_EQ(nccl.exit_code, 2);
  EXPECT_NE(nccl.output.find("--dist_backend: 'nccl' needs --device cuda"), std::string::npos);
}

TEST(DistSampler, RankSharesOfTheGlobalBatchAreTheOneProcessBatch) {
  SamplerOptions one;
  one.train_end = 20000;
  one.seq_len = 16;
  one.batch_size = 8;
  one.seed = 5;
  EpochSampler single(one);
  SamplerOptions r0 = one, r1 = one;
  r0.batch_size = r1.batch_size = 4;
  r0.world_size = r1.world_size = 2;
  r1.rank = 1;
  EpochSampler s0(r0), s1(r1);
  for (int b = 0; b < 400; ++b) {  // several epochs
    const auto whole = single.next_batch();
    const auto a = s0.next_batch(), c = s1.next_batch();
    ASSERT_EQ(a.size(), 4u);
    for (size_t j = 0; j < 4; ++j) {
      EXPECT_EQ(a[j], whole[2 * j]);
      EXPECT_EQ(c[j], whole[2 * j + 1]);
    }
  }
  EXPECT_EQ(s0.epoch(), single.epoch());
  const auto shares = rank_share({{1, 2, 3, 4, 5}, {6}}, 1, 2);
  EXPECT_EQ(shares, (std::vector<std::vector<int64_t>>{{2, 4}}));
}

TEST(DistFingerprint, EqualForEqualBytesAndChangedByOneBit) {
  const torch::Tensor a = torch::randn({10, 3});
  torch::Tensor b = a.clone();
  EXPECT_EQ(parameter_fingerprint({a, b}), parameter_fingerprint({a.clone(), b.clone()}));
  auto* bits = static_cast<uint32_t*>(b.data_ptr());
  bits[7] ^= 1u;
  EXPECT_NE(parameter_fingerprint({a, a}), parameter_fingerprint({a, b}));
}

TEST(DistTraining, TwoRanksMatchOneProcessWithTwiceTheBatch) {
  testing::TempDir dir;
  const auto two = run_command(
      launch(2, free_port(), std::string(kArgs) + " --batch_size 4 --save_dir " + (dir / "two")));
  ASSERT_EQ(two.exit_code, 0) << two.output;
  const auto one = run_command(std::string(TB_BENCH_EXE) + kArgs + " --batch_size 8 --save_dir " +
                               (dir / "one"));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const std::string d2 = dir / "two_handcraft_layer1_float32";
  const std::string d1 = dir / "one_handcraft_layer1_float32";
  const auto l2 = metric_lines(d2, "loss"), l1 = metric_lines(d1, "loss");
  ASSERT_EQ(l2.size(), 20u);
  ASSERT_EQ(l1.size(), 20u);
  for (size_t i = 0; i < l1.size(); ++i) {
    EXPECT_NEAR(l2[i]["loss"].get<double>(), l1[i]["loss"].get<double>(), 1e-4) << "step " << i;
  }
  const auto v2 = metric_lines(d2, "valid_loss"), v1 = metric_lines(d1, "valid_loss");
  ASSERT_EQ(v2.size(), 2u);
  for (size_t i = 0; i < v1.size(); ++i) {
    EXPECT_NEAR(v2[i]["valid_loss"].get<double>(), v1[i]["valid_loss"].get<double>(), 1e-4);
  }
  const auto s = nlohmann::json::parse(testing::read_file(d2 + "/summary.json"));
  EXPECT_EQ(testing::keys_of(s),
            testing::summary_keys({SummaryWhen::kAlways, SummaryWhen::kMultiProcess}, false));
  EXPECT_EQ(s["world_size"], 2);
  EXPECT_EQ(s["global_batch_size"], 8);
  EXPECT_EQ(s["replicas_identical"], true);
  EXPECT_EQ(s["per_rank_step_time_ms"].size(), 2u);
  EXPECT_GE(s["communication_share"].get<double>(), 0.0);
  EXPECT_LE(s["communication_share"].get<double>(), 1.0);
  const auto c = nlohmann::json::parse(testing::read_file(d2 + "/config.json"));
  EXPECT_EQ(c["dist_backend"], "gloo");
  EXPECT_EQ(c["world_size"], 2);
  // Only rank 0 prints the result table.
  ASSERT_NE(two.output.find("results:"), std::string::npos);
  EXPECT_NE(two.output.find("| cpu x2 |"), std::string::npos) << two.output;
  EXPECT_EQ(two.output.find("results:"), two.output.rfind("results:"));
}

// --compile fused in a data-parallel run: the fused ops' gradients reach the buckets like
// eager's, and two ranks train one process's losses with twice the batch.
TEST(DistTraining, FusedTwoRanksMatchOneProcessWithTwiceTheBatch) {
  testing::TempDir dir;
  const std::string args = std::string(kArgs) + " --compile fused";
  const auto two =
      run_command(launch(2, free_port(), args + " --batch_size 4 --save_dir " + (dir / "two")));
  ASSERT_EQ(two.exit_code, 0) << two.output;
  const auto one =
      run_command(std::string(TB_BENCH_EXE) + args + " --batch_size 8 --save_dir " + (dir / "one"));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const auto l2 = metric_lines(dir / "two_handcraft_layer1_float32_fused", "loss"),
             l1 = metric_lines(dir / "one_handcraft_layer1_float32_fused", "loss");
  ASSERT_EQ(l2.size(), 20u);
  ASSERT_EQ(l1.size(), 20u);
  for (size_t i = 0; i < l1.size(); ++i) {
    EXPECT_NEAR(l2[i]["loss"].get<double>(), l1[i]["loss"].get<double>(), 1e-4) << "step " << i;
  }
  const auto s = nlohmann::json::parse(
      testing::read_file(dir / "two_handcraft_layer1_float32_fused/summary.json"));
  EXPECT_EQ(s["replicas_identical"], true);
  EXPECT_EQ(s["compile_backend"], "fused");
}

TEST(DistTraining, ManyBucketsOverlappedOrNotGiveTheSameNumbersAsOne) {
  testing::TempDir dir;
  const std::string common = merge_flags(kArgs, " --batch_size 4 --steps 6");
  auto fingerprint_and_buckets = [&](const std::string& name, const std::string& flags) {
    const auto r =
        run_command(launch(2, free_port(), common + flags + " --save_dir " + (dir / name)));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const auto s = nlohmann::json::parse(
        testing::read_file(dir / (name + "_handcraft_layer1_float32/summary.json")));
    EXPECT_EQ(s["replicas_identical"], true);
    return std::make_pair(s["param_fingerprint"].get<std::string>(), s["grad_buckets"].get<int>());
  };
  const auto one = fingerprint_and_buckets("one", "");
  const auto overlapped = fingerprint_and_buckets("ov", " --bucket_mb 0.01");
  const auto after = fingerprint_and_buckets("after", " --bucket_mb 0.01 --dist_overlap 0");
  EXPECT_EQ(one.second, 1);
  EXPECT_GT(overlapped.second, 3);
  EXPECT_EQ(overlapped.second, after.second);
  EXPECT_EQ(overlapped.first, one.first);  // bit for bit: bucketing changes no sum
  EXPECT_EQ(after.first, one.first);
}

TEST(DistTraining, ResumedTwoRankRunEqualsTheStraightOneAndKeepsItsWorldSize) {
  testing::TempDir dir;
  // With dropout: every rank's dropout stream must continue exactly.
  const std::string common = merge_flags(kArgs, " --batch_size 4 --eval_every 0 --dropout 0.1");
  ASSERT_EQ(run_command(
                launch(2, free_port(), merge_flags(common, " --steps 8 --save_dir " + (dir / "s"))))
                .exit_code,
            0);
  const std::string part = dir / "p_handcraft_layer1_float32";
  ASSERT_EQ(run_command(launch(2, free_port(),
                               merge_flags(common, " --steps 4 --checkpoint_every 4 --save_dir " +
                                                       (dir / "p"))))
                .exit_code,
            0);
  // One process cannot continue a two-process run: the global batch would change.
  const auto one =
      run_command(std::string(TB_BENCH_EXE) + merge_flags(common, " --steps 8 --resume " + part));
  EXPECT_EQ(one.exit_code, 2);
  EXPECT_NE(one.output.find("these flags differ from the run in '" + part +
                            "': WORLD_SIZE (the number of processes)"),
            std::string::npos)
      << one.output;
  const auto r =
      run_command(launch(2, free_port(), merge_flags(common, " --steps 8 --resume " + part)));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto straight =
      nlohmann::json::parse(testing::read_file(dir / "s_handcraft_layer1_float32/summary.json"));
  const auto resumed = nlohmann::json::parse(testing::read_file(part + "/summary.json"));
  EXPECT_EQ(resumed["steps_done"], 8);
  EXPECT_EQ(resumed["param_fingerprint"], straight["param_fingerprint"]);
}

TEST(DistTraining, ASignalStopsEveryRankAfterTheSameStep) {
  testing::TempDir dir;
  const std::string run = dir / "s_handcraft_layer1_float32";
  // SIGTERM to the launcher is passed on to both ranks once training has logged a window.
  const auto r = run_command(
      "{ " +
      launch(2, free_port(),
             merge_flags(kArgs, " --batch_size 4 --steps 1000000 --save_dir " + (dir / "s"))) +
      " & pid=$!; for i in $(seq 600); do grep -q loss " + run +
      "/metrics.jsonl 2>/dev/null && break; sleep 0.1; done; kill -TERM $pid; wait $pid; }");
  EXPECT_EQ(r.exit_code, 143) << r.output;
  const auto s = nlohmann::json::parse(testing::read_file(run + "/summary.json"));
  EXPECT_EQ(s["status"], "interrupted");
  EXPECT_EQ(s["replicas_identical"], true);  // both ranks ran the same number of steps
  EXPECT_LT(s["steps_done"].get<int>(), 1000000);
}

TEST(DistTraining, ASignalToOneRankStopsBothWithItsNumber) {
  testing::TempDir dir;
  const int port = free_port();
  const std::string run = dir / "o_handcraft_layer1_float32";
  const std::string args =
      merge_flags(kArgs, " --batch_size 4 --steps 1000000 --save_dir " + (dir / "o"));
  // Only rank 1 gets SIGTERM; rank 0 learns it with the next step's all-reduce.
  const auto r = run_command("{ " + rank_env(1, 2, port) + TB_BENCH_EXE + args +
                             " >/dev/null 2>&1 & p1=$!; " + rank_env(0, 2, port) + TB_BENCH_EXE +
                             args + " & p0=$!; for i in $(seq 600); do grep -q loss " + run +
                             "/metrics.jsonl 2>/dev/null && break; sleep 0.1; done; kill -TERM "
                             "$p1; wait $p0; rc=$?; wait $p1; exit $rc; }");
  EXPECT_EQ(r.exit_code, 143) << r.output;
  const auto s = nlohmann::json::parse(testing::read_file(run + "/summary.json"));
  EXPECT_EQ(s["status"], "interrupted");
  EXPECT_EQ(s["stop_signal"], 15);
  EXPECT_EQ(s["replicas_identical"], true);
}

// torchrun of the project's environment (the same torch 2.11 as bench's LibTorch).
TEST(DistTraining, TorchrunLaunchesBench) {
  const std::string torchrun = fs::path(TB_PYTHON).parent_path() / "torchrun";
  ASSERT_TRUE(fs::exists(torchrun)) << torchrun << " is missing: run scripts/install_deps.sh";
  testing::TempDir dir;
  const auto r = run_command(
      torchrun + " --redirects 1 --tee 1 --log_dir " + (dir / "logs") +
      " --no_python --nproc_per_node=2 --master_port " + std::to_string(free_port()) +
      " " TB_BENCH_EXE + merge_flags(kArgs, " --batch_size 4 --steps 4 --save_dir " + (dir / "t")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto s =
      nlohmann::json::parse(testing::read_file(dir / "t_handcraft_layer1_float32/summary.json"));
  EXPECT_EQ(s["world_size"], 2);
  EXPECT_EQ(s["replicas_identical"], true);
}

// Gloo lives inside libtorch_cpu; bench compiles c10d's ProcessGroupGloo.hpp against Debian's
// older Gloo declarations (cmake/torch.cmake). That is safe only while our binaries hold no Gloo
// code of their own, which the dynamic linker could bind libtorch's Gloo calls to, and link no
// second Gloo library.
TEST(DistGloo, BenchDefinesNoGlooSymbolAndLinksNoOtherGloo) {
  const auto nm = run_command("nm -C --defined-only " TB_BENCH_EXE " | grep -c ' gloo::'");
  EXPECT_EQ(nm.output, "0\n") << "gloo symbols defined in bench";
  const auto ldd = run_command("ldd " TB_BENCH_EXE);
  ASSERT_EQ(ldd.exit_code, 0) << ldd.output;
  EXPECT_EQ(ldd.output.find("libgloo"), std::string::npos) << ldd.output;
  EXPECT_NE(ldd.output.find("libtorch_cpu.so"), std::string::npos) << ldd.output;
}

TEST(AllreduceBench, MeasuresEachSizeAcrossRanksAndNeedsALaunch) {
  const auto r =
      run_command("bash " TB_SOURCE_DIR "/scripts/launch.sh --port " + std::to_string(free_port()) +
                  " 2 " TB_ALLREDUCE_EXE " --max_mb 0.02 --seconds 0.05");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("# 2 ranks, gloo, float32 sum"), std::string::npos) << r.output;
  for (const char* bytes : {"| 4096 | ", "| 16384 | "}) {
    const size_t at = r.output.find(bytes);
    ASSERT_NE(at, std::string::npos) << r.output;
    const double ms = std::stod(r.output.substr(at + std::strlen(bytes)));
    EXPECT_GT(ms, 0.0);
    EXPECT_LT(ms, 1000.0);
  }
  EXPECT_EQ(r.output.find("| 65536 | "), std::string::npos);  // above --max_mb
  const auto alone = run_command(TB_ALLREDUCE_EXE);
  EXPECT_EQ(alone.exit_code, 2);
  EXPECT_NE(alone.output.find("allreduce_bench: error: WORLD_SIZE: unset or 1"), std::string::npos);
}

}  // namespace
}  // namespace trainbench
