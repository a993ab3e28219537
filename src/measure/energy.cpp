// NVML's energy counter through dlopen (see energy.h). The few entry points are declared here
// as NVML's header gives them (nvml.h, the CUDA toolkit's), so that nothing links against NVML.
#include "trainbench/measure/energy.h"

#include <dlfcn.h>

#include <cmath>
#include <cstdlib>

namespace trainbench {

// NVML's entry points (nvml.h): a return code (0: success) and a device handle.
struct EnergyCounter::Nvml {
  using Device = struct NvmlDeviceOpaque*;
  using InitFn = int (*)();
  using ByUuidFn = int (*)(const char*, Device*);
  using EnergyFn = int (*)(Device, unsigned long long*);  // millijoules
  using NameFn = int (*)(Device, char*, unsigned int);
  using ErrorFn = const char* (*)(int);
  EnergyFn energy = nullptr;
  Device device = nullptr;
};

EnergyCounter EnergyCounter::open(const std::string& gpu_uuid) {
  EnergyCounter c;
  if (gpu_uuid.empty()) {
    c.source_ = "none: a CPU run (NVML's counter is a GPU's)";
    return c;
  }
  const char* name = std::getenv("TB_NVML_LIB");
  const std::string lib_name = name != nullptr && *name != 0 ? name : "libnvidia-ml.so.1";
  // Kept loaded for the process (NVML's shutdown is not needed for a read-only counter).
  void* lib = dlopen(lib_name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    c.source_ = "none: " + lib_name + " cannot be loaded (the NVIDIA driver's NVML)";
    return c;
  }
  const auto sym = [&](const char* s) { return dlsym(lib, s); };
  const auto init = reinterpret_cast<Nvml::InitFn>(sym("nvmlInit_v2"));
  const auto by_uuid = reinterpret_cast<Nvml::ByUuidFn>(sym("nvmlDeviceGetHandleByUUID"));
  const auto energy = reinterpret_cast<Nvml::EnergyFn>(sym("nvmlDeviceGetTotalEnergyConsumption"));
  const auto get_name = reinterpret_cast<Nvml::NameFn>(sym("nvmlDeviceGetName"));
  const auto error = reinterpret_cast<Nvml::ErrorFn>(sym("nvmlErrorString"));
  if (!init || !by_uuid || !energy || !get_name || !error) {
    c.source_ = "none: " + lib_name + " lacks NVML's entry points";
    return c;
  }
  const auto failed = [&](const char* what, int code) {
    c.source_ = std::string("none: NVML ") + what + ": " + error(code);
    return c;
  };
  Nvml::Device device = nullptr;
  unsigned long long mj = 0;
  if (const int e = init(); e != 0) return failed("init", e);
  if (const int e = by_uuid(gpu_uuid.c_str(), &device); e != 0) return failed(gpu_uuid.c_str(), e);
  if (const int e = energy(device, &mj); e != 0) return failed("total energy", e);
  char gpu[96] = "";
  get_name(device, gpu, sizeof(gpu));
  c.nvml_ = std::make_shared<const Nvml>(Nvml{energy, device});
  c.source_ = std::string("nvml: ") + gpu;
  return c;
}

double EnergyCounter::joules() const {
  unsigned long long mj = 0;
  if (!nvml_ || nvml_->energy(nvml_->device, &mj) != 0) return NAN;
  return static_cast<double>(mj) / 1e3;
}

}  // namespace trainbench
