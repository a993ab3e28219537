// /proc/stat sampling and the noise summary of cpu_noise.h.
#include "trainbench/measure/cpu_noise.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace trainbench {

double proc_stat_tick_s() {
  const long hz = sysconf(_SC_CLK_TCK);
  return hz > 0 ? 1.0 / static_cast<double>(hz) : 0.01;
}

int online_cpus() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

CpuSample parse_proc_stat(const std::string& cpu_line, double tick_s, double self_s) {
  CpuSample s;
  std::istringstream in(cpu_line);
  std::string name;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  in >> name >> user >> nice >> system >> idle >> iowait >> irq >> softirq;
  if (!in || name != "cpu") return s;
  in >> steal;  // absent on very old kernels
  if (!in) steal = 0;
  s.busy_s = (user + nice + system + irq + softirq) * tick_s;
  s.steal_s = steal * tick_s;
  s.self_s = self_s;
  s.ok = true;
  return s;
}

CpuSample cpu_sample() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  const double self_s = static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  std::ifstream in("/proc/stat");
  std::string line;
  if (!std::getline(in, line)) return CpuSample{};
  return parse_proc_stat(line, proc_stat_tick_s(), self_s);
}

StepInterference interference(const CpuSample& before, const CpuSample& after) {
  StepInterference i;
  if (!before.ok || !after.ok) return i;
  const double busy = after.busy_s - before.busy_s, self = after.self_s - before.self_s;
  i.other_s = std::max(0.0, busy - self);
  i.steal_s = std::max(0.0, after.steal_s - before.steal_s);
  return i;
}

nlohmann::json noise_summary(const std::vector<double>& step_s,
                             const std::vector<StepInterference>& steps, int cores, double tick_s) {
  const size_t n = std::min(step_s.size(), steps.size());
  if (n == 0) return nullptr;
  double sum = 0, sq = 0, wall = 0, other = 0, steal = 0;
  size_t disturbed = 0;
  for (size_t i = 0; i < n; ++i) {
    sum += step_s[i];
    sq += step_s[i] * step_s[i];
    const double capacity = step_s[i] * cores;
    wall += capacity;
    other += steps[i].other_s;
    steal += steps[i].steal_s;
    // One tick per core is what /proc/stat's resolution alone can add to a step.
    if (steps[i].other_s + steps[i].steal_s > kDisturbedShare * capacity + tick_s * cores) {
      ++disturbed;
    }
  }
  const double mean = sum / static_cast<double>(n);
  const double var = std::max(0.0, sq / static_cast<double>(n) - mean * mean);
  const double cv = mean > 0 ? std::sqrt(var) / mean : 0.0;
  const double share = static_cast<double>(disturbed) / static_cast<double>(n);
  return {{"timed_steps", n},
          {"disturbed_step_share", share},
          {"step_time_cv", cv},
          {"other_cpu_share", wall > 0 ? other / wall : 0.0},
          {"steal_share", wall > 0 ? steal / wall : 0.0},
          {"disturbed_threshold", kDisturbedShare},
          {"cores", cores},
          {"unstable", share > kUnstableDisturbedShare || cv > kUnstableCv}};
}

std::string noise_warning(const nlohmann::json& noise) {
  if (!noise.is_object() || !noise.value("unstable", false)) return "";
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "the benchmark seems unstable: %.0f%% of the timed steps shared the CPU with "
                "other work (other processes %.0f%%, hypervisor steal %.0f%% of the cores' "
                "time), step times vary by %.0f%% (coefficient of variation); rerun on an idle "
                "machine, or compare ratios from one run",
                100 * noise.value("disturbed_step_share", 0.0),
                100 * noise.value("other_cpu_share", 0.0), 100 * noise.value("steal_share", 0.0),
                100 * noise.value("step_time_cv", 0.0));
  return buf;
}

}  // namespace trainbench
