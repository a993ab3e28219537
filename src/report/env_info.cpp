// Environment facts recorded with every run, and the threading environment.
#include "trainbench/report/env_info.h"

#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <torch/cuda.h>
#include <torch/types.h>
#include <torch/version.h>

#include "trainbench/core/cpu_isa.h"
#include "trainbench/core/timing.h"
#include "trainbench/measure/cpu_noise.h"
#include "trainbench_build_facts.h"  // generated at configure: TB_BUILD_TYPE

#ifdef TB_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

namespace trainbench {

namespace {

// The text after `key` in `text` up to the first character of `stops`, or "".
std::string field_after_(const std::string& text, const std::string& key, const char* stops) {
  const size_t at = text.find(key);
  if (at == std::string::npos) return "";
  const size_t begin = at + key.size();
  return text.substr(begin, text.find_first_of(stops, begin) - begin);
}

#ifdef TB_WITH_CUDA
// A CUDA device's properties (no index: device 0).
const cudaDeviceProp* props_(const torch::Device& device) {
  return at::cuda::getDeviceProperties(device.index() < 0 ? 0 : device.index());
}
#endif

// The machine beside the device: CPU identity and instruction sets, memory, OS and kernel, the
// load when the run started and the command line (what pyperf records with a result).
void machine_facts_(nlohmann::json& j) {
  const CpuIsa hw = hardware_isa();
  j["cpu"] = {{"vendor", cpuinfo_field("vendor_id")},
              {"family", cpuinfo_field("cpu family")},
              {"model", cpuinfo_field("model\t")},
              {"stepping", cpuinfo_field("stepping")},
              {"model_name", cpuinfo_field("model name")},
              {"isa", isa_names(hw)},
              {"online_cpus", online_cpus()}};
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    if (line.rfind("MemTotal:", 0) == 0) {
      j["memory_bytes"] = static_cast<int64_t>(std::stod(line.substr(9)) * 1024);
    }
  }
  std::ifstream os_release("/etc/os-release");
  for (std::string line; std::getline(os_release, line);) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      v.erase(std::remove(v.begin(), v.end(), '"'), v.end());
      j["os"] = v;
    }
  }
  struct utsname u {};
  if (uname(&u) == 0) j["kernel"] = std::string(u.sysname) + " " + u.release + " " + u.machine;
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) == 3) j["load_average"] = {load[0], load[1], load[2]};
  std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
  nlohmann::json args = nlohmann::json::array();
  for (std::string arg; std::getline(cmdline, arg, '\0');) args.push_back(arg);
  j["command_line"] = args;
}

}  // namespace

std::string blas_info() {
  // LibTorch's build configuration, e.g. "... Math Kernel Library Version 2024.2-Product ...
  // MKL-DNN v3.10.2 ... BLAS_INFO=mkl, ...": the wheel links MKL (float32 GEMMs) and oneDNN
  // (bfloat16 matmuls) statically, so the build, not the machine, decides.
  const std::string cfg = at::show_config();
  std::string blas = field_after_(cfg, "BLAS_INFO=", ", \n");
  if (blas.empty()) blas = "unknown";
  const std::string mkl = field_after_(cfg, "Math Kernel Library Version ", " \n");
  const std::string dnn = field_after_(cfg, "MKL-DNN ", " \n");
  if (!mkl.empty()) blas += " " + mkl;
  if (!dnn.empty()) blas += ", oneDNN " + dnn;
  return blas;
}

const std::vector<std::string>& thread_env_vars() {
  static const std::vector<std::string> vars = {
      "OMP_NUM_THREADS", "OMP_WAIT_POLICY", "OMP_PROC_BIND",           "GOMP_SPINCOUNT",
      "KMP_BLOCKTIME",   "MKL_NUM_THREADS", "OPENBLAS_THREAD_TIMEOUT", "XLA_FLAGS"};
  return vars;
}

nlohmann::json thread_env() {
  nlohmann::json j = nlohmann::json::object();
  for (const std::string& var : thread_env_vars()) {
    const char* value = std::getenv(var.c_str());
    j[var] = value ? nlohmann::json(value) : nlohmann::json(nullptr);
  }
  return j;
}

std::string device_name(const torch::Device& device) {
#ifdef TB_WITH_CUDA
  if (device.is_cuda()) return props_(device)->name;
#endif
  (void)device;
  const std::string name = cpuinfo_field("model name");
  return name.empty() ? "cpu" : name;
}

std::string gpu_uuid(const torch::Device& device) {
#ifdef TB_WITH_CUDA
  if (device.is_cuda()) {
    const auto& b = props_(device)->uuid;
    std::string s = "GPU-";
    char hex[3];
    for (int i = 0; i < 16; ++i) {
      std::snprintf(hex, sizeof(hex), "%02x", static_cast<unsigned char>(b.bytes[i]));
      s += hex;
      if (i == 3 || i == 5 || i == 7 || i == 9) s += '-';  // 8-4-4-4-12
    }
    return s;
  }
#endif
  (void)device;
  return "";
}

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

double available_memory_bytes() {
  double avail = 0;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    if (line.rfind("MemAvailable:", 0) == 0) avail = std::stod(line.substr(13)) * 1024;  // kB
  }
  // cgroup v2: memory.max is "max" or a byte count; what is left is max - current.
  std::ifstream max_file("/sys/fs/cgroup/memory.max"), cur_file("/sys/fs/cgroup/memory.current");
  std::string max_text, cur_text;
  if (max_file >> max_text && cur_file >> cur_text && max_text != "max") {
    const double left = std::stod(max_text) - std::stod(cur_text);
    if (left > 0 && (avail == 0 || left < avail)) avail = left;
  }
  return avail;
}

std::string build_type() { return TB_BUILD_TYPE; }

std::string libtorch_version() { return TORCH_VERSION; }

nlohmann::json collect_env(const torch::Device& device, int num_threads) {
  nlohmann::json j;
  j["libtorch_version"] = TORCH_VERSION;
  j["device"] = device.str();
  j["device_name"] = device_name(device);
  j["cuda_version"] = nullptr;
  j["cudnn_version"] = nullptr;
  j["compute_capability"] = nullptr;
  j["tf32_matmul"] = nullptr;
#ifdef TB_WITH_CUDA
  if (device.is_cuda()) {
    const auto* prop = props_(device);
    j["compute_capability"] = std::to_string(prop->major) + "." + std::to_string(prop->minor);
    j["cuda_version"] =
        std::to_string(CUDA_VERSION / 1000) + "." + std::to_string(CUDA_VERSION % 1000 / 10);
    j["tf32_matmul"] = at::globalContext().allowTF32CuBLAS();
    j["tf32_cudnn"] = at::globalContext().allowTF32CuDNN();
    if (at::globalContext().hasCuDNN()) {
      // cuDNN 9 encodes major*10000 + minor*100 + patch, cuDNN 8 major*1000 + minor*100 + patch.
      const long v = at::globalContext().versionCuDNN();
      const long major = v >= 90000 ? v / 10000 : v / 1000;
      const long minor = (v >= 90000 ? v % 10000 : v % 1000) / 100;
      j["cudnn_version"] =
          std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
    }
    int driver = 0;
    if (cudaDriverGetVersion(&driver) == cudaSuccess) {
      j["cuda_driver_version"] =
          std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10);
    }
    j["gpu_memory_bytes"] = static_cast<int64_t>(prop->totalGlobalMem);
    j["multiprocessors"] = prop->multiProcessorCount;
  }
#endif
  j["num_threads"] = num_threads;
  j["available_cores"] = available_cores();
  j["blas"] = blas_info();
  j["parallel_info"] = at::get_parallel_info();
  j["thread_env"] = thread_env();
#if defined(__clang__)
  j["compiler"] = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  j["compiler"] = std::string("g++ ") + __VERSION__;
#else
  j["compiler"] = "unknown";
#endif
  j["build_type"] = build_type();
  // What the binary was built from, and its tree now (the checkout it was built in): two
  // different things once the tree is edited after the build. git_revision (older readers) is
  // the build's.
  const SourceId build = build_source_id();
  const std::optional<SourceId> tree = tree_source_id();
  auto or_null = [](const std::string& s) {
    return s.empty() ? nlohmann::json() : nlohmann::json(s);
  };
  j["build_revision"] = build.revision;
  j["build_source_hash"] = build.source_hash;
  j["build_diff_hash"] = or_null(build.diff_hash);
  j["tree_revision"] = tree ? nlohmann::json(tree->revision) : nlohmann::json();
  j["tree_source_hash"] = tree ? nlohmann::json(tree->source_hash) : nlohmann::json();
  j["git_revision"] = build.revision;
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  j["hostname"] = host;
  j["started_at"] = utc_now_iso8601();
  machine_facts_(j);
  return j;
}

}  // namespace trainbench
