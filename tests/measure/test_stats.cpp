// Repetition statistics and the Mann-Whitney U-test (measure/stats.h), against values computed by
// hand and by scipy.stats.mannwhitneyu (alternative="two-sided").
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "trainbench/measure/stats.h"

namespace trainbench {
namespace {

TEST(Stats, SummaryOfSamplesByHand) {
  const SampleSummary s = summarize({4, 1, 3, 2});
  EXPECT_EQ(s.count, 4u);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 4);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(5.0 / 3.0));  // sample stddev: 5 / (n - 1)
  EXPECT_DOUBLE_EQ(s.cv, std::sqrt(5.0 / 3.0) / 2.5);
  const SampleSummary one = summarize({7});
  EXPECT_DOUBLE_EQ(one.median, 7);
  EXPECT_DOUBLE_EQ(one.stddev, 0);
  EXPECT_EQ(summarize({}).count, 0u);
  const nlohmann::json j = summary_json({3, 1, 2});
  EXPECT_EQ(j["count"], 3);
  EXPECT_DOUBLE_EQ(j["median"].get<double>(), 2);
  EXPECT_EQ(j["samples"], nlohmann::json({3, 1, 2}));  // in the repetitions' order
}

struct UCase {
  std::vector<double> a, b;
  double p;  // scipy.stats.mannwhitneyu(a, b, alternative="two-sided").pvalue
};

TEST(Stats, MannWhitneyPValuesMatchScipy) {
  std::vector<double> ten, twelve, a21, b21;
  for (int i = 0; i < 10; ++i) ten.push_back(1.5 + 0.37 * i);
  for (int i = 0; i < 12; ++i) twelve.push_back(3.1 + 0.41 * i);
  for (int i = 0; i < 21; ++i) {
    a21.push_back(0.5 * i);
    b21.push_back(0.5 * i + 3.25);
  }
  const std::vector<UCase> cases = {
      {{1, 2, 3}, {4, 5, 6}, 0.1},                        // exact: 2 / C(6, 3)
      {{1, 2, 3, 4}, {5, 6, 7, 8}, 0.02857142857142857},  // 2 / C(8, 4)
      {{10.1, 10.4, 9.8, 10.0, 10.2}, {10.3, 10.6, 10.5, 10.9, 10.7}, 0.015873015873015872},
      {{300.1, 305.2, 310.0}, {301.0, 306.5, 309.0}, 1.0},
      {ten, twelve, 0.0020134664097512397},                     // exact (method="exact")
      {{1, 2, 3, 4, 5}, {3, 4, 5, 6, 7}, 0.11384629800665805},  // ties: normal, tie-corrected
      {a21, b21, 0.0038169050477184704},  // over 20: normal (method="asymptotic")
      {{5, 5, 5}, {5, 5, 5}, 1.0},
  };
  for (const UCase& c : cases) {
    EXPECT_NEAR(mann_whitney_p(c.a, c.b), c.p, 1e-9 * std::max(1.0, c.p)) << c.a.size();
    EXPECT_NEAR(mann_whitney_p(c.b, c.a), c.p, 1e-9) << "symmetric";
  }
  EXPECT_THROW(mann_whitney_p({}, {1.0}), std::invalid_argument);
}

}  // namespace
}  // namespace trainbench
