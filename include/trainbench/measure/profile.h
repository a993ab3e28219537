// --profile_steps N: LibTorch's profiler (Kineto) around N steps after the warm-up. On the CPU
// the op events' self times are summed by category (GEMM, attention, normalisation,
// pointwise/dropout, copy, loss, optimizer, data, other; the wall time no op covers is
// "untraced": autograd engine and framework overhead); on a GPU the device's kernels, copies
// and sets, each in the category of the op that launched it ("untraced": the time the device
// sat idle). Into summary.json's "profile", and the events are written as a Chrome/Perfetto
// trace (trace.json in the run folder). Profiled steps are not timed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainbench {

// The categories in summary.json's "profile", in report order, "untraced" last.
const std::vector<std::string>& profile_categories();

// One event of a profile as Kineto records it: a host op (its correlation: the op's id), a
// host call into the CUDA runtime or driver (its correlation: the launch's id), or a device
// activity (kernel, copy, set; correlation: the launch's id, linked: the op that launched it).
struct ProfileEvent {
  enum class Kind { kHostOp, kHostRuntime, kDevice };
  Kind kind = Kind::kHostOp;
  uint64_t thread = 0, start_ns = 0, end_ns = 0;
  std::string name;
  uint64_t correlation = 0, linked = 0;
  // A host GEMM op (aten::mm, addmm, bmm, baddbmm) with its input shapes: its product
  // [batch x] m x k x n and 2 m k n (x batch) FLOPs; flops 0 for any other event.
  double flops = 0;
  int64_t batch = 1, m = 0, k = 0, n = 0;
};

// The GEMM product of a host op from its name and its `count` input shapes (KinetoEvent::
// shapes(), read in place): fills e's flops, batch, m, k, n for aten::mm, addmm, bmm and
// baddbmm; leaves any other unchanged.
void set_gemm_product(ProfileEvent& e, const std::vector<int64_t>* shapes, size_t count);

// The breakdown of `steps` profiled steps that took `wall_s` together: {"steps", "step_ms",
// "ms_per_step" {category: ms}, "share" {category: fraction}, "time_of"}. With no device
// events ("time_of": "host ops"), each host event's self time (its duration less its direct
// children's, per thread) in the category of the nearest event, itself or an enclosing one,
// that has one (bench's optimizer and data scopes claim everything inside them). With device
// events ("time_of": "device"), their durations in the category their launching op resolves
// to ("other" where none is found); "untraced" is the rest of the wall time in both. With host
// ops, "gemm_products" too: each GEMM product's calls, ms and GFLOP/s per step (its events'
// whole durations; a GEMM op inside another counts once), the slowest first.
nlohmann::json profile_breakdown(std::vector<ProfileEvent> events, int64_t steps, double wall_s);

class StepProfiler {
 public:
  StepProfiler() = default;
  ~StepProfiler();
  StepProfiler(const StepProfiler&) = delete;
  StepProfiler& operator=(const StepProfiler&) = delete;

  // cuda: the device's activity is recorded too (the breakdown is then the device's).
  void start(bool cuda);
  // Stops, writes the trace to trace_path and returns profile_breakdown's object with "trace"
  // (the file name). wall_s: the profiled steps' wall time together.
  nlohmann::json stop(int64_t steps, double wall_s, const std::string& trace_path);

 private:
  bool running_ = false;
};

}  // namespace trainbench
