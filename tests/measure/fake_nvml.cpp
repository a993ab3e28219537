// A stand-in for libnvidia-ml (TB_NVML_LIB in the energy tests): one GPU, "GPU-fake", named
// "Fake GPU", whose energy counter grows by 1500 mJ at every read.
#include <cstring>

namespace {
unsigned long long g_mj = 1'000'000;
int g_device = 0;
}  // namespace

extern "C" {
int nvmlInit_v2() { return 0; }
int nvmlDeviceGetCount_v2(unsigned int* n) {
  *n = 1;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (index != 0) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *device = &g_device;
  return 0;
}
int nvmlDeviceGetHandleByUUID(const char* uuid, void** device) {
  if (std::strcmp(uuid, "GPU-fake") != 0) return 6;  // NVML_ERROR_NOT_FOUND
  *device = &g_device;
  return 0;
}
int nvmlDeviceGetTotalEnergyConsumption(void* /*device*/, unsigned long long* mj) {
  *mj = g_mj += 1500;
  return 0;
}
int nvmlDeviceGetName(void* /*device*/, char* name, unsigned int length) {
  std::strncpy(name, "Fake GPU", length);
  return 0;
}
const char* nvmlErrorString(int code) { return code == 6 ? "Not Found" : "Unknown Error"; }
}
