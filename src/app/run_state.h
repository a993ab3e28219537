// The Run behind run_benchmark (app/run.h): one run's state and steps, shared by run.cpp
// (set-up, the run folder, summary.json and the result) and run_loop.cpp (the step loop, as
// named phases, evaluation and the log windows). Private to src/app.
#pragma once

#include "trainbench/app/run.h"
#include "trainbench/core/errors.h"
#include "trainbench/core/run_files.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

#include "trainbench/app/run_figures.h"
#include "trainbench/app/run_setup.h"
#include "trainbench/core/log.h"
#include "trainbench/core/signals.h"
#include "trainbench/core/timing.h"
#include "trainbench/data/batch_loader.h"
#include "trainbench/dist/dist.h"
#include "trainbench/dist/grad_sync.h"
#include "trainbench/measure/energy.h"
#include "trainbench/measure/profile.h"
#include "trainbench/model/scripted_model.h"
#include "trainbench/model/sdpa_backend.h"
#include "trainbench/report/env_info.h"
#include "trainbench/report/progress.h"
#include "trainbench/report/results.h"
#include "trainbench/report/tensorboard.h"
#include "trainbench/train/checkpoint.h"
#include "trainbench/train/trainer.h"

#ifdef TB_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace trainbench::run_detail {

// Timed steps after the warm-up that still get a log line each, before the windows take over.
constexpr int64_t kEarlyLines = 3;

// Training state reported per window of log_every steps.
struct Window {
  double loss_sum = 0, seconds = 0;
  int64_t steps = 0;
  bool has_warmup = false;
  double timed_loss_sum = 0;  // the timed steps alone (no warm-up or profiled step)
  int64_t timed_steps = 0;
  std::vector<double> losses;  // every step's loss (metrics.jsonl "step_losses")
  std::vector<double> step_s;  // every step's time (TensorBoard's speed/step_ms: their median)
};

class Run {
 public:
  explicit Run(const RunPlan& plan) : plan_(plan) {}
  ~Run() { set_fatal_hook({}); }
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  RunResult go() {
    set_up_();
    open_files_();
    prepare_data_();
    const StopSignalGuard stop_guard;
    train_();
    return finish_();
  }

 private:
  // Threads, the peers (a rank that never comes fails the run here), data, the GEMM route
  // and the model.
  void set_up_();

  // Every rank learns whether the others' set-up (or folder creation) went well, so that a bad
  // input on one rank stops all of them at once instead of leaving them waiting.
  void agree_(const std::string& stage, const std::string& error);

  // Rank 0 writes the run folder. A folder that cannot be written (or a full disk) is found
  // here, before any training step; a run folder this run created is then removed again.
  void open_files_();

  // The sampler (advanced past the batches already trained), the loader and this rank's share
  // of the global validation batches.
  void prepare_data_();

  // The step loop. A failure after training started is recorded as status "failed".
  void train_();

  void fail_(const std::string& error);
  // The fatal hook (core/errors.h) of a run whose folder is open: an error no caller could
  // catch still leaves summary.json "failed" with its one line.
  void record_fatal_(const std::string& error);

  // What one step measured: its wall time, its loss and the other work on the CPU meanwhile.
  struct StepResult {
    double t0 = 0, t1 = 0, loss = 0;
    double joules = NAN;  // the GPU's energy counter across the step (measure/energy.h)
    StepInterference interference;
    double seconds() const { return t1 - t0; }
  };

  // The kind of a step, from its number within this session (warm-up, then the profiled steps,
  // then the timed ones).
  enum class StepKind { kWarmup, kProfiled, kTimed };
  StepKind kind_of_(int64_t session_step) const {
    if (session_step <= cfg_.warmup_steps) return StepKind::kWarmup;
    if (session_step <= cfg_.warmup_steps + cfg_.profile_steps) return StepKind::kProfiled;
    return StepKind::kTimed;
  }
  // Steps this process has run (a resumed run counts from its checkpoint).
  int64_t session_steps_() const { return step_ - setup_.start_step; }

  // One step, as named phases; false when the run stops here (diverged or a signal).
  bool one_step_();

  // Testing aid, per-rank dropout stream, and the profiler's start at the first profiled step.
  void before_step_();

  // The batch and the trainer's step, timed (synchronized with the device) from the batch on.
  StepResult run_step_();

  // The step's time goes to the warm-up, the profile or the timed samples; its loss to the
  // window (and to the timed loss where the step is timed).
  void account_(const StepResult& r);

  // The live line; a line for each warm-up and early timed step (a slow run speaks from step
  // 1); the first timed step's projection of the whole run.
  void show_progress_(const StepResult& r);

  // metrics.jsonl's step-0 record, where the loss curves start: the loss before any update
  // (the first step's forward) of a run that starts from scratch.
  void record_initial_loss_(const StepResult& r);

  bool diverged_(double loss);

  // The ranks agree on stopping (a signal seen by any of them) with each step's loss.
  bool agree_on_stop_();

  // A window ends every log_every steps, at the last step, and where a checkpoint or a stop
  // falls (so a resumed run logs every step); then rank 0 saves the checkpoint.
  void end_window_and_checkpoint_(const StepResult& r, bool stopping);

  void metric_(const nlohmann::json& line) {
    if (writer_) writer_->append_metric(line);
  }

  void evaluate_();

  void flush_window_(double now);

  // TensorBoard's records of a window (report/tensorboard.h tags), then written out.
  void tensorboard_window_(double seq_s);
  // The whole_run/* metrics (and their table in the Text tab) and the HParams session's end; a
  // write error is a warning (the summary still goes out).
  void tensorboard_finish_(const nlohmann::json& summary);

  // summary.json, in one place. Timing figures (step times, speeds, MFU) cover this session's
  // timed steps; total_seconds covers the whole run, earlier sessions included.
  nlohmann::json summary_(const SampleSummary& stats) const;
  // summary.json's time-to-target fields (summary_fields.h): null where no target was set, the
  // *_to_target ones null where it was not reached.
  nlohmann::json target_json_() const;

  RunResult finish_();

  bool rank0_() const { return env_.rank == 0; }
  int world_() const { return env_.world_size; }
  int64_t global_batch_() const { return cfg_.batch_size * env_.world_size; }

  // The plan as given, then (after prepare_run) with the GEMM route the probe measured.
  RunPlan plan_;
  const RunConfig& cfg_ = plan_.cfg;
  const DistEnv& env_ = plan_.dist;
  const torch::Device& device_ = plan_.device;
  int threads_ = 1;
  std::unique_ptr<DistContext> dist_;
  RunSetup setup_;
  std::unique_ptr<GradSync> sync_;
  std::optional<ResultWriter> writer_;     // rank 0 only
  std::unique_ptr<TensorBoardWriter> tb_;  // rank 0 with --tensorboard 1
  std::unique_ptr<BatchLoader> loader_;
  std::vector<std::vector<int64_t>> valid_;
  std::unique_ptr<Progress> progress_;

  int64_t step_ = 0, script_fusion_groups_ = 0;  // TorchScript's fusion groups (summary.json)
  std::vector<double> timed_ms_, comm_ms_;       // per timed step
  std::vector<StepInterference> interference_;   // per timed step: other work's CPU time
  EnergyCounter energy_;                         // this process's GPU's, or none
  double timed_joules_ = 0;                      // over the timed steps (NaN: not read)
  SpeedJudgement speed_;                         // MFU, its peak's reliability, noise
  Window win_;
  double run_start_ = 0, elapsed_before_ = 0, warmup_s_ = 0, compile_s_ = 0;
  bool fatal_ = false;  // record_fatal_ is writing the summary (core/errors.h)
  double final_train_loss_ = NAN, final_timed_loss_ = NAN, valid_loss_ = NAN;
  double first_loss_ = NAN;  // the first step's loss, before any update (the manifest's)
  // Time to target (--target_bpb): the training seconds of every step and the evaluations'
  // seconds so far, and at the first evaluation at or below the target (step 0: not yet).
  struct Target {
    double train_s = 0, eval_s = 0, train_s_at = 0, eval_s_at = 0;
    int64_t step = 0;
    bool stopped = false;  // --stop_at_target ended the run there
  } target_;
  int64_t final_timed_steps_ = 0;           // the steps final_timed_loss_ covers
  std::unique_ptr<StepProfiler> profiler_;  // --profile_steps, while it records
  double profile_s_ = 0;
  nlohmann::json profile_;  // its breakdown (null without --profile_steps)
  RunStatus status_ = RunStatus::kCompleted;
  std::string error_;   // a failure after training started
  int run_signal_ = 0;  // the signal that stopped the run (the highest any rank received)
};

}  // namespace trainbench::run_detail
