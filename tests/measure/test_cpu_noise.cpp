// The per-step interference figures (measure/cpu_noise.h): /proc/stat parsing, other work's share
// of a step, and when a run is called unstable.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "trainbench/measure/cpu_noise.h"

namespace trainbench {
namespace {

TEST(CpuNoise, ParsesProcStatsCpuLineInTicks) {
  const CpuSample s =
      parse_proc_stat("cpu  100 20 30 5000 7 3 2 40 0 0", 0.01, 1.5);  // user..steal
  ASSERT_TRUE(s.ok);
  EXPECT_DOUBLE_EQ(s.busy_s, (100 + 20 + 30 + 3 + 2) * 0.01);
  EXPECT_DOUBLE_EQ(s.steal_s, 0.4);
  EXPECT_DOUBLE_EQ(s.self_s, 1.5);
  EXPECT_FALSE(parse_proc_stat("cpu0 1 2 3 4 5 6 7 8", 0.01, 0).ok);
  EXPECT_FALSE(parse_proc_stat("garbage", 0.01, 0).ok);
  EXPECT_TRUE(cpu_sample().ok);  // this machine's
}

TEST(CpuNoise, OtherWorkIsTheMachinesBusyTimeLessThisProcesssOwn) {
  const CpuSample a = parse_proc_stat("cpu 100 0 0 0 0 0 0 10", 0.01, 2.0);
  const CpuSample b = parse_proc_stat("cpu 200 0 0 0 0 0 0 15", 0.01, 2.6);
  const StepInterference i = interference(a, b);
  EXPECT_NEAR(i.other_s, 1.0 - 0.6, 1e-12);
  EXPECT_NEAR(i.steal_s, 0.05, 1e-12);
  // All of the busy time was ours (and a clock that ran ahead of the ticks): never negative.
  EXPECT_DOUBLE_EQ(interference(a, parse_proc_stat("cpu 150 0 0 0 0 0 0 10", 0.01, 3.0)).other_s,
                   0.0);
  EXPECT_DOUBLE_EQ(interference(CpuSample{}, b).other_s, 0.0);  // unreadable: nothing known
}

TEST(CpuNoise, AQuietRunIsStableAndASharedOneIsNot) {
  const std::vector<double> steps(8, 0.5);  // 0.5 s on 2 cores: 1 core-second each
  const double tick = 0.01;
  const nlohmann::json quiet =
      noise_summary(steps, std::vector<StepInterference>(8, {0.02, 0.0}), 2, tick);
  EXPECT_DOUBLE_EQ(quiet["disturbed_step_share"], 0.0);
  EXPECT_DOUBLE_EQ(quiet["step_time_cv"], 0.0);
  EXPECT_FALSE(quiet["unstable"]);
  EXPECT_EQ(noise_warning(quiet), "");
  std::vector<StepInterference> shared(8, {0.0, 0.0});
  for (int i = 0; i < 4; ++i) shared[i] = {0.3, 0.05};  // 35% of the cores' time
  const nlohmann::json busy = noise_summary(steps, shared, 2, tick);
  EXPECT_DOUBLE_EQ(busy["disturbed_step_share"], 0.5);
  EXPECT_NEAR(busy["other_cpu_share"].get<double>(), 4 * 0.3 / 8.0, 1e-12);
  EXPECT_NEAR(busy["steal_share"].get<double>(), 4 * 0.05 / 8.0, 1e-12);
  EXPECT_TRUE(busy["unstable"]);
  EXPECT_NE(noise_warning(busy).find("the benchmark seems unstable: 50% of the timed steps"),
            std::string::npos)
      << noise_warning(busy);
  // Spread alone: steps of 0.3 and 0.7 s (CV 40%) on an idle machine.
  const nlohmann::json spread =
      noise_summary({0.3, 0.7, 0.3, 0.7}, std::vector<StepInterference>(4), 2, tick);
  EXPECT_NEAR(spread["step_time_cv"].get<double>(), 0.4, 1e-12);
  EXPECT_TRUE(spread["unstable"]);
  // Below one tick per core: /proc/stat's resolution, not a disturbance.
  const nlohmann::json fine =
      noise_summary({0.05}, std::vector<StepInterference>{{0.025, 0.0}}, 2, tick);
  EXPECT_DOUBLE_EQ(fine["disturbed_step_share"], 0.0);
  EXPECT_TRUE(noise_summary({}, {}, 2, tick).is_null());
}

}  // namespace
}  // namespace trainbench
