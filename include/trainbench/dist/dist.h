// Multi-process data parallelism on PyTorch's own distributed engine (c10d): torchrun's launch
// contract, the rendezvous (TCPStore + a Gloo or NCCL process group) with timeouts that name the
// missing rank, and the collectives the trainer needs. The c10d headers stay inside dist.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>
#include <nlohmann/json_fwd.hpp>

#include "trainbench/core/plan.h"

namespace trainbench {

// Parses the launch variables from `vars` (name -> value; absent names take the defaults).
// Throws ConfigError naming the variable, its value and what is allowed.
DistEnv parse_dist_env(const std::map<std::string, std::string>& vars);
// parse_dist_env over the process environment.
DistEnv dist_env_from_environment();

// Checks the launch (the plan's DistEnv) against the flags: the plan's backend available in
// this build, one GPU per local rank, no --repeat or --cuda_graph. Throws ConfigError.
void validate_dist(const RunPlan& plan);

// A 64-bit FNV-1a hash over the bytes of the tensors, in order: equal exactly when the
// replicas hold bitwise identical parameters (up to hash collisions).
uint64_t parameter_fingerprint(const std::vector<torch::Tensor>& tensors);

// The dropout seed of rank `rank` (> 0) at `step`: ranks other than 0 reseed from it every
// step, so a resumed run continues every rank exactly.
uint64_t rank_step_seed(int64_t seed, int rank, int64_t step);

enum class ReduceOp { kSum, kMin, kMax };

// A collective that failed (a peer died, hung past --dist_timeout, or closed the group).
class CollectiveError : public RunError {
 public:
  using RunError::RunError;
};

// One process's membership of the group. Construction is the rendezvous: rank 0 hosts the
// TCPStore at MASTER_ADDR:MASTER_PORT, every rank announces itself and waits up to
// --dist_timeout for the others (naming the ranks that never came), then the process group is
// built. Collectives time out after --dist_timeout as well. The plan gives the place
// (plan.dist), the backend, the device and the timeout.
class DistContext {
 public:
  explicit DistContext(const RunPlan& plan);
  ~DistContext();
  DistContext(const DistContext&) = delete;
  DistContext& operator=(const DistContext&) = delete;

  int rank() const;
  int world_size() const;
  const std::string& backend() const;  // "gloo" | "nccl"

  // Every rank reports how its setup went ("" = ready) and learns the others'. Returns the
  // first other rank's error as "rank N: message", or "" when all are ready. Rank 0 waits until
  // the others have read the reports, so its store outlives their reads.
  std::string agree(const std::string& stage, const std::string& my_error);
  // Flags that must match across ranks (config JSON, minus those that may differ): throws
  // ConfigError naming the flags where this rank differs from rank 0.
  void check_same_config(const nlohmann::json& config);

  // Copies rank 0's values into `tensors` on every rank (one dtype, one device).
  void broadcast_from_rank0(std::vector<torch::Tensor> tensors);
  // Starts an in-place all-reduce; the returned function waits for it (throws CollectiveError).
  std::function<void()> allreduce_async(std::vector<torch::Tensor> tensors, ReduceOp op);
  // Blocking all-reduce; takes host tensors with either backend.
  void allreduce(std::vector<torch::Tensor> tensors, ReduceOp op = ReduceOp::kSum);

  // After a failure: posts `what` for the other ranks and returns the message to report.
  // A collective's failure (collective = true) waits a few seconds for the others' reports and
  // names the ranks that failed (and why) or stopped responding. This rank's own failure closes
  // the process group, so that the others' collectives fail at once instead of timing out, and
  // rank 0 keeps its store up until they have read the report.
  std::string explain_failure(const std::string& what, bool collective);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainbench
