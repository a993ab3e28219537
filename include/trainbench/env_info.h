// What the run ran on: LibTorch, device, BLAS, compiler, threads, git revision, host, time.
#pragma once

#include <string>
#include <vector>

#include <torch/types.h>
#include <nlohmann/json.hpp>

namespace trainbench {

// The BLAS and oneDNN LibTorch was built with, e.g. "mkl 2024.2-Product, oneDNN v3.10.2"
// (worded as the Python peer's env.json words it).
std::string blas_info();

// The environment variables that steer the CPU thread pools (OpenMP, MKL, XLA, ...), recorded
// in env.json as {"NAME": value or null} by bench and by every peer alike.
const std::vector<std::string>& thread_env_vars();
nlohmann::json thread_env();

// CPU model name from /proc/cpuinfo, or the CUDA device name.
std::string device_name(const torch::Device& device);

// Cores this process may run on (its affinity mask).
int available_cores();

// ISO-8601 UTC timestamp, e.g. 2026-11-30T10:23:40Z.
std::string utc_now_iso8601();

// "Release", "Debug", ... as configured by CMake.
std::string build_type();

// The env.json object (schema_version 1).
nlohmann::json collect_env(const torch::Device& device, int num_threads);

// Threading set-up that must happen before the OpenMP and OpenBLAS runtimes start, so bench
// re-executes itself once with: OPENBLAS_THREAD_TIMEOUT=4 (OpenBLAS's idle threads stop
// spinning sooner) and, when passive_omp, OMP_WAIT_POLICY=PASSIVE (OpenMP threads sleep
// between parallel regions). Measured on 2 vCPUs (docs/BENCHMARKS.md): passive waiting speeds
// up float32 steps, whose matmuls run on OpenBLAS's pool, and slows bfloat16 steps, whose
// matmuls run on oneDNN's OpenMP pool; so callers pass passive_omp for float32 on CPU only.
// Variables the user set are kept; TRAINBENCH_THREAD_ENV=1 skips the set-up.
void reexec_with_thread_env(char** argv, bool passive_omp);

}  // namespace trainbench
