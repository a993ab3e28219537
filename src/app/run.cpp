// run_benchmark: one run, as a Run (run_state.h) that sets up (threads, peers, data, model, run
// folder), trains (run_loop.cpp: warm-up, timed windows, evaluations, checkpoints, a stop on a
// signal) and finishes (summary.json, built in one place, and the result).
#include "trainbench/app/run.h"
#include "trainbench/app/validate.h"

#include "run_state.h"
#include "trainbench/kernels/fused_kernels.h"
#include "trainbench/train/host_memory.h"

namespace trainbench {
namespace run_detail {

void Run::set_up_() {
  // The processes of one machine share its cores (validate() has refused more threads than
  // cores, which only slow a run).
  threads_ = cfg_.threads > 0 ? static_cast<int>(cfg_.threads)
                              : std::max(1, available_cores() / env_.local_world_size);
  at::set_num_threads(threads_);
  keep_freed_memory(plan_.keep_memory);
  // float32 on CUDA may use TF32 tensor cores, as in the reference (recorded in env.json).
  if (device_.is_cuda()) at::globalContext().setAllowTF32CuBLAS(true);
#ifdef TB_WITH_CUDA
  // Each rank's own GPU is the current one, for every stream and kernel it starts.
  if (device_.is_cuda() && device_.has_index()) c10::cuda::set_device(device_.index());
#endif
  // A forced attention backend that cannot run is a usage error, found before anything starts.
  const std::string sdpa_used = resolve_sdpa_backend(plan_);
  if (env_.distributed()) dist_ = std::make_unique<DistContext>(plan_);
  try {
    setup_ = prepare_run(plan_, threads_, dist_.get());
  } catch (const std::exception& e) {
    agree_("setup", error_text(e));
    throw;
  }
  agree_("setup", "");
  plan_ = setup_.plan;
  setup_.config_json["sdpa_backend_used"] =
      sdpa_used.empty() ? nlohmann::json(nullptr) : nlohmann::json(sdpa_used);
  if (rank0_()) {
    warn_about_setup(threads_, env_.local_world_size);
    if (!device_.is_cuda()) warn_about_lowp_gemm(plan_, setup_.gemm_paths, setup_.probe);
    warn_about_fused_flash(plan_);
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

void Run::agree_(const std::string& stage, const std::string& error) {
  if (!dist_) return;
  const std::string other = dist_->agree(stage, error);
  if (error.empty() && !other.empty()) throw RunError(other);
}

void Run::open_files_() {
  std::string files_error;
  if (rank0_()) {
    // The hold created the folder when it was new (run_lock.h).
    const bool existed = !setup_.lock.created() && std::filesystem::exists(setup_.run_dir);
    try {
      writer_.emplace(setup_.run_dir, setup_.checkpoint.empty() ? -1 : setup_.start_step);
      writer_->write_config(setup_.config_json);
      nlohmann::json env = collect_env(device_, threads_);
      env["gemm_path"] = setup_.gemm_paths;
      // Which build of the fused kernels' CPU rows ran (kernels/cpu: avx2 | avx512).
      if (plan_.cfg.compile == CompilePath::kFused && !device_.is_cuda()) {
        env["cpu_rows"] = kernels::cpu_rows_isa();
      }
      writer_->write_env(env);
      // A resume continues the curves: the earlier files keep only the steps up to the
      // checkpoint, this session writes a new one.
      if (setup_.start_step > 0) trim_event_files(setup_.run_dir, setup_.start_step);
      if (cfg_.tensorboard) {
        tb_ = std::make_unique<TensorBoardWriter>(setup_.run_dir);
        if (setup_.start_step == 0) {
          const double now = wall_time_now();
          tb_->text("config", 0, "```\n" + setup_.config_json.dump(2) + "\n```", now);
          tb_->text("env", 0, "```\n" + env.dump(2) + "\n```", now);
          tb_->hparams_start(setup_.config_json, now);
        }
        tb_->flush();
      }
    } catch (const RunError& e) {
      tb_.reset();
      writer_.reset();
      std::error_code ec;
      if (!existed) std::filesystem::remove_all(setup_.run_dir, ec);
      files_error = e.what();
    }
  }
  agree_("files", files_error);
  if (!files_error.empty()) throw RunError(files_error);
  if (writer_) set_fatal_hook([this](const std::string& error) { record_fatal_(error); });
  elapsed_before_ = writer_ ? writer_->elapsed_before() : 0.0;
  log_info(
      "run folder " + setup_.run_dir + ": " + name_of(plan_.cfg.model) + " model, " +
      std::to_string(setup_.params) + " parameters, " + name_of(plan_.cfg.dtype) + " on " +
      setup_.device_name + ", " + std::to_string(threads_) + " threads" +
      (dist_ ? " x " + std::to_string(world_()) + " processes (" + dist_->backend() + ")" : "") +
      ", " + setup_.backend + "; corpus " + setup_.corpus.source() + " (" +
      std::to_string(setup_.corpus.size()) + " bytes)");
}

void Run::prepare_data_() {
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
  valid_ =
      rank_share(validation_batches(setup_.split, cfg_.seq_len, global_batch_(), cfg_.eval_batches),
                 env_.rank, world_());
  progress_ = std::make_unique<Progress>(cfg_.steps, rank0_());
  energy_ = EnergyCounter::open(gpu_uuid(device_));
}

nlohmann::json Run::summary_(const SampleSummary& stats) const {
  const double seq_s = stats.count ? global_batch_() * 1e3 / stats.median : NAN;
  const PeakFlops& peak = setup_.peak;
  const LossScaler& scaler = setup_.trainer->scaler();
  // The fatal path reads the clock without the device (a faulted GPU may never answer); before
  // the loop started, the session has no seconds yet.
  const double now = synchronized_now_s(fatal_ ? c10::Device(c10::DeviceType::CPU) : device_);
  const double session_s = run_start_ > 0 ? now - run_start_ : 0.0;
  const auto or_null = [](bool present, const nlohmann::json& v) {
    return present ? v : nlohmann::json(nullptr);
  };
  const int64_t start = setup_.start_step;
  const bool script = plan_.cfg.compile == CompilePath::kTorchScript;
  nlohmann::json summary = {
      {"status", name_of(status_)},
      {"params", setup_.params},
      {"steps_done", step_},
      {"resumed_from_step", or_null(start > 0, start)},
      {"steps_timed", stats.count},
      {"step_time_ms", or_null(stats.count > 0,
                               {{"median", stats.median}, {"min", stats.min}, {"max", stats.max}})},
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
      // Where the probe's figures came from: this machine's cache (hit) or this run's own
      // measurement (stored for later runs unless disturbed); null where no probe ran.
      {"probe_cache", setup_.probe_cache},
      {"gemm_path", setup_.gemm_paths.at("model_gemms")},
      {"gemm_route", setup_.gemm_route},  // the probe's rates, the route chosen and why; or null
      {"noise", speed_.noise},
      {"peak_memory_bytes", peak_memory_bytes(device_)},
      // This process's GPU over its timed steps (NVML; null where not read, energy_source says
      // why): joules, and this process's tokens per joule.
      {"energy_joules", or_null(stats.count > 0 && std::isfinite(timed_joules_), timed_joules_)},
      {"tokens_per_joule",
       or_null(stats.count > 0 && std::isfinite(timed_joules_) && timed_joules_ > 0,
               static_cast<double>(stats.count * cfg_.batch_size * cfg_.seq_len) / timed_joules_)},
      {"energy_source", energy_.source()},
      {"warmup_seconds", warmup_s_},
      // null for eager runs: nothing was compiled (0.0 would read as a compiler that took
      // no time)
      {"compile_seconds", or_null(script, compile_s_)},
      {"compile_backend", setup_.backend},
      {"sdpa_backend_used", setup_.config_json.at("sdpa_backend_used")},
      {"fused_groups", or_null(script, script_fusion_groups_)},
      {"session", {{"first_step", start + 1}, {"last_step", step_}, {"seconds", session_s}}},
      {"total_seconds", elapsed_before_ + session_s},
      // Both over the timed steps of the last window that had any (final_train_steps of them):
      // nats, and bits per byte beside final_valid_bpb in one unit.
      {"final_train_loss", final_timed_loss_},
      {"final_train_bpb", final_timed_loss_ / std::log(2.0)},
      {"final_train_steps", final_timed_steps_},
      {"final_valid_loss", valid_loss_},
      {"final_valid_bpb", valid_loss_ / std::log(2.0)},
      {"loss_scale", or_null(scaler.enabled(), scaler.enabled() ? scaler.scale() : 0.0)},
      {"skipped_steps", scaler.skipped_steps()},
      {"stop_signal", or_null(run_signal_ != 0, run_signal_)},
      {"profile", profile_},  // --profile_steps: time by op category, or null
      {"manifest", fairness_manifest(setup_, threads_, first_loss_)},
  };
  summary.update(target_json_());
  return summary;
}

void Run::record_fatal_(const std::string& error) {
  fatal_ = true;
  fail_(error);
  nlohmann::json summary = summary_(summarize(timed_ms_));
  summary["error_message"] = error_;
  writer_->write_summary(summary);
}

RunResult Run::finish_() {
  const SampleSummary stats = summarize(timed_ms_);
  speed_ =
      judge_speed(stats, timed_ms_, interference_, setup_.peak,
                  global_batch_() * cfg_.seq_len * setup_.flops_per_token / world_(), rank0_());
  nlohmann::json summary = summary_(stats);
  if (dist_ && error_.empty()) {
    try {
      summary.update(dist_summary(*dist_, *sync_, setup_.trainer->model(), stats, comm_ms_));
    } catch (const CollectiveError& e) {
      fail_(dist_->explain_failure(e.what(), /*collective=*/true));
      summary["status"] = name_of(status_);
    }
  }
  if (rank0_() && !cfg_.save_model.empty() && status_ == RunStatus::kCompleted) {
    try {
      save_torchscript(setup_.trainer->model(), cfg_.save_model);
      log_info("saved the trained network as TorchScript: " + cfg_.save_model);
    } catch (const std::exception& e) {  // recorded like any failure after training started
      fail_(error_text(e));
      summary["status"] = name_of(status_);
    }
  }
  if (!error_.empty()) summary["error_message"] = error_;
  tensorboard_finish_(summary);
  if (writer_) writer_->write_summary(summary);
  if (!error_.empty()) {
    throw RunError(error_ + (writer_ ? " (recorded in " + setup_.run_dir + "/summary.json)" : ""));
  }
  return {setup_.run_dir, status_, run_signal_, summary};
}

}  // namespace run_detail

RunResult run_benchmark(const RunPlan& plan) { return run_detail::Run(plan).go(); }

RunResult run_benchmark(const RunConfig& cfg, const DistEnv& env) {
  return run_benchmark(make_plan(cfg, env));
}

}  // namespace trainbench
