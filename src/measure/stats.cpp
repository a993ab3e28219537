// Repetition statistics and the Mann-Whitney U-test (measure/stats.h).
#include "trainbench/measure/stats.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace trainbench {

SampleSummary summarize(const std::vector<double>& values) {
  SampleSummary s;
  s.count = values.size();
  if (values.empty()) return s;
  std::vector<double> v = values;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  s.min = v.front();
  s.max = v.back();
  s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  for (double x : v) s.mean += x / static_cast<double>(n);
  if (n > 1) {
    double sq = 0;
    for (double x : v) sq += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(sq / static_cast<double>(n - 1));
  }
  s.cv = s.mean != 0 ? s.stddev / std::fabs(s.mean) : 0;
  return s;
}

nlohmann::json summary_json(const std::vector<double>& values) {
  const SampleSummary s = summarize(values);
  return {{"count", s.count}, {"mean", s.mean}, {"median", s.median}, {"stddev", s.stddev},
          {"cv", s.cv},       {"min", s.min},   {"max", s.max},       {"samples", values}};
}

namespace {

// P(U >= u) for samples of m and n distinct values under the null hypothesis, from the count
// of rank arrangements giving each U: c(m, n, u) = c(m - 1, n, u - n) + c(m, n - 1, u).
double exact_upper_tail_(size_t m, size_t n, size_t u) {
  const size_t max_u = m * n;
  // counts[j][k]: arrangements of i values of the first sample and j of the second with U = k,
  // built up one i at a time (doubles: C(40, 20) is 1.4e11, exact in a double).
  std::vector<std::vector<double>> prev(n + 1, std::vector<double>(max_u + 1, 0.0));
  for (size_t j = 0; j <= n; ++j) prev[j][0] = 1;  // i = 0: U is 0
  for (size_t i = 1; i <= m; ++i) {
    std::vector<std::vector<double>> cur(n + 1, std::vector<double>(max_u + 1, 0.0));
    cur[0][0] = 1;
    for (size_t j = 1; j <= n; ++j) {
      for (size_t k = 0; k <= i * j; ++k) {
        // The largest value is from the first sample (it beats all j of the second) or not.
        cur[j][k] = (k >= j ? prev[j][k - j] : 0.0) + cur[j - 1][k];
      }
    }
    prev = std::move(cur);
  }
  double total = 0, upper = 0;
  for (size_t k = 0; k <= max_u; ++k) {
    total += prev[n][k];
    if (k >= u) upper += prev[n][k];
  }
  return upper / total;
}

}  // namespace

double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty() || b.empty()) throw std::invalid_argument("mann_whitney_p: an empty sample");
  const size_t m = a.size(), n = b.size(), total = m + n;
  // Ranks of the pooled values, ties at their average rank.
  std::vector<std::pair<double, int>> pooled;
  for (double x : a) pooled.emplace_back(x, 0);
  for (double x : b) pooled.emplace_back(x, 1);
  std::sort(pooled.begin(), pooled.end());
  double rank_sum_a = 0, tie_term = 0;
  bool ties = false;
  for (size_t i = 0; i < total;) {
    size_t j = i;
    while (j + 1 < total && pooled[j + 1].first == pooled[i].first) ++j;
    const double rank = (static_cast<double>(i + j) + 2) / 2;  // ranks i+1 .. j+1, averaged
    for (size_t k = i; k <= j; ++k)
      if (pooled[k].second == 0) rank_sum_a += rank;
    const double t = static_cast<double>(j - i + 1);
    tie_term += t * t * t - t;
    ties |= j > i;
    i = j + 1;
  }
  const double mn = static_cast<double>(m * n);
  const double u_a = rank_sum_a - static_cast<double>(m * (m + 1)) / 2;
  const double u = std::max(u_a, mn - u_a);  // the larger U: its upper tail, doubled
  double p = 0;
  if (!ties && m <= 20 && n <= 20) {
    p = 2 * exact_upper_tail_(m, n, static_cast<size_t>(std::llround(u)));
  } else {
    const double nn = static_cast<double>(total);
    const double sigma = std::sqrt(mn / 12 * ((nn + 1) - tie_term / (nn * (nn - 1))));
    if (sigma == 0) return 1.0;  // every value equal
    const double z = (u - mn / 2 - 0.5) / sigma;
    p = std::erfc(z / std::sqrt(2.0));  // 2 * P(Z > z)
  }
  return std::min(1.0, p);
}

}  // namespace trainbench
