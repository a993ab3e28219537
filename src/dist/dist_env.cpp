// The launch contract (torchrun's environment), its checks against the flags, and the replica
// fingerprint: the parts of dist.h that need no c10d header.
#include <cstdlib>

#include <torch/cuda.h>

#include "trainbench/core/hash.h"
#include "trainbench/dist/dist.h"

namespace trainbench {
namespace {

int parse_env_int_(const std::string& name, const std::string& value, int min, int max,
                   const std::string& allowed) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size() || v < min || v > max) {
    throw ConfigError(name + ": '" + value + "' is not allowed; use " + allowed);
  }
  return static_cast<int>(v);
}

}  // namespace

DistEnv parse_dist_env(const std::map<std::string, std::string>& vars) {
  auto get = [&](const char* name) -> const std::string* {
    const auto it = vars.find(name);
    return it == vars.end() || it->second.empty() ? nullptr : &it->second;
  };
  DistEnv env;
  if (const auto* v = get("WORLD_SIZE")) {
    env.world_size = parse_env_int_("WORLD_SIZE", *v, 1, 1 << 20, "an integer >= 1");
  }
  if (const auto* v = get("RANK")) {
    env.rank = parse_env_int_(
        "RANK", *v, 0, env.world_size - 1,
        "an integer in [0, WORLD_SIZE-1 = " + std::to_string(env.world_size - 1) + "]");
  } else if (env.world_size > 1) {
    throw ConfigError("RANK: not set while WORLD_SIZE is " + std::to_string(env.world_size) +
                      "; use an integer in [0, WORLD_SIZE-1] (torchrun sets it)");
  }
  env.local_world_size = env.world_size;
  if (const auto* v = get("LOCAL_WORLD_SIZE")) {
    env.local_world_size =
        parse_env_int_("LOCAL_WORLD_SIZE", *v, 1, env.world_size, "an integer in [1, WORLD_SIZE]");
  }
  env.local_rank = env.world_size == env.local_world_size ? env.rank : 0;
  if (const auto* v = get("LOCAL_RANK")) {
    env.local_rank = parse_env_int_(
        "LOCAL_RANK", *v, 0, env.local_world_size - 1,
        "an integer in [0, LOCAL_WORLD_SIZE-1 = " + std::to_string(env.local_world_size - 1) + "]");
  }
  if (const auto* v = get("MASTER_ADDR")) env.master_addr = *v;
  if (const auto* v = get("MASTER_PORT")) {
    env.master_port = parse_env_int_("MASTER_PORT", *v, 1, 65535, "a TCP port in [1, 65535]");
  }
  if (const auto* v = get("TORCHELASTIC_USE_AGENT_STORE")) env.agent_store = *v == "True";
  if (const auto* v = get("TORCHELASTIC_RESTART_COUNT")) {
    env.restart_count =
        parse_env_int_("TORCHELASTIC_RESTART_COUNT", *v, 0, 1 << 30, "an integer >= 0");
  }
  return env;
}

DistEnv dist_env_from_environment() {
  std::map<std::string, std::string> vars;
  for (const char* name :
       {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
        "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_RESTART_COUNT"}) {
    if (const char* v = std::getenv(name)) vars[name] = v;
  }
  return parse_dist_env(vars);
}

void validate_dist(const RunPlan& plan) {
  const DistEnv& env = plan.dist;
  const RunConfig& cfg = plan.cfg;
  if (!env.distributed()) return;
  if (cfg.repeat > 1) {
    throw ConfigError("--repeat: " + std::to_string(cfg.repeat) +
                      " is not allowed in a multi-process run (WORLD_SIZE " +
                      std::to_string(env.world_size) +
                      "); repeat the launch instead, each with its own --save_dir");
  }
  const DistBackend backend = plan.dist_backend;
  const bool cuda = plan.cuda();
#ifndef TB_WITH_GLOO
  if (backend == DistBackend::kGloo) {
    throw ConfigError(
        "--dist_backend: 'gloo' is not in this build (no Gloo headers at configure time: "
        "install libgloo-dev and rebuild)" +
        std::string(cuda ? "; use --dist_backend nccl" : ""));
  }
#endif
  if (backend == DistBackend::kNccl && !cuda) {
    throw ConfigError("--dist_backend: 'nccl' needs --device cuda; use --dist_backend gloo on CPU");
  }
#ifndef TB_WITH_NCCL
  if (backend == DistBackend::kNccl) {
    throw ConfigError(
        "--dist_backend: 'nccl' is not in this build (no NCCL headers found at configure "
        "time); use --dist_backend gloo");
  }
#endif
  if (cfg.cuda_graph) {
    throw ConfigError(
        "--cuda_graph: 1 is not available in a multi-process run (the gradient all-reduce runs "
        "from backward hooks on the host); use --cuda_graph 0");
  }
  if (cuda && env.local_rank >= static_cast<int>(torch::cuda::device_count())) {
    throw ConfigError("LOCAL_RANK: " + std::to_string(env.local_rank) + " has no GPU (" +
                      std::to_string(torch::cuda::device_count()) +
                      " visible); use at most one process per GPU");
  }
}

uint64_t parameter_fingerprint(const std::vector<torch::Tensor>& tensors) {
  uint64_t h = kFnv1aBasis;
  for (const auto& t : tensors) {
    const torch::Tensor c = t.detach().to(torch::kCPU).contiguous();
    h = fnv1a64(c.data_ptr(), c.numel() * c.element_size(), h);
  }
  return h;
}

uint64_t rank_step_seed(int64_t seed, int rank, int64_t step) {
  return splitmix64(static_cast<uint64_t>(seed) * kGoldenGamma ^ static_cast<uint64_t>(rank) << 40 ^
                    static_cast<uint64_t>(step));
}

}  // namespace trainbench
