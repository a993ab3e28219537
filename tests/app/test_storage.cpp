// Storage faults during a run: a file size limit (ulimit -f: EFBIG, no privilege needed) and a
// full disk (a small tmpfs the test mounts; skipped where mounting is refused). Each ends with
// the error named, summary.json saying why where it can be written, and the files from before
// the fault whole.
#include <gtest/gtest.h>

#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;
using testing::run_command;

const std::string kTinyRun =
    " --num_layer 1 --d_model 32 --num_heads 2 --ff_dim 64 --seq_len 32 --batch_size 4"
    " --warmup_steps 1 --eval_every 0 --threads 1 --device cpu --peak_tflops 1";

// bench under a file size limit of `kib` KiB (a write crossing it fails with EFBIG).
std::string limited(int kib, const std::string& args) {
  return "bash -c 'ulimit -f " + std::to_string(kib) + "; exec " TB_BENCH_EXE + args + "'";
}

nlohmann::json summary_of(const std::string& run) {
  return nlohmann::json::parse(testing::read_file(run + "/summary.json"));
}

bool leftovers_in(const std::string& run) {
  for (const auto& e : fs::directory_iterator(run)) {
    if (e.path().string().find(".tmp") != std::string::npos) return true;
  }
  return false;
}

// A checkpoint larger than the limit: the write fails with the system's words, the run is
// recorded as failed, no temporary file is left. (LibTorch's own file writer aborted the whole
// process here: it throws again from its destructor.)
TEST(Storage, AFileSizeLimitOnACheckpointIsNamedAndTheRunRecordedAsFailed) {
  testing::TempDir dir;
  const std::string run = dir / "r_handcraft_layer1_float32";
  const auto r = run_command(
      limited(100, kTinyRun + " --steps 3 --checkpoint_every 1 --save_dir " + (dir / "r")));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("bench: failed: cannot write checkpoint '" + run +
                          "/checkpoint-1.pt': File too large"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(summary_of(run)["status"], "failed");
  EXPECT_FALSE(leftovers_in(run));
}

// A summary larger than the limit at the end of a resumed session: the error names the file and
// the previous summary.json stays as it was. Without TensorBoard: a resume rewrites the events
// file, whose config and env texts (CPU sets, host name, paths) reach 8 KiB on some machines
// before the summary is written.
TEST(Storage, ASummaryThatCannotBeWrittenLeavesThePreviousOneWhole) {
  testing::TempDir dir;
  const std::string run = dir / "r_handcraft_layer1_float32";
  const std::string args =
      kTinyRun + " --steps 20 --log_every 10 --checkpoint_every 20 --tensorboard 0";
  ASSERT_EQ(run_command(TB_BENCH_EXE + args + " --save_dir " + (dir / "r")).exit_code, 0);
  const std::string before = testing::read_file(run + "/summary.json");
  // 1500 step times make a summary of about 30 KB; the limit is 8 KiB.
  const auto r = run_command(
      limited(8, " --resume " + run + " --steps 1500 --log_every 500 --checkpoint_every 0"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("bench: failed: cannot write '" + run + "/summary.json.tmp."),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("File too large"), std::string::npos) << r.output;
  EXPECT_EQ(testing::read_file(run + "/summary.json"), before);
  EXPECT_FALSE(leftovers_in(run));
}

// The trained network (--save_model) larger than the limit: the error names the file, the run
// is recorded as failed, and no temporary file is left.
TEST(Storage, ASaveModelThatCannotBeWrittenIsNamedAndRecorded) {
  testing::TempDir dir;
  const std::string run = dir / "r_handcraft_layer1_float32";
  const auto r = run_command(limited(
      40, kTinyRun + " --steps 3 --save_model " + (dir / "net.pt") + " --save_dir " + (dir / "r")));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("bench: failed: cannot write '" + (dir / "net.pt") + "': File too large"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(summary_of(run)["status"], "failed");
  EXPECT_FALSE(fs::exists(dir / "net.pt"));
  EXPECT_FALSE(fs::exists(dir / "net.pt.tmp"));
}

// A disk that fills up: the second checkpoint does not fit beside the first, which stays whole
// and resumable; the error says the device is full.
TEST(Storage, AFullDiskDuringACheckpointKeepsThePreviousOne) {
  testing::TempDir dir;
  // The size of one checkpoint of this model, from a run on the ordinary disk.
  ASSERT_EQ(run_command(TB_BENCH_EXE + kTinyRun + " --steps 2 --checkpoint_every 1 --save_dir " +
                        (dir / "m"))
                .exit_code,
            0);
  const auto one = fs::file_size(dir / "m_handcraft_layer1_float32/checkpoint-1.pt");
  const std::string disk = dir / "disk";
  fs::create_directories(disk);
  // Room for one checkpoint and a half, plus the small files (tmpfs counts whole 4 KiB pages).
  const std::string size = std::to_string((one * 3 / 2 + 64 * 1024) / 1024) + "k";
  if (mount("tmpfs", disk.c_str(), "tmpfs", 0, ("size=" + size).c_str()) != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here (" << std::strerror(errno) << ")";
  }
  struct Unmount {
    std::string path;
    ~Unmount() { umount2(path.c_str(), MNT_DETACH); }
  } unmount{disk};
  const std::string run = disk + "/r_handcraft_layer1_float32";
  const std::string args = kTinyRun + " --steps 6 --log_every 1 --keep_checkpoints 1";
  const auto r =
      run_command(TB_BENCH_EXE + args + " --checkpoint_every 2 --save_dir " + disk + "/r");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("cannot write checkpoint '" + run +
                          "/checkpoint-4.pt': No space left on device"),
            std::string::npos)
      << r.output;
  const auto s = summary_of(run);
  EXPECT_EQ(s["status"], "failed");
  EXPECT_EQ(s["steps_done"], 4);
  // Whole: the size its record (written with it) gives, and a checkpoint's size (LibTorch's
  // archive holds a random serialization id of varying length, so two checkpoints of one model
  // may differ by a 64-byte alignment block).
  std::istringstream record(testing::read_file(run + "/checkpoint-2.pt.sum"));
  uintmax_t recorded = 0;
  record >> recorded;
  EXPECT_EQ(fs::file_size(run + "/checkpoint-2.pt"), recorded);
  EXPECT_LE(std::max(recorded, one) - std::min(recorded, one), 64u) << recorded << " vs " << one;
  EXPECT_FALSE(leftovers_in(run));
  // The checkpoint before the fault still loads: the run resumes from step 2 (no more checkpoints,
  // so it fits).
  const auto resumed =
      run_command(std::string(TB_BENCH_EXE) + " --resume " + run + " --checkpoint_every 0");
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(summary_of(run)["resumed_from_step"], 2);
  EXPECT_EQ(summary_of(run)["status"], "completed");
}

}  // namespace
}  // namespace trainbench
