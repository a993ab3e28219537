// Everything a benchmark run prepares before its first step: the corpus and its split, the run
// folder and checkpoint to resume from, the GEMM route (measured: the plan's last decision), the
// model and optimizer, and the resolved config. Only the run folder's hold is made here (the folder
// itself for a new run); the files come later. A failure throws ConfigError/RunError.
#pragma once

#include <memory>
#include <string>

#include <torch/types.h>
#include <nlohmann/json.hpp>

#include "trainbench/core/plan.h"
#include "trainbench/data/corpus.h"
#include "trainbench/data/sampler.h"
#include "trainbench/dist/dist.h"
#include "trainbench/measure/flops.h"
#include "trainbench/measure/gemm_probe.h"
#include "trainbench/report/run_lock.h"
#include "trainbench/train/trainer.h"

namespace trainbench {

struct RunSetup {
  RunPlan plan;  // the run's plan with the GEMM route decided
  ByteCorpus corpus;
  DataSplit split;
  std::string run_dir;
  RunFolderLock lock;      // rank 0's hold on run_dir for the whole run (report/run_lock.h)
  std::string checkpoint;  // the checkpoint to resume from, or empty
  int64_t start_step = 0;  // steps already trained (resume), else 0
  std::string backend;     // "eager", "fused" or the script executor's description
  double compile_s = 0;    // building the script (the profiling steps are added later)
  std::unique_ptr<Trainer> trainer;
  int64_t params = 0;
  std::string device_name;
  PeakFlops peak;
  GemmProbe probe;             // the CPU's GEMM routes measured (empty on CUDA or when not needed)
  nlohmann::json probe_cache;  // measure/probe_cache.h's record (null where no probe ran)
  // {lowp_gemm (as given), chosen, chosen_by (measurement | flag | one route), reason,
  //  flops_per_s {path: rate}, probe_seconds}; null where no probe ran
  nlohmann::json gemm_route;
  nlohmann::json gemm_paths;  // env.json "gemm_path" (run_figures.h), with "route"
  double flops_per_token = 0;
  nlohmann::json config_json;  // config.json's contents
};

// dist: the process group of a multi-process run (nullptr for one process). Only rank 0
// checks the run folder; every rank checks that its flags equal rank 0's. The machine's memory
// is checked for all the processes sharing it (plan.dist.local_world_size).
RunSetup prepare_run(const RunPlan& plan, int threads, DistContext* dist);

}  // namespace trainbench
