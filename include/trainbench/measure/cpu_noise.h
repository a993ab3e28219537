// How much of the CPU other work took while a step ran: the machine's busy and steal time
// (/proc/stat) against this process's own CPU time, as pyperf does before it says "the
// benchmark seems unstable". A timed step is disturbed when other processes or the hypervisor
// took more than kDisturbedShare of the cores' time during it (beyond one clock tick per core,
// the resolution of /proc/stat).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace trainbench {

inline constexpr double kDisturbedShare = 0.10;
// Above these bench warns that the run seems unstable.
inline constexpr double kUnstableDisturbedShare = 0.25;  // of the timed steps
inline constexpr double kUnstableCv = 0.15;              // step-time coefficient of variation

struct CpuSample {
  double busy_s = 0;   // all CPUs: user + nice + system + irq + softirq
  double steal_s = 0;  // all CPUs: time the hypervisor gave to other guests
  double self_s = 0;   // this process, all threads
  bool ok = false;     // false where /proc/stat could not be read
};

// The sample now.
CpuSample cpu_sample();
// The sample of /proc/stat's first line ("cpu  user nice system idle iowait irq softirq steal
// ...") in ticks of `tick_s` seconds, with the process's own CPU seconds.
CpuSample parse_proc_stat(const std::string& cpu_line, double tick_s, double self_s);

// What one timed step shared: other processes' CPU seconds and steal seconds between two
// samples (never below 0).
struct StepInterference {
  double other_s = 0, steal_s = 0;
};
StepInterference interference(const CpuSample& before, const CpuSample& after);

// summary.json's "noise": the share of disturbed timed steps, the step-time coefficient of
// variation, the mean share of the cores' time other work and steal took, and "unstable".
// step_s and per-step interference in the same order; `cores` the CPUs the machine has.
nlohmann::json noise_summary(const std::vector<double>& step_s,
                             const std::vector<StepInterference>& steps, int cores, double tick_s);
// One warning line for an unstable run ("" when it was not).
std::string noise_warning(const nlohmann::json& noise);

// Seconds per /proc/stat tick (1 / USER_HZ).
double proc_stat_tick_s();
// The CPUs /proc/stat counts (online processors).
int online_cpus();

}  // namespace trainbench
