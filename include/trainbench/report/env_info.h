// What the run ran on: LibTorch, device, BLAS, compiler, threads, git revision, host, time.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

// Declared, not included: the files that only read the clock or the host facts stay torch-free.
namespace c10 {
struct Device;
}  // namespace c10

namespace trainbench {

// The BLAS and oneDNN LibTorch was built with, e.g. "mkl 2024.2-Product, oneDNN v3.10.2"
// (worded as the Python peer's env.json words it).
std::string blas_info();

// The environment variables that steer the CPU thread pools (OpenMP, MKL, XLA, ...), recorded
// in env.json as {"NAME": value or null} by bench and by every peer alike.
const std::vector<std::string>& thread_env_vars();
nlohmann::json thread_env();

// CPU model name from /proc/cpuinfo, or the CUDA device name.
std::string device_name(const c10::Device& device);

// Cores this process may run on (its affinity mask).
int available_cores();

// Host memory a new allocation can still get, in bytes: the kernel's MemAvailable, or less where
// this process's cgroup has a lower limit. 0 when unknown.
double available_memory_bytes();

// The time now in UTC, as strftime's `format` writes it.
std::string utc_now(const char* format);
// ISO-8601 UTC timestamp, e.g. 2026-11-30T10:23:40Z.
std::string utc_now_iso8601();

// The source tree's git revision ("-dirty" with uncommitted changes), as env.json records it.
std::string source_revision();
// LibTorch's version, e.g. "2.11.0".
std::string libtorch_version();

// "Release", "Debug", ... as configured by CMake.
std::string build_type();

// The env.json object (schema_version 1).
nlohmann::json collect_env(const c10::Device& device, int num_threads);

// bench leaves the thread runtimes' environment as it finds it: with LibTorch 2.11's one
// OpenMP pool (MKL and oneDNN run on it too) the OMP_WAIT_POLICY=PASSIVE re-exec that
// LibTorch 1.13 + OpenBLAS needed measured 1.03-1.04x slower (scripts/libtorch_ab.sh, 2026-12-01).

}  // namespace trainbench
