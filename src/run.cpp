// run_benchmark: sets up threads, data, model and the run folder, then runs the step loop with
// warm-up, timed windows and evaluation, and writes the result files.
#include <sys/resource.h>

#include <ATen/Parallel.h>
#include <cmath>
#include <filesystem>
#include <optional>

#include "trainbench/batch_loader.h"
#include "trainbench/checkpoint.h"
#include "trainbench/env_info.h"
#include "trainbench/flops.h"
#include "trainbench/log.h"
#include "trainbench/progress.h"
#include "trainbench/results.h"
#include "trainbench/scripted_model.h"
#include "trainbench/sdpa_backend.h"
#include "trainbench/signals.h"
#include "trainbench/timing.h"
#include "trainbench/trainer.h"

#ifdef TB_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace trainbench {
namespace {

int64_t peak_memory_bytes_(const torch::Device& device) {
#ifdef TB_WITH_CUDA
  if (device.is_cuda()) {
    const auto stats =
        c10::cuda::CUDACachingAllocator::getDeviceStats(device.has_index() ? device.index() : 0);
    return stats.allocated_bytes[0].peak;  // aggregate pool
  }
#endif
  (void)device;
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;  // peak RSS of the process
}

void warn_about_setup_(int threads) {
  if (openblas_config().empty()) {
    log_warn(
        "BLAS: OpenBLAS not found; float32 matmuls use the slow reference BLAS "
        "(install libopenblas0-pthread: scripts/install_deps.sh)");
  }
  if (build_type() != "Release") {
    log_warn("***WARNING*** bench was built as " + build_type() +
             "; timings are not representative (configure with -DCMAKE_BUILD_TYPE=Release)");
  }
  if (threads < available_cores()) {
    log_warn("using " + std::to_string(threads) + " of " + std::to_string(available_cores()) +
             " available cores (--threads)");
  }
}

// Training state reported per window of log_every steps.
struct Window {
  double loss_sum = 0, seconds = 0;
  int64_t steps = 0;
  bool has_warmup = false;
};

}  // namespace

RunResult run_benchmark(const RunConfig& cfg) {
  const torch::Device device(resolved_device(cfg));
  const int threads = cfg.threads > 0 ? static_cast<int>(cfg.threads) : available_cores();
  at::set_num_threads(threads);
  openblas_set_threads(threads);
  // float32 on CUDA may use TF32 tensor cores, as in the reference (recorded in env.json).
  if (device.is_cuda()) at::globalContext().setAllowTF32CuBLAS(true);
  // A forced attention backend that cannot run is a usage error, found before anything starts.
  const std::string sdpa_used = resolve_sdpa_backend(cfg, device);

  // Data first: a bad corpus is a usage error and must leave nothing on disk.
  if (cfg.data.empty()) log_info("data: no --data given, using the embedded generated corpus");
  const ByteCorpus corpus = cfg.data.empty() ? embedded_corpus() : open_corpus(cfg.data);
  const int64_t valid_bytes = resolved_valid_bytes(cfg, corpus.size());
  const DataSplit split =
      split_corpus(corpus.size(), valid_bytes, cfg.seq_len, cfg.batch_size, corpus.source());
  const std::string run_dir = cfg.resume.empty() ? run_dir_name(cfg) : cfg.resume;
  if (cfg.resume.empty()) check_run_dir(run_dir, cfg.overwrite);
  const std::string checkpoint = cfg.resume.empty() ? "" : latest_checkpoint(run_dir);
  if (!cfg.resume.empty() && checkpoint.empty()) {
    throw ConfigError("--resume: '" + run_dir +
                      "' holds no checkpoint; it must come from a run with --checkpoint_every");
  }
  warn_about_setup_(threads);

  const std::string backend = cfg.compile ? configure_script_executor(device) : "eager";
  torch::manual_seed(static_cast<uint64_t>(cfg.seed));
  const double build_start = synchronized_now_s(device);
  Trainer trainer(cfg, device);
  // Compiling = defining the script (here) + the executor's profiling steps (below).
  double compile_s = cfg.compile ? synchronized_now_s(device) - build_start : 0.0;
  int64_t fused_groups = 0;
  const int64_t params = count_parameters(trainer.model());
  const std::string dev_name = device_name(device);
  const PeakFlops peak = resolve_peak_flops(cfg, device, dev_name);
  const double flops_tok = flops_per_token(cfg);

  RunConfig resolved = cfg;
  resolved.device = device.str();
  resolved.threads = threads;
  resolved.valid_bytes = valid_bytes;
  resolved.dropout_impl = resolved_dropout_impl(cfg);
  nlohmann::json config_json = resolved;
  config_json["run_dir"] = run_dir;
  config_json["corpus_source"] = corpus.source();
  config_json["corpus_bytes"] = corpus.size();
  config_json["train_bytes"] = split.train_end;
  config_json["params"] = params;
  config_json["sdpa_backend_used"] =
      sdpa_used.empty() ? nlohmann::json(nullptr) : nlohmann::json(sdpa_used);
  int64_t start_step = 0;
  if (!checkpoint.empty()) {
    const auto differ =
        resume_config_differences(read_json_file(run_dir + "/config.json"), config_json);
    if (!differ.empty()) {
      std::string keys;
      for (const auto& k : differ) keys += (keys.empty() ? "--" : ", --") + k;
      throw ConfigError("--resume: these flags differ from the run in '" + run_dir + "': " + keys +
                        "; resume with the run's own values (see its config.json)");
    }
    start_step = load_checkpoint(checkpoint, trainer);
    if (start_step >= cfg.steps) {
      throw ConfigError("--steps: " + std::to_string(cfg.steps) +
                        " is not past the checkpoint at step " + std::to_string(start_step) +
                        "; allowed: > " + std::to_string(start_step));
    }
    config_json["resumed_from_step"] = start_step;
    log_info("resuming " + run_dir + " from " + checkpoint);
  }
  // A folder that cannot be written (or a full disk) is found here, before any training step;
  // a run folder this run created is then removed again, so nothing partial is left.
  const bool existed = std::filesystem::exists(run_dir);
  std::optional<ResultWriter> writer_slot;
  try {
    writer_slot.emplace(run_dir, checkpoint.empty() ? -1 : start_step);
    writer_slot->write_config(config_json);
    writer_slot->write_env(collect_env(device, threads));
  } catch (const RunError&) {
    writer_slot.reset();
    std::error_code ec;
    if (!existed) std::filesystem::remove_all(run_dir, ec);
    throw;
  }
  ResultWriter& writer = *writer_slot;
  log_info("run folder " + run_dir + ": " + cfg.model + " model, " + std::to_string(params) +
           " parameters, " + cfg.dtype + " on " + dev_name + ", " + std::to_string(threads) +
           " threads, " + backend + "; corpus " + corpus.source() + " (" +
           std::to_string(corpus.size()) + " bytes)");

  SamplerOptions so;
  so.train_end = split.train_end;
  so.seq_len = cfg.seq_len;
  so.batch_size = cfg.batch_size;
  so.seed = static_cast<uint64_t>(cfg.seed);
  EpochSampler sampler(so);
  for (int64_t i = 0; i < start_step; ++i) sampler.next_batch();  // the batches already trained
  BatchLoader loader(corpus, std::move(sampler), device.is_cuda());
  const auto valid = validation_batches(split, cfg.seq_len, cfg.batch_size, cfg.eval_batches);

  Progress progress(cfg.steps);
  std::vector<double> timed_ms;
  Window win;
  double warmup_s = 0, final_train_loss = NAN, valid_loss = NAN;
  const StopSignalGuard stop_guard;
  const double run_start = synchronized_now_s(device);
  std::string status = "completed";
  int64_t step = start_step;
  auto run_eval = [&] {
    valid_loss = trainer.evaluate(corpus, valid);
    writer.append_metric(
        {{"step", step}, {"valid_loss", valid_loss}, {"valid_bpb", valid_loss / std::log(2.0)}});
    progress.message("eval at step " + std::to_string(step) + ": valid loss " +
                     std::to_string(valid_loss) + " nats/byte, " +
                     std::to_string(valid_loss / std::log(2.0)) + " bits/byte");
  };
  auto flush_window = [&](double now) {
    final_train_loss = win.loss_sum / win.steps;
    const double seq_s = cfg.batch_size * win.steps / win.seconds;
    writer.append_metric({{"step", step},
                          {"loss", final_train_loss},
                          {"sequences_per_s", seq_s},
                          {"tokens_per_s", seq_s * cfg.seq_len},
                          {"elapsed_s", now - run_start},
                          {"window_steps", win.steps},
                          {"includes_warmup", win.has_warmup}});
    progress.window(step, final_train_loss, seq_s, seq_s * cfg.seq_len);
    win = Window{};
  };
  std::string error;  // a failure after training started: recorded as status "failed"
  try {
    while (step < cfg.steps) {
      const double t0 = synchronized_now_s(device);
      const torch::Tensor loss = trainer.step(loader.next());
      const double loss_value = loss.item<double>();  // synchronizes on CUDA
      const double t1 = synchronized_now_s(device);
      ++step;
      const bool warm = step - start_step <= cfg.warmup_steps;
      if (cfg.compile && step - start_step <= kProfilingSteps) compile_s += t1 - t0;
      if (cfg.compile && step - start_step == cfg.warmup_steps) {
        fused_groups = last_graph_fused_groups();
      }
      if (warm) {
        warmup_s += t1 - t0;
      } else {
        timed_ms.push_back((t1 - t0) * 1e3);
      }
      win.loss_sum += loss_value;
      win.seconds += t1 - t0;
      win.has_warmup |= warm;
      ++win.steps;
      const double tok_s = cfg.batch_size * cfg.seq_len * win.steps / win.seconds;
      progress.update(step, loss_value, tok_s, (cfg.steps - step) * (t1 - t0));
      if (!std::isfinite(loss_value)) {
        status = "diverged";
        progress.finish();
        log_error("loss is " + std::to_string(loss_value) + " at step " + std::to_string(step) +
                  "; the run diverged (try a lower --lr, or float32/bfloat16)");
        break;
      }
      const bool stopping = stop_signal() != 0;
      const bool checkpoint_now =
          cfg.checkpoint_every > 0 && (step % cfg.checkpoint_every == 0 || stopping);
      // A window also ends where a checkpoint or a stop falls, so a resumed run logs every step.
      if (step % cfg.log_every == 0 || step == cfg.steps || checkpoint_now || stopping) {
        flush_window(t1);
      }
      if (checkpoint_now) save_checkpoint(run_dir, step, trainer, cfg.keep_checkpoints);
      if (stopping) {
        status = "interrupted";
        progress.finish();
        log_warn("stopped by signal " + std::to_string(stop_signal()) + " after step " +
                 std::to_string(step) + "; writing the results so far");
        break;
      }
      if (cfg.eval_every > 0 && step % cfg.eval_every == 0 && step < cfg.steps) run_eval();
    }
    if (status == "completed") run_eval();
  } catch (const std::exception& e) {
    status = "failed";
    error = e.what();
    progress.finish();
  }
  progress.finish();

  const StepStats stats = step_stats(timed_ms);
  const double seq_s = stats.count ? cfg.batch_size * 1e3 / stats.median_ms : NAN;
  nlohmann::json summary;
  summary["status"] = status;
  summary["params"] = params;
  summary["steps_done"] = step;
  summary["resumed_from_step"] = start_step ? nlohmann::json(start_step) : nlohmann::json(nullptr);
  summary["steps_timed"] = stats.count;
  summary["step_time_ms"] = {
      {"median", stats.median_ms}, {"min", stats.min_ms}, {"max", stats.max_ms}};
  summary["step_time_ms_samples"] = timed_ms;
  summary["sequences_per_s"] = seq_s;
  summary["tokens_per_s"] = seq_s * cfg.seq_len;
  summary["flops_per_token"] = flops_tok;
  summary["mfu"] = peak.flops_per_s > 0
                       ? nlohmann::json(seq_s * cfg.seq_len * flops_tok / peak.flops_per_s)
                       : nlohmann::json(nullptr);
  summary["peak_flops"] = peak.flops_per_s > 0 ? nlohmann::json(peak.flops_per_s) : nullptr;
  summary["peak_flops_source"] = peak.source;
  summary["peak_memory_bytes"] = peak_memory_bytes_(device);
  summary["warmup_seconds"] = warmup_s;
  summary["compile_seconds"] = compile_s;
  summary["compile_backend"] = backend;
  summary["sdpa_backend_used"] = config_json["sdpa_backend_used"];
  summary["fused_groups"] = cfg.compile ? nlohmann::json(fused_groups) : nlohmann::json(nullptr);
  summary["total_seconds"] = synchronized_now_s(device) - run_start;
  summary["final_train_loss"] = final_train_loss;
  summary["final_valid_loss"] = valid_loss;
  summary["final_valid_bpb"] = valid_loss / std::log(2.0);
  summary["loss_scale"] = trainer.scaler().enabled() ? nlohmann::json(trainer.scaler().scale())
                                                     : nlohmann::json(nullptr);
  summary["skipped_steps"] = trainer.scaler().skipped_steps();
  summary["stop_signal"] = stop_signal() ? nlohmann::json(stop_signal()) : nlohmann::json(nullptr);
  if (!cfg.save_model.empty() && status == "completed") {
    save_torchscript(trainer.model(), cfg.save_model);
    log_info("saved the trained network as TorchScript: " + cfg.save_model);
  }
  if (!error.empty()) summary["error_message"] = error;
  writer.write_summary(summary);
  if (!error.empty()) throw RunError(error + " (recorded in " + run_dir + "/summary.json)");
  return {run_dir, status, stop_signal(), summary};
}

}  // namespace trainbench
