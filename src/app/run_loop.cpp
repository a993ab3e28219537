// The step loop of a run (run_state.h): each step as named phases (before, the step itself,
// accounting, progress, divergence, the agreed stop, window and checkpoint, evaluation) over
// one counter, step_ (session_steps_() is derived from it).
#include "run_state.h"

#include <cstdio>

namespace trainbench::run_detail {

void Run::train_() {
  run_start_ = synchronized_now_s(device_);
  try {
    while (step_ < cfg_.steps && one_step_()) {
    }
    if (status_ == RunStatus::kCompleted && !target_.stopped) evaluate_();
  } catch (const CollectiveError& e) {
    fail_(dist_->explain_failure(e.what(), /*collective=*/true));
  } catch (const std::exception& e) {
    fail_(dist_ ? dist_->explain_failure(error_text(e), /*collective=*/false) : error_text(e));
  }
  progress_->finish();
}

void Run::fail_(const std::string& error) {
  status_ = RunStatus::kFailed;
  error_ = error;
}

bool Run::one_step_() {
  before_step_();
  const StepResult r = run_step_();
  ++step_;
  account_(r);
  record_initial_loss_(r);
  show_progress_(r);
  if (diverged_(r.loss)) return false;
  const bool stopping = agree_on_stop_();
  end_window_and_checkpoint_(r, stopping);
  if (stopping) {
    status_ = RunStatus::kInterrupted;
    progress_->finish();
    log_warn("stopped by signal " + std::to_string(run_signal_) + " after step " +
             std::to_string(step_) + "; writing the results so far" +
             (cfg_.checkpoint_every >= 0
                  ? " and a checkpoint: bench --resume " + setup_.run_dir + " continues it"
                  : " (no checkpoint: --checkpoint_every -1)"));
    return false;
  }
  if (cfg_.eval_every > 0 && step_ % cfg_.eval_every == 0 && step_ < cfg_.steps) {
    evaluate_();
    if (target_.stopped) return false;  // --stop_at_target: the run ends at its target
  }
  return true;
}

void Run::before_step_() {
  if (cfg_.fault_exit_step == step_ + 1) std::_Exit(3);  // testing aid: a crashing process
  if (cfg_.fault_escape_step == step_ + 1) {
    // Testing aid: a throwing deleter, as oneDNN's scratch memory once had under a CPU
    // allocator without raw_deleter: the exception leaves a noexcept destructor, so only
    // the fatal handler (core/errors.h) sees it.
    static float cell = 0;
    (void)torch::from_blob(&cell, {1}, [](void*) {
      throw RunError("a tensor's deleter threw (the --fault_escape_step testing aid)");
    });
  }
  // Dropout differs per rank. Rank 0 keeps the single-process stream (checkpointed); the
  // others reseed from (seed, rank, step) each step, so a resume continues them exactly.
  if (dist_ && !rank0_()) torch::manual_seed(rank_step_seed(cfg_.seed, env_.rank, step_));
  if (cfg_.profile_steps > 0 && session_steps_() == cfg_.warmup_steps && rank0_()) {
    profiler_ = std::make_unique<StepProfiler>();
    profiler_->start(device_.is_cuda());
  }
}

Run::StepResult Run::run_step_() {
  StepResult r;
  const CpuSample cpu_before = cpu_sample();
  const double joules_before = energy_.joules();  // NaN without a counter
  r.t0 = synchronized_now_s(device_);
  torch::Tensor batch;
  {
    RECORD_FUNCTION("trainbench::data", std::vector<c10::IValue>());
    batch = loader_->next();
  }
  r.loss = setup_.trainer->step(batch).item<double>();  // synchronizes on CUDA
  r.t1 = synchronized_now_s(device_);
  r.joules = energy_.joules() - joules_before;
  r.interference = interference(cpu_before, cpu_sample());
  return r;
}

void Run::account_(const StepResult& r) {
  target_.train_s += r.seconds();  // every step, warm-up included: the time to target's clock
  const int64_t n = session_steps_();
  const StepKind kind = kind_of_(n);
  if (plan_.cfg.compile == CompilePath::kTorchScript) {
    if (n <= kProfilingSteps) compile_s_ += r.seconds();
    if (n == cfg_.warmup_steps) script_fusion_groups_ = last_graph_fusion_groups();
  }
  if (kind == StepKind::kWarmup) warmup_s_ += r.seconds();
  if (kind == StepKind::kProfiled) {  // the profiler's overhead stays out of the timing
    profile_s_ += r.seconds();
    if (n == cfg_.warmup_steps + cfg_.profile_steps && profiler_) {
      profile_ = profiler_->stop(cfg_.profile_steps, profile_s_,
                                 run_file(setup_.run_dir, RunFile::kTrace));
      profiler_.reset();
      profile_["bounds"] = profile_bounds(setup_, profile_.at("ms_per_step"), device_);
      add_probe_rates(profile_, setup_);
    }
  }
  if (kind == StepKind::kTimed) {
    timed_ms_.push_back(r.seconds() * 1e3);
    interference_.push_back(r.interference);
    timed_joules_ += r.joules;
    if (sync_) comm_ms_.push_back(sync_->last_wait_s() * 1e3);
    win_.timed_loss_sum += r.loss;
    ++win_.timed_steps;
  }
  win_.loss_sum += r.loss;
  win_.losses.push_back(r.loss);
  win_.step_s.push_back(r.seconds());
  if (tb_) tb_->scalar(tb_tag::kTrainBpbStep, step_, r.loss / std::log(2.0), wall_time_now());
  win_.seconds += r.seconds();
  win_.has_warmup |= kind == StepKind::kWarmup;
  ++win_.steps;
}

void Run::show_progress_(const StepResult& r) {
  const int64_t n = session_steps_();
  const double tok_s = global_batch_() * cfg_.seq_len * win_.steps / win_.seconds;
  progress_->update(step_, r.loss, tok_s, r.seconds());
  if (n <= cfg_.warmup_steps + kEarlyLines && step_ % cfg_.log_every != 0 && step_ != cfg_.steps) {
    progress_->early_step(step_, r.loss, r.seconds(), kind_of_(n) == StepKind::kWarmup);
  }
  if (n == cfg_.warmup_steps + 1 && step_ < cfg_.steps) {
    progress_->projection(cfg_.steps - step_, r.seconds(), !device_.is_cuda());
  }
}

void Run::record_initial_loss_(const StepResult& r) {
  if (step_ != 1) return;  // a resumed run has its record already
  first_loss_ = r.loss;
  metric_({{"step", 0},
           {"initial_loss", r.loss},
           {"initial_bpb", r.loss / std::log(2.0)},
           {"elapsed_s", 0.0}});
}

bool Run::diverged_(double loss) {
  if (std::isfinite(loss)) return false;
  status_ = RunStatus::kDiverged;
  progress_->finish();
  log_error("loss is " + std::to_string(loss) + " at step " + std::to_string(step_) +
            "; the run diverged (try a lower --lr, or float32/bfloat16)");
  return true;
}

bool Run::agree_on_stop_() {
  const bool stopping = sync_ ? sync_->stop_requested() : stop_signal() != 0;
  if (stopping) {
    torch::Tensor sig = torch::full({1}, static_cast<int64_t>(stop_signal()), torch::kInt64);
    if (dist_) dist_->allreduce({sig}, ReduceOp::kMax);  // the ranks agreed to stop together
    run_signal_ = static_cast<int>(sig.item<int64_t>());
  }
  return stopping;
}

void Run::end_window_and_checkpoint_(const StepResult& r, bool stopping) {
  // Every --checkpoint_every steps, and at a stop by a signal unless --checkpoint_every -1, so
  // an interrupted run can be resumed.
  const bool checkpoint_now = (cfg_.checkpoint_every > 0 && step_ % cfg_.checkpoint_every == 0) ||
                              (stopping && cfg_.checkpoint_every >= 0);
  if (step_ % cfg_.log_every == 0 || step_ == cfg_.steps || checkpoint_now || stopping) {
    flush_window_(r.t1);
  }
  if (checkpoint_now && rank0_()) {
    save_checkpoint(setup_.run_dir, step_, *setup_.trainer, cfg_.keep_checkpoints);
  }
}

void Run::evaluate_() {
  const double t0 = synchronized_now_s(device_);
  const Trainer::EvalSums sums = setup_.trainer->evaluate_sums(setup_.corpus, valid_);
  torch::Tensor t =
      torch::tensor({sums.loss_sum, static_cast<double>(sums.count)}, torch::kFloat64);
  if (dist_) dist_->allreduce({t});
  valid_loss_ = t[0].item<double>() / t[1].item<double>();
  const double bpb = valid_loss_ / std::log(2.0);
  // train_s: the training seconds so far (the time to target's clock), the x of a bpb-against-
  // time curve (scripts/plot_runs.py).
  metric_({{"step", step_},
           {"valid_loss", valid_loss_},
           {"valid_bpb", bpb},
           {"train_s", target_.train_s}});
  if (tb_) {
    const double now = wall_time_now();
    tb_->scalar(tb_tag::kValidBpb, step_, bpb, now);
    tb_->scalar(tb_tag::kValidBpbByTrainMs, std::llround(target_.train_s * 1e3), bpb, now);
    tb_->flush();
  }
  progress_->message("eval at step " + std::to_string(step_) + ": valid loss " +
                     std::to_string(valid_loss_) + " nats/byte, " + std::to_string(bpb) +
                     " bits/byte");
  target_.eval_s += synchronized_now_s(device_) - t0;
  if (cfg_.target_bpb > 0 && target_.step == 0 && bpb <= cfg_.target_bpb) {
    target_.step = step_;
    target_.train_s_at = target_.train_s;
    target_.eval_s_at = target_.eval_s;
    target_.stopped = cfg_.stop_at_target;
    progress_->message("target " + std::to_string(cfg_.target_bpb) + " bits/byte reached at step " +
                       std::to_string(step_) + " after " + std::to_string(target_.train_s) +
                       " s of training" + (target_.stopped ? ": the run ends here" : ""));
  }
}

nlohmann::json Run::target_json_() const {
  const bool set = cfg_.target_bpb > 0, reached = target_.step > 0;
  const auto at = [&](const nlohmann::json& v) { return reached ? v : nlohmann::json(); };
  return {{"target_bpb", set ? nlohmann::json(cfg_.target_bpb) : nlohmann::json()},
          {"target_reached", set ? nlohmann::json(reached) : nlohmann::json()},
          {"steps_to_target", at(target_.step)},
          {"tokens_to_target", at(target_.step * global_batch_() * cfg_.seq_len)},
          {"time_to_target_s", at(target_.train_s_at)},
          {"eval_seconds_to_target", at(target_.eval_s_at)},
          {"stopped_at_target", target_.stopped}};
}

void Run::flush_window_(double now) {
  final_train_loss_ = win_.loss_sum / win_.steps;
  if (win_.timed_steps > 0) {
    final_timed_loss_ = win_.timed_loss_sum / win_.timed_steps;
    final_timed_steps_ = win_.timed_steps;
  }
  const double seq_s = global_batch_() * win_.steps / win_.seconds;
  metric_({{"step", step_},
           {"loss", final_train_loss_},
           {"sequences_per_s", seq_s},
           {"tokens_per_s", seq_s * cfg_.seq_len},
           {"elapsed_s", elapsed_before_ + now - run_start_},
           {"window_steps", win_.steps},
           {"includes_warmup", win_.has_warmup},
           // Every step's loss, so that a short run's curve has all of its points.
           {"step_losses", win_.losses}});
  progress_->window(step_, final_train_loss_, seq_s, seq_s * cfg_.seq_len,
                    win_.seconds / static_cast<double>(win_.steps));
  tensorboard_window_(seq_s);
  win_ = Window{};
}

void Run::tensorboard_window_(double seq_s) {
  if (!tb_) return;
  const double now = wall_time_now(), tokens_s = seq_s * cfg_.seq_len;
  tb_->scalar(tb_tag::kTrainBpb, step_, final_train_loss_ / std::log(2.0), now);
  tb_->scalar(tb_tag::kSeqPerS, step_, seq_s, now);
  tb_->scalar(tb_tag::kTokensPerS, step_, tokens_s, now);
  tb_->scalar(tb_tag::kStepMs, step_, summarize(win_.step_s).median * 1e3, now);
  if (setup_.peak.flops_per_s > 0) {  // per device, as summary.json's mfu
    tb_->scalar(tb_tag::kMfuPercent, step_,
                100 * tokens_s * setup_.flops_per_token / world_() / setup_.peak.flops_per_s, now);
  }
  tb_->scalar(tb_tag::kPeakMemoryMb, step_,
              static_cast<double>(peak_memory_bytes(device_)) / (1 << 20), now);
  tb_->flush();
}

void Run::tensorboard_finish_(const nlohmann::json& summary) {
  if (!tb_) return;
  const double now = wall_time_now();
  const auto number = [&](const char* key) {
    const nlohmann::json v = summary.value(key, nlohmann::json());
    return v.is_number() && std::isfinite(v.get<double>()) ? v.get<double>() : NAN;
  };
  try {
    for (const auto& [tag, key] : {std::pair{tb_tag::kFinalSeqPerS, "sequences_per_s"},
                                   {tb_tag::kFinalTokensPerS, "tokens_per_s"},
                                   {tb_tag::kFinalValidBpb, "final_valid_bpb"}}) {
      if (std::isfinite(number(key))) tb_->scalar(tag, step_, number(key), now);
    }
    tb_->scalar(tb_tag::kFinalCompleted, step_, status_ == RunStatus::kCompleted ? 1.0 : 0.0, now);
    const auto cell = [&](const char* key, int digits) {  // "-" where the run has no figure
      char buf[32];
      if (!std::isfinite(number(key))) return std::string("-");
      std::snprintf(buf, sizeof(buf), "%.*f", digits, number(key));
      return std::string(buf);
    };
    tb_->text("whole_run", step_,
              "| status | steps | seq/s (median step) | tokens/s | valid bpb "
              "|\n|---|---|---|---|---|\n| " +
                  std::string(name_of(status_)) + " | " + std::to_string(step_) + " | " +
                  cell("sequences_per_s", 2) + " | " + cell("tokens_per_s", 0) + " | " +
                  cell("final_valid_bpb", 4) + " |",
              now);
    tb_->hparams_end(name_of(status_), step_, now);
    tb_->flush();
  } catch (const std::exception& e) {
    log_warn(std::string("TensorBoard records not written: ") + e.what());
  }
}

}  // namespace trainbench::run_detail
