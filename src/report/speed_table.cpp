// The speed table of bench report (speed_table.h): cells of repetitions, their aggregates and
// ratios, the time-to-target table beside it, and the markdown's short labels.
#include "speed_table.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

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
  const SampleSummary st = summarize(v);
  a.median = st.median;
  a.min = st.min;
  a.max = st.max;
  double mean = 0, sq = 0;
  for (double x : v) mean += x / static_cast<double>(n);
  for (double x : v) sq += (x - mean) * (x - mean) / static_cast<double>(n);
  a.cv = mean > 0 ? std::sqrt(sq) / mean : 0;
  return a;
}

namespace {

// A speed in three significant figures or whole numbers: 1093, 98.1, 3.53.
std::string speed_text(double v) {
  return fixed_text(nlohmann::json(v), v >= 100 ? 0 : v >= 10 ? 1 : 2);
}

std::vector<std::string> split_(const std::string& s, const std::string& sep) {
  std::vector<std::string> out;
  for (size_t at = 0;;) {
    const size_t next = s.find(sep, at);
    out.push_back(s.substr(at, next == std::string::npos ? std::string::npos : next - at));
    if (next == std::string::npos) return out;
    at = next + sep.size();
  }
}

// The times to target of a cell's completed runs that had a target: seconds, infinity for a
// run that did not reach it (MLPerf's rule: a run that does not converge takes forever).
std::vector<double> target_times_(const SpeedTable& t, const std::string& dtype,
                                  const std::string& label, std::vector<double>* steps = nullptr) {
  std::vector<double> v;
  const auto it = t.cells.find({dtype, label});
  if (it == t.cells.end()) return v;
  for (const RunRecord* r : it->second) {
    if (r->status != "completed" || !r->target.is_object()) continue;
    const nlohmann::json time = r->target.value("time_to_target_s", nlohmann::json());
    v.push_back(time.is_number() ? time.get<double>() : std::numeric_limits<double>::infinity());
    const nlohmann::json step = r->target.value("steps_to_target", nlohmann::json());
    if (steps && step.is_number()) steps->push_back(step.get<double>());
  }
  return v;
}

}  // namespace

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

std::string target_table(const SpeedTable& t, const std::string& baseline) {
  std::ostringstream rows;
  std::vector<double> targets;
  for (const auto& [key, cell] : t.cells) {
    for (const RunRecord* r : cell) {
      const nlohmann::json target = r->target.is_object()
                                        ? r->target.value("target_bpb", nlohmann::json())
                                        : nlohmann::json();
      if (target.is_number() &&
          std::find(targets.begin(), targets.end(), target.get<double>()) == targets.end())
        targets.push_back(target.get<double>());
    }
  }
  if (targets.empty()) return "";
  for (const auto& d : t.dtypes) {
    const std::vector<double> base = target_times_(t, d, baseline);
    for (const auto& l : t.labels) {
      std::vector<double> steps;
      const std::vector<double> v = target_times_(t, d, l, &steps);
      if (v.empty()) continue;
      std::vector<double> reached;
      for (double x : v)
        if (std::isfinite(x)) reached.push_back(x);
      const double m = summarize(v).median;
      std::string time = "not reached";
      if (std::isfinite(m)) {
        time = fixed_text(nlohmann::json(m), 1);
        if (v.size() > 1) {
          time += " (" +
                  fixed_text(nlohmann::json(*std::min_element(reached.begin(), reached.end())), 1) +
                  "-" +
                  fixed_text(nlohmann::json(*std::max_element(reached.begin(), reached.end())), 1) +
                  ")";
        }
      }
      // The baseline's median time over this one's (above 1: this one reaches the target sooner),
      // beside the same ratio of seq/s: where the two differ, speed was bought with quality or
      // the other way round.
      std::string vs = "-";
      if (l != baseline && !base.empty()) {
        const double b = summarize(base).median;
        if (std::isfinite(b) && std::isfinite(m))
          vs = fixed_text(nlohmann::json(b / m), 2) + "x";
        else if (std::isfinite(b) != std::isfinite(m))
          vs = std::isfinite(m) ? "only this one reached it" : "only the baseline reached it";
        if (v.size() >= kUTestMinRepetitions && base.size() >= kUTestMinRepetitions)
          vs += " (p=" + p_text(mann_whitney_p(v, base)) + ")";
      }
      const auto seq = l == baseline ? std::nullopt : ratio_value(t, d, l, baseline);
      rows << "| " << l << " | " << d << " | " << reached.size() << "/" << v.size() << " | " << time
           << " | "
           << (steps.empty() ? "-" : fixed_text(nlohmann::json(summarize(steps).median), 0))
           << " | " << vs << " | " << (seq ? fixed_text(nlohmann::json(*seq), 2) + "x" : "-")
           << " |\n";
    }
  }
  std::string caption;
  for (double x : targets)
    caption += (caption.empty() ? "" : ", ") + fixed_text(nlohmann::json(x), 3);
  return "\nTime to target (held-out bits per byte at or below " + caption +
         "): training seconds from the first step to the first evaluation at or below it, "
         "evaluations excluded; a run that did not reach it counts as never (the median is then "
         "'not reached' where half or more did not)\n\n| configuration | dtype | reached | time to "
         "target s (median, range) | steps to target (median) | time vs " +
         baseline + " | seq/s vs " + baseline + " |\n|---|---|---|---|---|---|---|\n" + rows.str();
}

}  // namespace trainbench
