// Synchronized clock and step-time statistics.
#include "trainbench/core/timing.h"

#include <algorithm>
#include <chrono>

#include <c10/core/Device.h>
#include <torch/cuda.h>

namespace trainbench {

void device_synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.has_index() ? device.index() : -1);
}

double synchronized_now_s(const torch::Device& device) {
  device_synchronize(device);
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

StepStats step_stats(std::vector<double> step_ms) {
  StepStats s;
  s.count = static_cast<int64_t>(step_ms.size());
  if (step_ms.empty()) return s;
  std::sort(step_ms.begin(), step_ms.end());
  const size_t n = step_ms.size();
  s.median_ms = n % 2 ? step_ms[n / 2] : 0.5 * (step_ms[n / 2 - 1] + step_ms[n / 2]);
  s.min_ms = step_ms.front();
  s.max_ms = step_ms.back();
  return s;
}

}  // namespace trainbench
