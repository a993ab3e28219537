// Statistics of repeated measurements, as google/benchmark reports repetitions (mean, median,
// stddev, cv) and its compare.py tests two of them (a two-sided Mann-Whitney U-test).
#pragma once

#include <cstddef>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace trainbench {

struct SampleSummary {
  size_t count = 0;
  double mean = 0, median = 0, min = 0, max = 0;
  double stddev = 0;  // sample standard deviation (n - 1), 0 for fewer than two values
  double cv = 0;      // stddev / mean (0 where the mean is 0)
};
// Of every value in `values` (none: a count of 0 and zeros).
SampleSummary summarize(const std::vector<double>& values);
// {count, mean, median, stddev, cv, min, max, samples}.
nlohmann::json summary_json(const std::vector<double>& values);

// The two-sided p-value of a Mann-Whitney U-test that `a` and `b` come from one distribution:
// the exact distribution of U when neither sample has more than 20 values and there are no
// ties (scipy.stats.mannwhitneyu's "exact" method), else the normal approximation with the tie
// correction and a continuity correction (its "asymptotic" method). Both samples need a value.
double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b);

// The fewest values per sample that bench report tests (as google/benchmark's compare.py, it
// shows the p-value). A verdict at p < 0.05 needs more: 3 against 3 gives at best p = 0.1, 4
// against 4 p = 0.029, 5 against 5 p = 0.008.
inline constexpr size_t kUTestMinRepetitions = 3;

}  // namespace trainbench
