// The speed table of `bench report`: dtype rows × configuration columns, each cell every run of
// its configuration, aggregated google/benchmark-style (median, range, spread), the ratios of
// medians and whether two configurations differ beyond their spread; and the markdown's short
// column labels. Private to src/report (report.cpp renders it).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trainbench/report/report.h"

namespace trainbench {

// A completed run with a speed (the only kind that enters the speed table's figures).
bool completed(const RunRecord& r);

// Dtype rows (in first-seen order) × label columns (first-seen order); a cell holds every run
// of its configuration.
struct SpeedTable {
  std::vector<std::string> dtypes, labels;
  std::map<std::pair<std::string, std::string>, std::vector<const RunRecord*>> cells;
};
SpeedTable speed_table(const std::vector<RunRecord>& runs);

// The completed repetitions of one configuration: count, median, range and spread of seq/s.
struct Aggregate {
  size_t count = 0;
  double median = 0, min = 0, max = 0, cv = 0;
  std::vector<double> values;        // seq/s of each completed repetition
  const RunRecord* first = nullptr;  // the first run listed (its status when none completed)
};
Aggregate aggregate(const SpeedTable& t, const std::string& dtype, const std::string& label);

// A p-value in three decimals, "<0.001" below.
std::string p_text(double p);
// A cell of the speed table: the median of the completed repetitions ("98.1", with n= and the
// range where there are several: "98.1 (n=3, 97.0-99.2)"), the first run's status where none
// completed, "" where the configuration has no run of that dtype.
std::string speed_cell(const SpeedTable& t, const std::string& dtype, const std::string& label);

// label's median speed over the baseline's, when both have a completed run of one model shape
// (a ratio of a 2-layer model to an 8-layer one says nothing about the configurations).
std::optional<double> ratio_value(const SpeedTable& t, const std::string& dtype,
                                  const std::string& label, const std::string& baseline);
// Both have completed runs, of different shapes: the ratio is "n/a".
bool shapes_differ(const SpeedTable& t, const std::string& dtype, const std::string& label,
                   const std::string& baseline);

// The two-sided Mann-Whitney U-test's p-value of label's repetitions against the baseline's
// (measure/stats.h), when both have at least kUTestMinRepetitions completed ones.
std::optional<double> u_test_p(const SpeedTable& t, const std::string& dtype,
                               const std::string& label, const std::string& baseline);

// Two configurations differ beyond their spread when both were repeated and the ranges of
// their repetitions do not overlap; true when they overlap.
bool within_spread(const SpeedTable& t, const std::string& dtype, const std::string& label,
                   const std::string& baseline);

// The time-to-target table (markdown), "" where no run had a target: per configuration and
// dtype the runs that reached it out of those that had one, the median time to target with its
// range, the median steps, and against the baseline the ratio of median times (with the
// U-test's p from 3 repetitions a side) beside the ratio of seq/s.
std::string target_table(const SpeedTable& t, const std::string& baseline);

// The markdown's column labels say only what tells the runs apart: a framework every run
// shares and the shape fields every run shares go to the caption ("libtorch; 2 layers, d_model
// 128, batch 16"), the label keeps the rest ("handcraft fused [seq_len 64]"). Returns the
// caption.
std::string shorten_labels(std::vector<RunRecord>& runs);

}  // namespace trainbench
