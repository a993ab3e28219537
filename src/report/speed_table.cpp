// The speed table of bench report (speed_table.h): cells of repetitions, their aggregates and
// ratios, and the markdown's short labels.
#include "speed_table.h"

#include <algorithm>
#include <cmath>

#include "trainbench/core/timing.h"
#include "trainbench/measure/stats.h"
#include "trainbench/report/report_columns.h"

namespace trainbench {

bool completed(const RunRecord& r) {
  return r.status == "completed" && r.sequences_per_s.is_number();
}

SpeedTable speed_table(const std::vector<RunRecord>& runs) {
  SpeedTable t;
  auto add_unique = [](std::vector<std::string>& v, const std::string& s) {
    if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
  };
  for (const RunRecord& r : runs) {
    add_unique(t.dtypes, r.dtype);
    add_unique(t.labels, r.label);
    t.cells[{r.dtype, r.label}].push_back(&r);
  }
  return t;
}

Aggregate aggregate(const SpeedTable& t, const std::string& dtype, const std::string& label) {
  Aggregate a;
  auto it = t.cells.find({dtype, label});
  if (it == t.cells.end()) return a;
  a.first = it->second.front();
  std::vector<double> v;
  for (const RunRecord* r : it->second) {
    if (completed(*r)) v.push_back(r->sequences_per_s.get<double>());
  }
  a.count = v.size();
  a.values = v;
  if (v.empty()) return a;
  const size_t n = v.size();
  const StepStats st = step_stats(v);  // median, min and max of any list (core/timing.h)
  a.median = st.median_ms;
  a.min = st.min_ms;
  a.max = st.max_ms;
  double mean = 0, sq = 0;
  for (double x : v) mean += x / static_cast<double>(n);
  for (double x : v) sq += (x - mean) * (x - mean) / static_cast<double>(n);
  a.cv = mean > 0 ? std::sqrt(sq) / mean : 0;
  return a;
}

std::string speed_text(double v) {
  return fixed_text(nlohmann::json(v), v >= 100 ? 0 : v >= 10 ? 1 : 2);
}

std::string p_text(double p) { return p < 0.001 ? "<0.001" : fixed_text(nlohmann::json(p), 3); }

std::string speed_cell(const SpeedTable& t, const std::string& dtype, const std::string& label) {
  const Aggregate a = aggregate(t, dtype, label);
  if (!a.first) return "";
  if (a.count == 0) return a.first->status;
  if (a.count == 1) return speed_text(a.median);
  return speed_text(a.median) + " (n=" + std::to_string(a.count) + ", " + speed_text(a.min) + "-" +
         speed_text(a.max) + ")";
}

std::optional<double> ratio_value(const SpeedTable& t, const std::string& dtype,
                                  const std::string& label, const std::string& baseline) {
  const Aggregate a = aggregate(t, dtype, label), b = aggregate(t, dtype, baseline);
  if (a.count == 0 || b.count == 0 || a.first->shape != b.first->shape) return std::nullopt;
  return a.median / b.median;
}

bool shapes_differ(const SpeedTable& t, const std::string& dtype, const std::string& label,
                   const std::string& baseline) {
  const Aggregate a = aggregate(t, dtype, label), b = aggregate(t, dtype, baseline);
  return a.count > 0 && b.count > 0 && a.first->shape != b.first->shape;
}

std::optional<double> u_test_p(const SpeedTable& t, const std::string& dtype,
                               const std::string& label, const std::string& baseline) {
  const Aggregate a = aggregate(t, dtype, label), b = aggregate(t, dtype, baseline);
  if (a.count < kUTestMinRepetitions || b.count < kUTestMinRepetitions ||
      a.first->shape != b.first->shape) {
    return std::nullopt;
  }
  return mann_whitney_p(a.values, b.values);
}

bool within_spread(const SpeedTable& t, const std::string& dtype, const std::string& label,
                   const std::string& baseline) {
  const Aggregate a = aggregate(t, dtype, label), b = aggregate(t, dtype, baseline);
  return a.count > 1 && b.count > 1 && a.min <= b.max && b.min <= a.max;
}

namespace {

std::vector<std::string> split_(const std::string& s, const std::string& sep) {
  std::vector<std::string> out;
  for (size_t at = 0;;) {
    const size_t next = s.find(sep, at);
    out.push_back(s.substr(at, next == std::string::npos ? std::string::npos : next - at));
    if (next == std::string::npos) return out;
    at = next + sep.size();
  }
}

}  // namespace

std::string shorten_labels(std::vector<RunRecord>& runs) {
  const std::string framework = runs[0].label.substr(0, runs[0].label.find(' '));
  const bool one_framework = std::all_of(runs.begin(), runs.end(), [&](const RunRecord& r) {
    return r.label.rfind(framework + " ", 0) == 0;
  });
  const std::vector<std::string> first = split_(runs[0].shape, ", ");
  std::vector<bool> shared(first.size(), true);
  for (const RunRecord& r : runs) {
    const std::vector<std::string> parts = split_(r.shape, ", ");
    for (size_t i = 0; i < first.size(); ++i) {
      shared[i] = shared[i] && parts.size() == first.size() && parts[i] == first[i];
    }
  }
  std::string common = one_framework ? framework : "";
  std::vector<std::string> in_caption;
  for (size_t i = 0; i < first.size(); ++i)
    if (shared[i]) in_caption.push_back(first[i]);
  for (size_t i = 0; i < in_caption.size(); ++i) {
    common += (i == 0 ? (common.empty() ? "" : "; ") : ", ") + in_caption[i];
  }
  for (RunRecord& r : runs) {
    if (one_framework) r.label = r.label.substr(framework.size() + 1);
    const std::vector<std::string> parts = split_(r.shape, ", ");
    std::string own;
    for (size_t i = 0; i < parts.size(); ++i) {
      if (i < shared.size() && shared[i] && parts.size() == first.size()) continue;
      own += (own.empty() ? "" : ", ") + parts[i];
    }
    if (!own.empty()) r.label += " [" + own + "]";
  }
  return common;
}

}  // namespace trainbench
