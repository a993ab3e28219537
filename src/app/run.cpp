// run_benchmark: one run, as a Run that sets up (threads, peers, data, model, run folder),
// trains (warm-up, timed windows, evaluations, checkpoints, a stop on a signal) and finishes
// (summary.json, built in one place, and the result). The run's state lives in the Run.
#include "trainbench/app/run.h"

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
#include "trainbench/model/scripted_model.h"
#include "trainbench/model/sdpa_backend.h"
#include "trainbench/report/env_info.h"
#include "trainbench/report/profile.h"
#include "trainbench/report/progress.h"
#include "trainbench/report/results.h"
#include "trainbench/train/checkpoint.h"
#include "trainbench/train/trainer.h"

#ifdef TB_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace trainbench {
namespace {

// Timed steps after the warm-up that still get a log line each, before the windows take over.
constexpr int64_t kEarlyLines = 3;

// Training state reported per window of log_every steps.
struct Window {
  double loss_sum = 0, seconds = 0;
  int64_t steps = 0;
  bool has_warmup = false;
  double timed_loss_sum = 0;  // the timed steps alone (no warm-up or profiled step)
  int64_t timed_steps = 0;
};

class Run {
 public:
  Run(const RunConfig& cfg, const DistEnv& env) : cfg_(cfg), env_(env) {}

  RunResult go() {
    set_up_();
    open_files_();
    prepare_data_();
    const StopSignalGuard stop_guard;
    train_();
    return finish_();
  }

 private:
  // Threads, device, the peers (a rank that never comes fails the run here), data and model.
  void set_up_() {
    const bool cuda = resolved_device(cfg_) == "cuda";
    device_ = cuda && env_.distributed()
                  ? torch::Device(torch::kCUDA, static_cast<int8_t>(env_.local_rank))
                  : torch::Device(resolved_device(cfg_));
    // The processes of one machine share its cores; more threads than cores only slow a run.
    if (cfg_.threads > available_cores()) {
      throw ConfigError("--threads: " + std::to_string(cfg_.threads) + " is more than the " +
                        std::to_string(available_cores()) +
                        " cores available to this process; allowed: 0 (all of them) to " +
                        std::to_string(available_cores()));
    }
    threads_ = cfg_.threads > 0 ? static_cast<int>(cfg_.threads)
                                : std::max(1, available_cores() / env_.local_world_size);
    at::set_num_threads(threads_);
    // float32 on CUDA may use TF32 tensor cores, as in the reference (recorded in env.json).
    if (device_.is_cuda()) at::globalContext().setAllowTF32CuBLAS(true);
#ifdef TB_WITH_CUDA
    // Each rank's own GPU is the current one, for every stream and kernel it starts.
    if (device_.is_cuda() && device_.has_index()) c10::cuda::set_device(device_.index());
#endif
    // A forced attention backend that cannot run is a usage error, found before anything starts.
    const std::string sdpa_used = resolve_sdpa_backend(cfg_, device_);
    if (env_.distributed()) dist_ = std::make_unique<DistContext>(env_, cfg_, device_);
    try {
      setup_ = prepare_run(cfg_, device_, threads_, dist_.get(), env_.local_world_size);
    } catch (const std::exception& e) {
      agree_("setup", error_text(e));
      throw;
    }
    agree_("setup", "");
    setup_.config_json["sdpa_backend_used"] =
        sdpa_used.empty() ? nlohmann::json(nullptr) : nlohmann::json(sdpa_used);
    if (rank0_()) {
      warn_about_setup(threads_, env_.local_world_size);
      if (!device_.is_cuda()) warn_about_lowp_gemm(cfg_, setup_.gemm_paths);
    }
    step_ = setup_.start_step;
    compile_s_ = setup_.compile_s;
    // Replicas start from rank 0's parameters (before any file is written: a rank lost here
    // leaves nothing behind).
    if (dist_) {
      Trainer& trainer = *setup_.trainer;
      dist_->broadcast_from_rank0(trainer.model().parameters());
      sync_ = std::make_unique<GradSync>(trainer.model().parameters(), *dist_,
                                         static_cast<int64_t>(cfg_.bucket_mb * (1 << 20)),
                                         cfg_.dist_overlap, [] { return stop_signal() != 0; });
      trainer.attach(sync_.get());
    }
  }

  // Every rank learns whether the others' set-up (or folder creation) went well, so that a bad
  // input on one rank stops all of them at once instead of leaving them waiting.
  void agree_(const std::string& stage, const std::string& error) {
    if (!dist_) return;
    const std::string other = dist_->agree(stage, error);
    if (error.empty() && !other.empty()) throw RunError(other);
  }

  // Rank 0 writes the run folder. A folder that cannot be written (or a full disk) is found
  // here, before any training step; a run folder this run created is then removed again.
  void open_files_() {
    std::string files_error;
    if (rank0_()) {
      // The hold created the folder when it was new (run_lock.h).
      const bool existed = !setup_.lock.created() && std::filesystem::exists(setup_.run_dir);
      try {
        writer_.emplace(setup_.run_dir, setup_.checkpoint.empty() ? -1 : setup_.start_step);
        writer_->write_config(setup_.config_json);
        nlohmann::json env = collect_env(device_, threads_);
        env["gemm_path"] = setup_.gemm_paths;
        writer_->write_env(env);
      } catch (const RunError& e) {
        writer_.reset();
        std::error_code ec;
        if (!existed) std::filesystem::remove_all(setup_.run_dir, ec);
        files_error = e.what();
      }
    }
    agree_("files", files_error);
    if (!files_error.empty()) throw RunError(files_error);
    elapsed_before_ = writer_ ? writer_->elapsed_before() : 0.0;
    log_info(
        "run folder " + setup_.run_dir + ": " + cfg_.model + " model, " +
        std::to_string(setup_.params) + " parameters, " + cfg_.dtype + " on " + setup_.device_name +
        ", " + std::to_string(threads_) + " threads" +
        (dist_ ? " x " + std::to_string(world_()) + " processes (" + dist_->backend() + ")" : "") +
        ", " + setup_.backend + "; corpus " + setup_.corpus.source() + " (" +
        std::to_string(setup_.corpus.size()) + " bytes)");
  }

  // The sampler (advanced past the batches already trained), the loader and this rank's share
  // of the global validation batches.
  void prepare_data_() {
    SamplerOptions so;
    so.train_end = setup_.split.train_end;
    so.seq_len = cfg_.seq_len;
    so.batch_size = cfg_.batch_size;
    so.seed = static_cast<uint64_t>(cfg_.seed);
    so.world_size = world_();
    so.rank = env_.rank;
    EpochSampler sampler(so);
    for (int64_t i = 0; i < setup_.start_step; ++i) sampler.next_batch();
    loader_ = std::make_unique<BatchLoader>(setup_.corpus, std::move(sampler), device_.is_cuda());
    valid_ = rank_share(
        validation_batches(setup_.split, cfg_.seq_len, global_batch_(), cfg_.eval_batches),
        env_.rank, world_());
    progress_ = std::make_unique<Progress>(cfg_.steps, rank0_());
  }

  // The step loop. A failure after training started is recorded as status "failed".
  void train_() {
    run_start_ = synchronized_now_s(device_);
    try {
      while (step_ < cfg_.steps && one_step_()) {
      }
      if (status_ == RunStatus::kCompleted) evaluate_();
    } catch (const CollectiveError& e) {
      fail_(dist_->explain_failure(e.what(), /*collective=*/true));
    } catch (const std::exception& e) {
      fail_(dist_ ? dist_->explain_failure(error_text(e), /*collective=*/false) : error_text(e));
    }
    progress_->finish();
  }

  void fail_(const std::string& error) {
    status_ = RunStatus::kFailed;
    error_ = error;
  }

  // What one step measured: its wall time, its loss and the other work on the CPU meanwhile.
  struct StepResult {
    double t0 = 0, t1 = 0, loss = 0;
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
  bool one_step_() {
    before_step_();
    const StepResult r = run_step_();
    ++step_;
    account_(r);
    show_progress_(r);
    if (diverged_(r.loss)) return false;
    const bool stopping = agree_on_stop_();
    end_window_and_checkpoint_(r, stopping);
    if (stopping) {
      status_ = RunStatus::kInterrupted;
      progress_->finish();
      log_warn("stopped by signal " + std::to_string(run_signal_) + " after step " +
               std::to_string(step_) + "; writing the results so far");
      return false;
    }
    if (cfg_.eval_every > 0 && step_ % cfg_.eval_every == 0 && step_ < cfg_.steps) evaluate_();
    return true;
  }

  // Testing aid, per-rank dropout stream, and the profiler's start at the first profiled step.
  void before_step_() {
    if (cfg_.fault_exit_step == step_ + 1) std::_Exit(3);  // testing aid: a crashing process
    // Dropout differs per rank. Rank 0 keeps the single-process stream (checkpointed); the
    // others reseed from (seed, rank, step) each step, so a resume continues them exactly.
    if (dist_ && !rank0_()) torch::manual_seed(rank_step_seed(cfg_.seed, env_.rank, step_));
    if (cfg_.profile_steps > 0 && session_steps_() == cfg_.warmup_steps && rank0_()) {
      profiler_ = std::make_unique<StepProfiler>();
      profiler_->start();
    }
  }

  // The batch and the trainer's step, timed (synchronized with the device) from the batch on.
  StepResult run_step_() {
    StepResult r;
    const CpuSample cpu_before = cpu_sample();
    r.t0 = synchronized_now_s(device_);
    torch::Tensor batch;
    {
      RECORD_FUNCTION("trainbench::data", std::vector<c10::IValue>());
      batch = loader_->next();
    }
    r.loss = setup_.trainer->step(batch).item<double>();  // synchronizes on CUDA
    r.t1 = synchronized_now_s(device_);
    r.interference = interference(cpu_before, cpu_sample());
    return r;
  }

  // The step's time goes to the warm-up, the profile or the timed samples; its loss to the
  // window (and to the timed loss where the step is timed).
  void account_(const StepResult& r) {
    const int64_t n = session_steps_();
    const StepKind kind = kind_of_(n);
    if (compile_path(cfg_) == CompilePath::kTorchScript) {
      if (n <= kProfilingSteps) compile_s_ += r.seconds();
      if (n == cfg_.warmup_steps) fused_groups_ = last_graph_fused_groups();
    }
    if (kind == StepKind::kWarmup) warmup_s_ += r.seconds();
    if (kind == StepKind::kProfiled) {  // the profiler's overhead stays out of the timing
      profile_s_ += r.seconds();
      if (n == cfg_.warmup_steps + cfg_.profile_steps && profiler_) {
        profile_ = profiler_->stop(cfg_.profile_steps, profile_s_, setup_.run_dir + "/trace.json");
        profiler_.reset();
      }
    }
    if (kind == StepKind::kTimed) {
      timed_ms_.push_back(r.seconds() * 1e3);
      interference_.push_back(r.interference);
      if (sync_) comm_ms_.push_back(sync_->last_wait_s() * 1e3);
      win_.timed_loss_sum += r.loss;
      ++win_.timed_steps;
    }
    win_.loss_sum += r.loss;
    win_.seconds += r.seconds();
    win_.has_warmup |= kind == StepKind::kWarmup;
    ++win_.steps;
  }

  // The live line; a line for each warm-up and early timed step (a slow run speaks from step
  // 1); the first timed step's projection of the whole run; the loss before any update (the
  // first step's forward) as metrics.jsonl's step-0 record, where the loss curves start.
  void show_progress_(const StepResult& r) {
    const int64_t n = session_steps_();
    const double tok_s = global_batch_() * cfg_.seq_len * win_.steps / win_.seconds;
    progress_->update(step_, r.loss, tok_s, r.seconds());
    if (n <= cfg_.warmup_steps + kEarlyLines && step_ % cfg_.log_every != 0 &&
        step_ != cfg_.steps) {
      progress_->early_step(step_, r.loss, r.seconds(), kind_of_(n) == StepKind::kWarmup);
    }
    if (n == cfg_.warmup_steps + 1 && step_ < cfg_.steps) {
      progress_->projection(cfg_.steps - step_, r.seconds(), !device_.is_cuda());
    }
    if (step_ == 1) {
      metric_({{"step", 0},
               {"initial_loss", r.loss},
               {"initial_bpb", r.loss / std::log(2.0)},
               {"elapsed_s", 0.0}});
    }
  }

  bool diverged_(double loss) {
    if (std::isfinite(loss)) return false;
    status_ = RunStatus::kDiverged;
    progress_->finish();
    log_error("loss is " + std::to_string(loss) + " at step " + std::to_string(step_) +
              "; the run diverged (try a lower --lr, or float32/bfloat16)");
    return true;
  }

  // The ranks agree on stopping (a signal seen by any of them) with each step's loss.
  bool agree_on_stop_() {
    const bool stopping = sync_ ? sync_->stop_requested() : stop_signal() != 0;
    if (stopping) {
      torch::Tensor sig = torch::full({1}, static_cast<int64_t>(stop_signal()), torch::kInt64);
      if (dist_) dist_->allreduce({sig}, ReduceOp::kMax);  // the ranks agreed to stop together
      run_signal_ = static_cast<int>(sig.item<int64_t>());
    }
    return stopping;
  }

  // A window ends every log_every steps, at the last step, and where a checkpoint or a stop
  // falls (so a resumed run logs every step); then rank 0 saves the checkpoint.
  void end_window_and_checkpoint_(const StepResult& r, bool stopping) {
    const bool checkpoint_now =
        cfg_.checkpoint_every > 0 && (step_ % cfg_.checkpoint_every == 0 || stopping);
    if (step_ % cfg_.log_every == 0 || step_ == cfg_.steps || checkpoint_now || stopping) {
      flush_window_(r.t1);
    }
    if (checkpoint_now && rank0_()) {
      save_checkpoint(setup_.run_dir, step_, *setup_.trainer, cfg_.keep_checkpoints);
    }
  }

  void metric_(const nlohmann::json& line) {
    if (writer_) writer_->append_metric(line);
  }

  void evaluate_() {
    const Trainer::EvalSums sums = setup_.trainer->evaluate_sums(setup_.corpus, valid_);
    torch::Tensor t =
        torch::tensor({sums.loss_sum, static_cast<double>(sums.count)}, torch::kFloat64);
    if (dist_) dist_->allreduce({t});
    valid_loss_ = t[0].item<double>() / t[1].item<double>();
    const double bpb = valid_loss_ / std::log(2.0);
    metric_({{"step", step_}, {"valid_loss", valid_loss_}, {"valid_bpb", bpb}});
    progress_->message("eval at step " + std::to_string(step_) + ": valid loss " +
                       std::to_string(valid_loss_) + " nats/byte, " + std::to_string(bpb) +
                       " bits/byte");
  }

  void flush_window_(double now) {
    final_train_loss_ = win_.loss_sum / win_.steps;
    if (win_.timed_steps > 0) final_timed_loss_ = win_.timed_loss_sum / win_.timed_steps;
    const double seq_s = global_batch_() * win_.steps / win_.seconds;
    metric_({{"step", step_},
             {"loss", final_train_loss_},
             {"sequences_per_s", seq_s},
             {"tokens_per_s", seq_s * cfg_.seq_len},
             {"elapsed_s", elapsed_before_ + now - run_start_},
             {"window_steps", win_.steps},
             {"includes_warmup", win_.has_warmup}});
    progress_->window(step_, final_train_loss_, seq_s, seq_s * cfg_.seq_len,
                      win_.seconds / static_cast<double>(win_.steps));
    win_ = Window{};
  }

  // summary.json, in one place. Timing figures (step times, speeds, MFU) cover this session's
  // timed steps; total_seconds covers the whole run, earlier sessions included.
  nlohmann::json summary_(const StepStats& stats) const {
    const double seq_s = stats.count ? global_batch_() * 1e3 / stats.median_ms : NAN;
    const PeakFlops& peak = setup_.peak;
    const LossScaler& scaler = setup_.trainer->scaler();
    const double session_s = synchronized_now_s(device_) - run_start_;
    const auto or_null = [](bool present, const nlohmann::json& v) {
      return present ? v : nlohmann::json(nullptr);
    };
    const int64_t start = setup_.start_step;
    return {
        {"status", status_name(status_)},
        {"params", setup_.params},
        {"steps_done", step_},
        {"resumed_from_step", or_null(start > 0, start)},
        {"steps_timed", stats.count},
        {"step_time_ms",
         {{"median", stats.median_ms}, {"min", stats.min_ms}, {"max", stats.max_ms}}},
        {"step_time_ms_samples", timed_ms_},
        {"world_size", world_()},
        {"global_batch_size", global_batch_()},
        {"sequences_per_s", seq_s},  // all ranks together
        {"tokens_per_s", seq_s * cfg_.seq_len},
        {"flops_per_token", setup_.flops_per_token},
        {"mfu", speed_.mfu},
        {"peak_unreliable", speed_.peak_unreliable},
        {"achieved_flops_per_s", or_null(stats.count > 0, speed_.achieved_flops_per_s)},
        {"peak_flops", or_null(peak.flops_per_s > 0, peak.flops_per_s)},
        {"peak_flops_source", peak.source},
        {"peak_probe", peak.probe},  // gemm_probe: shapes, best rates, trials; else null
        {"gemm_path", setup_.gemm_paths.at("model_gemms")},
        {"noise", speed_.noise},
        {"peak_memory_bytes", peak_memory_bytes(device_)},
        {"warmup_seconds", warmup_s_},
        // null for eager runs: nothing was compiled (0.0 would read as a compiler that took
        // no time)
        {"compile_seconds", or_null(compile_path(cfg_) == CompilePath::kTorchScript, compile_s_)},
        {"compile_backend", setup_.backend},
        {"sdpa_backend_used", setup_.config_json.at("sdpa_backend_used")},
        {"fused_groups", or_null(compile_path(cfg_) == CompilePath::kTorchScript, fused_groups_)},
        {"session", {{"first_step", start + 1}, {"last_step", step_}, {"seconds", session_s}}},
        {"total_seconds", elapsed_before_ + session_s},
        {"final_train_loss", final_train_loss_},
        // Bits per byte over the last window's timed steps, beside final_valid_bpb in one unit.
        {"final_train_bpb", final_timed_loss_ / std::log(2.0)},
        {"final_valid_loss", valid_loss_},
        {"final_valid_bpb", valid_loss_ / std::log(2.0)},
        {"loss_scale", or_null(scaler.enabled(), scaler.enabled() ? scaler.scale() : 0.0)},
        {"skipped_steps", scaler.skipped_steps()},
        {"stop_signal", or_null(run_signal_ != 0, run_signal_)},
        {"profile", profile_},  // --profile_steps: time by op category, or null
    };
  }

  RunResult finish_() {
    const StepStats stats = step_stats(timed_ms_);
    speed_ =
        judge_speed(stats, timed_ms_, interference_, setup_.peak,
                    global_batch_() * cfg_.seq_len * setup_.flops_per_token / world_(), rank0_());
    nlohmann::json summary = summary_(stats);
    if (dist_ && error_.empty()) {
      try {
        summary.update(dist_summary(*dist_, *sync_, setup_.trainer->model(), stats, comm_ms_));
      } catch (const CollectiveError& e) {
        fail_(dist_->explain_failure(e.what(), /*collective=*/true));
        summary["status"] = status_name(status_);
      }
    }
    if (rank0_() && !cfg_.save_model.empty() && status_ == RunStatus::kCompleted) {
      try {
        save_torchscript(setup_.trainer->model(), cfg_.save_model);
        log_info("saved the trained network as TorchScript: " + cfg_.save_model);
      } catch (const std::exception& e) {  // recorded like any failure after training started
        fail_(error_text(e));
        summary["status"] = status_name(status_);
      }
    }
    if (!error_.empty()) summary["error_message"] = error_;
    if (writer_) writer_->write_summary(summary);
    if (!error_.empty()) {
      throw RunError(error_ +
                     (writer_ ? " (recorded in " + setup_.run_dir + "/summary.json)" : ""));
    }
    return {setup_.run_dir, status_, run_signal_, summary};
  }

  bool rank0_() const { return env_.rank == 0; }
  int world_() const { return env_.world_size; }
  int64_t global_batch_() const { return cfg_.batch_size * env_.world_size; }

  const RunConfig& cfg_;
  const DistEnv& env_;
  torch::Device device_{torch::kCPU};
  int threads_ = 1;
  std::unique_ptr<DistContext> dist_;
  RunSetup setup_;
  std::unique_ptr<GradSync> sync_;
  std::optional<ResultWriter> writer_;  // rank 0 only
  std::unique_ptr<BatchLoader> loader_;
  std::vector<std::vector<int64_t>> valid_;
  std::unique_ptr<Progress> progress_;

  int64_t step_ = 0, fused_groups_ = 0;
  std::vector<double> timed_ms_, comm_ms_;      // per timed step
  std::vector<StepInterference> interference_;  // per timed step: other work's CPU time
  SpeedJudgement speed_;                        // MFU, its peak's reliability, noise
  Window win_;
  double run_start_ = 0, elapsed_before_ = 0, warmup_s_ = 0, compile_s_ = 0;
  double final_train_loss_ = NAN, final_timed_loss_ = NAN, valid_loss_ = NAN;
  std::unique_ptr<StepProfiler> profiler_;  // --profile_steps, while it records
  double profile_s_ = 0;
  nlohmann::json profile_;  // its breakdown (null without --profile_steps)
  RunStatus status_ = RunStatus::kCompleted;
  std::string error_;   // a failure after training started
  int run_signal_ = 0;  // the signal that stopped the run (the highest any rank received)
};

}  // namespace

const char* status_name(RunStatus status) {
  switch (status) {
    case RunStatus::kCompleted:
      return "completed";
    case RunStatus::kInterrupted:
      return "interrupted";
    case RunStatus::kDiverged:
      return "diverged";
    case RunStatus::kFailed:
      return "failed";
  }
  return "failed";
}

RunResult run_benchmark(const RunConfig& cfg, const DistEnv& env) { return Run(cfg, env).go(); }

}  // namespace trainbench
