// One MFU peak per machine (measure/probe_cache.h): a miss measures and stores, a hit divides by
// the stored figures, --reprobe replaces them, a disturbed probe is retried and a wholly
// disturbed one never stored, "off" and injected rates leave the cache alone.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "trainbench/core/config.h"
#include "trainbench/measure/probe_cache.h"
#include "trainbench/report/results.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;

// float32 without --peak_tflops: the probe gives the peak.
const std::string kTinyProbe =
    " --num_layer 1 --d_model 32 --num_heads 2 --ff_dim 64 --seq_len 32 --batch_size 4"
    " --steps 3 --warmup_steps 1 --log_every 1 --eval_every 0 --eval_batches 1 --threads 1"
    " --device cpu";

nlohmann::json summary_(const std::string& save) {
  return read_json_file(save + "_handcraft_layer1_float32/summary.json");
}

// A run whose probe attempts all count as undisturbed, whatever else the machine runs (another
// test beside this one would otherwise decide whether the probe is stored).
testing::CommandResult undisturbed_(const std::string& args) {
  return testing::run_command("TB_TEST_PROBE_DISTURBED=0 " + std::string(TB_BENCH_EXE) + args);
}

TEST(ProbeCache, AMissStoresAHitDividesByTheSamePeakAndReprobeReplacesIt) {
  testing::TempDir dir;
  const std::string cache = dir / "cache/gemm_probe.json";
  const std::string args = kTinyProbe + " --probe_cache " + cache;
  const auto first = undisturbed_(args + " --save_dir " + (dir / "a"));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const auto a = summary_(dir / "a");
  EXPECT_EQ(a["probe_cache"]["hit"], false);
  EXPECT_EQ(a["probe_cache"]["stored"], true);
  EXPECT_EQ(a["probe_cache"]["file"], cache);
  EXPECT_NE(first.output.find("stored for later runs in " + cache), std::string::npos)
      << first.output;
  const auto stored = read_json_file(cache);
  const std::string key = a["probe_cache"]["key"];
  ASSERT_TRUE(stored["entries"].contains(key)) << stored.dump();
  EXPECT_NE(key.find("|threads=1|dtype=float32|gemms="), std::string::npos) << key;

  const auto second = undisturbed_(args + " --save_dir " + (dir / "b"));
  ASSERT_EQ(second.exit_code, 0) << second.output;
  const auto b = summary_(dir / "b");
  EXPECT_EQ(b["probe_cache"]["hit"], true);
  EXPECT_EQ(b["probe_cache"]["measured_at"], a["probe_cache"]["measured_at"]);
  EXPECT_EQ(b["peak_flops"], a["peak_flops"]);  // one peak for both runs
  EXPECT_EQ(b["peak_probe"]["routes"], a["peak_probe"]["routes"]);
  EXPECT_NE(second.output.find("GEMM probe: this machine's figures for these GEMMs, measured "),
            std::string::npos)
      << second.output;

  // Another dtype is another entry, beside the first.
  const auto bf16 = undisturbed_(args + " --dtype bfloat16 --save_dir " + (dir / "h"));
  ASSERT_EQ(bf16.exit_code, 0) << bf16.output;
  EXPECT_EQ(read_json_file(cache)["entries"].size(), 2u);
  EXPECT_EQ(read_json_file(cache)["entries"][key], stored["entries"][key]);
  const auto reprobe = undisturbed_(args + " --reprobe 1 --save_dir " + (dir / "c"));
  ASSERT_EQ(reprobe.exit_code, 0) << reprobe.output;
  const auto c = summary_(dir / "c");
  EXPECT_EQ(c["probe_cache"]["hit"], false);
  EXPECT_EQ(c["probe_cache"]["stored"], true);
  EXPECT_EQ(read_json_file(cache)["entries"][key]["probe"], c["peak_probe"]);
}

TEST(ProbeCache, ADisturbedProbeIsRetriedAndAWhollyDisturbedOneIsNotStored) {
  testing::TempDir dir;
  const std::string cache = dir / "gemm_probe.json";
  const std::string args = kTinyProbe + " --probe_cache " + cache;
  const auto once = testing::run_command("TB_TEST_PROBE_DISTURBED=1 " + std::string(TB_BENCH_EXE) +
                                         args + " --save_dir " + (dir / "a"));
  ASSERT_EQ(once.exit_code, 0) << once.output;
  const auto a = summary_(dir / "a");
  EXPECT_EQ(a["probe_cache"]["attempts"], 2);
  EXPECT_EQ(a["probe_cache"]["disturbed"], false);
  EXPECT_EQ(a["probe_cache"]["stored"], true);
  EXPECT_NE(once.output.find("GEMM probe attempt 1 was disturbed by other work on the CPU; "
                             "measuring again"),
            std::string::npos)
      << once.output;
  fs::remove(cache);
  const auto always =
      testing::run_command("TB_TEST_PROBE_DISTURBED=" + std::to_string(kProbeAttempts) + " " +
                           std::string(TB_BENCH_EXE) + args + " --save_dir " + (dir / "b"));
  ASSERT_EQ(always.exit_code, 0) << always.output;
  const auto b = summary_(dir / "b");
  EXPECT_EQ(b["probe_cache"]["attempts"], kProbeAttempts);
  EXPECT_EQ(b["probe_cache"]["disturbed"], true);
  EXPECT_EQ(b["probe_cache"]["stored"], false);
  EXPECT_FALSE(fs::exists(cache));
  EXPECT_NE(always.output.find("disturbed by other work in every attempt, so not stored"),
            std::string::npos)
      << always.output;
}

TEST(ProbeCache, OffAndInjectedRatesLeaveTheCacheAlone) {
  testing::TempDir dir;
  const std::string cache = dir / "gemm_probe.json";
  ASSERT_EQ(
      testing::run_bench(kTinyProbe + " --probe_cache off --save_dir " + (dir / "a")).exit_code, 0);
  EXPECT_TRUE(summary_(dir / "a")["probe_cache"]["file"].is_null());
  const auto injected =
      testing::run_command("TB_TEST_GEMM_RATES=native=1e9 " + std::string(TB_BENCH_EXE) +
                           kTinyProbe + " --probe_cache " + cache + " --save_dir " + (dir / "b"));
  ASSERT_EQ(injected.exit_code, 0) << injected.output;
  EXPECT_TRUE(summary_(dir / "b")["probe_cache"]["file"].is_null());
  EXPECT_FALSE(fs::exists(cache));
  // --peak_tflops decides the peak: no probe for float32, no record.
  ASSERT_EQ(testing::run_bench(kTinyProbe + " --peak_tflops 1 --probe_cache " + cache +
                               " --save_dir " + (dir / "c"))
                .exit_code,
            0);
  EXPECT_TRUE(summary_(dir / "c")["probe_cache"].is_null());
  EXPECT_FALSE(fs::exists(cache));
}

// One schema: a cache of another is measured again and replaced (it is a cache, not a result),
// with one line saying why.
TEST(ProbeCache, ACacheOfAnotherSchemaIsMeasuredAgainAndReplaced) {
  testing::TempDir dir;
  const std::string cache = dir / "gemm_probe.json";
  const std::string args = kTinyProbe + " --probe_cache " + cache;
  ASSERT_EQ(undisturbed_(args + " --save_dir " + (dir / "a")).exit_code, 0);
  nlohmann::json old = read_json_file(cache);
  EXPECT_EQ(old["schema_version"], kSchemaVersion);
  const std::string key = summary_(dir / "a")["probe_cache"]["key"];
  old["schema_version"] = 1;
  testing::write_file(cache, old.dump(1));
  const auto again = undisturbed_(args + " --save_dir " + (dir / "b"));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("GEMM probe cache '" + cache + "' has schema_version 1, not " +
                              std::to_string(kSchemaVersion) +
                              "; measuring again (and replacing its entries)"),
            std::string::npos)
      << again.output;
  const auto b = summary_(dir / "b");
  EXPECT_EQ(b["probe_cache"]["hit"], false);
  EXPECT_EQ(b["probe_cache"]["stored"], true);
  const nlohmann::json now = read_json_file(cache);
  EXPECT_EQ(now["schema_version"], kSchemaVersion);
  EXPECT_GT(now["entries"][key]["probe"]["routes"][0]["gemm_flops_per_s"].get<double>(), 0);
}

TEST(ProbeCache, TheFileAndKeyFollowTheFlagTheEnvironmentAndTheRun) {
  RunConfig c;
  c.probe_cache = "/x/y.json";
  EXPECT_EQ(probe_cache_file(c), "/x/y.json");
  c.probe_cache = "off";
  EXPECT_EQ(probe_cache_file(c), "");
  c.probe_cache = "";
  // The suite runs with TB_PROBE_CACHE=off (tests/CMakeLists.txt).
  const char* env = std::getenv("TB_PROBE_CACHE");
  if (env && std::string(env) == "off") {
    EXPECT_EQ(probe_cache_file(c), "");
  }
  RunConfig other = c;
  other.dtype = Precision::kBFloat16;
  EXPECT_NE(probe_cache_key(make_plan(c), 2), probe_cache_key(make_plan(other), 2));
  EXPECT_NE(probe_cache_key(make_plan(c), 2), probe_cache_key(make_plan(c), 1));
  other = c;
  other.d_model = 256;
  EXPECT_NE(probe_cache_key(make_plan(c), 2), probe_cache_key(make_plan(other), 2));
  other = c;
  other.steps = 7;  // not a GEMM shape
  EXPECT_EQ(probe_cache_key(make_plan(c), 2), probe_cache_key(make_plan(other), 2));
}

}  // namespace
}  // namespace trainbench
