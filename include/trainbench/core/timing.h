// Clock reads that follow the device: synchronize first, then read a steady clock.
#pragma once

#include <cstdint>
#include <vector>

// Declared, not included: the files that only read the clock or the host facts stay torch-free.
namespace c10 {
struct Device;
}  // namespace c10

namespace trainbench {

// Waits for all queued work on `device` (a no-op on CPU, where ops are synchronous).
void device_synchronize(const c10::Device& device);

// Seconds on a monotonic clock, read after device_synchronize(device).
double synchronized_now_s(const c10::Device& device);

struct StepStats {
  double median_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
  int64_t count = 0;
};

// Median (mean of the middle two for an even count), min and max of step times in ms.
StepStats step_stats(std::vector<double> step_ms);

}  // namespace trainbench
