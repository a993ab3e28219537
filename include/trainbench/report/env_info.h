// What the run ran on: LibTorch, device, BLAS, compiler, threads, host, time, and what the binary
// was built from against its tree (the sources' revision and hashes).
#pragma once

#include <optional>
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
// A CUDA device's UUID as nvidia-smi -L and NVML write it ("GPU-8d2f0c1e-..."); "" for the CPU.
std::string gpu_uuid(const c10::Device& device);

// Cores this process may run on (its affinity mask).
int available_cores();

// Host memory a new allocation can still get, in bytes: the kernel's MemAvailable, or less where
// this process's cgroup has a lower limit. 0 when unknown.
double available_memory_bytes();

// What sources a binary or a tree holds (scripts/source_id.sh is the one definition): the
// revision (`git describe`, "-dirty" where the compiled sources differ from that commit,
// "unknown" outside git), 16 hex digits of SHA-256 over the source files, and the hash of the
// patch from the commit ("" when clean).
struct SourceId {
  std::string revision, source_hash, diff_hash;
};
// What this binary was built from, embedded at every build (not only at configure).
SourceId build_source_id();
// The checkout the binary was built in (TB_SOURCE_TREE where set: the tests' planted trees).
std::string tree_dir();
// That tree as it is now (scripts/source_id.sh run there); nullopt where the tree or its script
// is gone.
std::optional<SourceId> tree_source_id();
// What a run's env.json says of its binary: "built from uncommitted changes" (a -dirty build
// revision), or "" (a clean build: the binary is its commit exactly, whatever its tree holds or
// has committed since; an env.json from before these fields).
std::string provenance_mark(const nlohmann::json& env);
// bench --version's text: the build's revision and hashes, LibTorch, the build type, and the
// tree beside it where it differs from the build.
std::string version_text();
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
