// Clock reads that follow the device: synchronize first, then read a steady clock.
#pragma once

#include <vector>

#include <torch/types.h>

namespace trainbench {

// Waits for all queued work on `device` (a no-op on CPU, where ops are synchronous).
void device_synchronize(const torch::Device& device);

// Seconds on a monotonic clock, read after device_synchronize(device).
double synchronized_now_s(const torch::Device& device);

struct StepStats {
  double median_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
  int64_t count = 0;
};

// Median (mean of the middle two for an even count), min and max of step times in ms.
StepStats step_stats(std::vector<double> step_ms);

}  // namespace trainbench
