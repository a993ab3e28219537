// Multi-process failures (CPU, Gloo, localhost): a rank that never comes, one that dies, rank 0's
// store gone, flags that differ across ranks, an error only rank 0 sees and a port in use; each
// is named within the timeout and leaves nothing half-written.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "dist/dist_util.h"
#include "test_util.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;
using testing::free_port;
using testing::merge_flags;
using testing::run_command;
using testing::dist::kArgs;
using testing::dist::launch;
using testing::dist::rank_env;

TEST(DistFaults, AMissingRankTimesOutNamingItAndLeavesNothing) {
  testing::TempDir dir;
  const auto t0 = std::chrono::steady_clock::now();
  const auto r =
      run_command(rank_env(0, 3, free_port()) + TB_BENCH_EXE +
                  merge_flags(kArgs, " --batch_size 4 --dist_timeout 2 --save_dir " + (dir / "m")));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("bench: rank 0: failed: ranks 1, 2 of 3 did not join within 2 s "
                          "(--dist_timeout)"),
            std::string::npos)
      << r.output;
  EXPECT_LT(s, 30.0);
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

// Two ranks on `port`; `dying` exits before step 5 (in the background). Returns the other
// rank's output and status.
testing::CommandResult run_with_a_crashing_rank(int dying, int port, const std::string& save) {
  const std::string args =
      merge_flags(kArgs, " --batch_size 4 --dist_timeout 10 --save_dir " + save);
  return run_command("{ (" + rank_env(dying, 2, port) + TB_BENCH_EXE + args +
                     " --fault_exit_step 5 >/dev/null 2>&1 &) ; " + rank_env(1 - dying, 2, port) +
                     TB_BENCH_EXE + args + "; }");
}

TEST(DistFaults, ARankThatDiesMidRunFailsTheOthersNamingIt) {
  testing::TempDir dir;
  const auto r = run_with_a_crashing_rank(1, free_port(), dir / "d");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("rank 1 stopped responding"), std::string::npos) << r.output;
  const auto s =
      nlohmann::json::parse(testing::read_file(dir / "d_handcraft_layer1_float32/summary.json"));
  EXPECT_EQ(s["status"], "failed");
  EXPECT_EQ(s["steps_done"], 4);
  EXPECT_NE(s["error_message"].get<std::string>().find("rank 1 stopped responding"),
            std::string::npos);
}

TEST(DistFaults, WhenRankZeroDiesTheOthersSayItsStoreIsGone) {
  testing::TempDir dir;
  const int port = free_port();
  const auto r = run_with_a_crashing_rank(0, port, dir / "z");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("bench: rank 1: failed: all-reduce failed: "), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("; rank 0 (host of the store at 127.0.0.1:" + std::to_string(port) +
                          ") is gone"),
            std::string::npos)
      << r.output;
}

TEST(DistFaults, FlagsThatDifferAcrossRanksStopEveryRankBeforeAnythingIsWritten) {
  testing::TempDir dir;
  const int port = free_port();
  const std::string args =
      merge_flags(kArgs, " --batch_size 4 --dist_timeout 10 --save_dir " + (dir / "f"));
  const auto r =
      run_command("{ (" + rank_env(1, 2, port) + TB_BENCH_EXE + args + " --lr 0.01 > " +
                  (dir / "log1") + " 2>&1; echo \"rc=$?\" >> " + (dir / "log1") + ") & " +
                  rank_env(0, 2, port) + TB_BENCH_EXE + args + "; rc=$?; wait; exit $rc; }");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("bench: rank 0: failed: rank 1: these flags differ from rank 0's: --lr"),
            std::string::npos)
      << r.output;
  const std::string log1 = testing::read_file(dir / "log1");
  EXPECT_NE(log1.find("bench: rank 1: error: these flags differ from rank 0's: --lr; every rank "
                      "must run with the same flags\nrc=2"),
            std::string::npos)
      << log1;
  EXPECT_FALSE(fs::exists(dir / "f_handcraft_layer1_float32"));
}

TEST(DistFaults, AnErrorOnlyRankZeroSeesStopsTheOthersAtOnce) {
  testing::TempDir dir;
  fs::create_directories(dir / "z_handcraft_layer1_float32");
  testing::write_file(dir / "z_handcraft_layer1_float32/summary.json", "{}");  // occupied
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run_command(
      launch(2, free_port(),
             merge_flags(kArgs, " --batch_size 4 --dist_timeout 120 --save_dir " + (dir / "z"))));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 2);  // rank 0's own status
  EXPECT_NE(r.output.find("bench: rank 1: failed: rank 0: --save_dir"), std::string::npos)
      << r.output;
  EXPECT_LT(s, 60.0);  // not the 120 s --dist_timeout (two cold starts: 2-6 s on 2 vCPUs)
  EXPECT_EQ(testing::read_file(dir / "z_handcraft_layer1_float32/summary.json"), "{}");
}

TEST(DistFaults, APortInUseIsAClearError) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  listen(fd, 1);
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const int port = ntohs(a.sin_port);
  testing::TempDir dir;
  const auto r = run_command(rank_env(0, 2, port) + TB_BENCH_EXE + kArgs +
                             " --batch_size 4 --save_dir " + (dir / "p"));
  close(fd);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("bench: rank 0: error: MASTER_PORT: " + std::to_string(port) +
                          " is already in use on this machine"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

}  // namespace
}  // namespace trainbench
