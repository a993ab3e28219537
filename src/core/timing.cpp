// Synchronized clock and UTC time stamps.
#include "trainbench/core/timing.h"

#include <chrono>
#include <ctime>

#include <c10/core/Device.h>
#include <torch/cuda.h>

namespace trainbench {

double synchronized_now_s(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.has_index() ? device.index() : -1);
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

std::string utc_now(const char* format) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), format, &tm);
  return buf;
}

std::string utc_now_iso8601() { return utc_now("%Y-%m-%dT%H:%M:%SZ"); }

}  // namespace trainbench
