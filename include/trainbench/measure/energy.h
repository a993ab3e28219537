// A GPU's energy counter: NVML's total energy (millijoules since the driver loaded; Volta and
// later), read through libnvidia-ml loaded at run time, so that bench needs no NVML to build or
// start and a machine without it says so. Read around each timed step (app/run_loop.cpp):
// summary.json's energy_joules and tokens_per_joule, and energy_source naming the GPU or why
// there is none.
#pragma once

#include <memory>
#include <string>

namespace trainbench {

class EnergyCounter {
 public:
  // The counter of the GPU with UUID `gpu_uuid` ("GPU-8d2f...", as nvidia-smi -L prints it);
  // "" (a CPU run): none. TB_NVML_LIB names another library to load (tests).
  static EnergyCounter open(const std::string& gpu_uuid);
  // The counter now, in joules; NaN where there is none or a read failed.
  double joules() const;
  // "nvml: NAME" where the counter reads, else "none: WHY" (one line).
  const std::string& source() const { return source_; }

 private:
  struct Nvml;
  std::shared_ptr<const Nvml> nvml_;
  std::string source_;
};

}  // namespace trainbench
