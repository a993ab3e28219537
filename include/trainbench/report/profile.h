// --profile_steps N: LibTorch's profiler (Kineto) around N steps after the warm-up. The op
// events' self times are summed by category (GEMM, attention, normalisation, pointwise/dropout,
// loss, optimizer, data, other; the wall time no op covers is "untraced": autograd engine and
// framework overhead) into summary.json's "profile", and the events are written as a
// Chrome/Perfetto trace (trace.json in the run folder). Profiled steps are not timed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainbench {

// The category of one profiler event name ("aten::addmm" → "gemm", the fused model's
// "fused::drop_add_layer_norm" → "normalisation", bench's "trainbench::optimizer" scope →
// "optimizer", ...); "other" for what no rule names.
std::string op_category(const std::string& event_name);

// The categories in summary.json's "profile", in report order, "untraced" last.
const std::vector<std::string>& profile_categories();

class StepProfiler {
 public:
  StepProfiler();
  ~StepProfiler();
  StepProfiler(const StepProfiler&) = delete;
  StepProfiler& operator=(const StepProfiler&) = delete;

  void start();
  // Stops, writes the trace to trace_path and returns the breakdown: {"steps", "step_ms" (mean
  // wall time of a profiled step), "ms_per_step" {category: ms}, "share" {category: fraction},
  // "trace" (the file name)}. wall_s: the profiled steps' wall time together.
  nlohmann::json stop(int64_t steps, double wall_s, const std::string& trace_path);

 private:
  bool running_ = false;
};

}  // namespace trainbench
