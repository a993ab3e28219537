// run_benchmark: sets up threads, data, model and the run folder, then runs the step loop with
// warm-up, timed windows and evaluation, and writes the result files.
#include <sys/resource.h>

#include <ATen/Parallel.h>
#include <cmath>
#include <filesystem>
#include <optional>

#include "trainbench/app/run.h"
#include "trainbench/app/run_setup.h"
#include "trainbench/core/log.h"
#include "trainbench/core/signals.h"
#include "trainbench/core/timing.h"
#include "trainbench/data/batch_loader.h"
#include "trainbench/dist/dist.h"
#include "trainbench/dist/grad_sync.h"
#include "trainbench/model/flops.h"
#include "trainbench/model/scripted_model.h"
#include "trainbench/model/sdpa_backend.h"
#include "trainbench/report/env_info.h"
#include "trainbench/report/progress.h"
#include "trainbench/report/results.h"
#include "trainbench/train/checkpoint.h"
#include "trainbench/train/trainer.h"

#ifdef TB_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace trainbench {
namespace {

// Timed steps after the warm-up that still get a log line each, before the windows take over.
constexpr int64_t kEarlyLines = 3;

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

void warn_about_setup_(int threads, int local_world) {
  if (build_type() != "Release") {
    log_warn("***WARNING*** bench was built as " + build_type() +
             "; timings are not representative (configure with -DCMAKE_BUILD_TYPE=Release)");
  }
  if (threads * local_world < available_cores()) {
    log_warn("using " + std::to_string(threads * local_world) + " of " +
             std::to_string(available_cores()) + " available cores (--threads" +
             (local_world > 1 ? " per process" : "") + ")");
  }
}

// Training state reported per window of log_every steps.
struct Window {
  double loss_sum = 0, seconds = 0;
  int64_t steps = 0;
  bool has_warmup = false;
};

uint64_t rank_step_seed_(int64_t seed, int rank, int64_t step) {
  uint64_t z = static_cast<uint64_t>(seed) * 0x9e3779b97f4a7c15ULL ^
               static_cast<uint64_t>(rank) << 40 ^ static_cast<uint64_t>(step);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;  // splitmix64 finalizer
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The multi-process part of summary.json: per-rank step and communication times, gathered
// with one all-reduce, and a check that every replica holds the same parameters.
nlohmann::json dist_summary_(DistContext& dist, const GradSync& sync, LanguageModel& model,
                             const StepStats& stats, const std::vector<double>& comm_ms) {
  const int world = dist.world_size();
  const StepStats comm = step_stats(comm_ms);
  double comm_total_s = 0;
  for (double ms : comm_ms) comm_total_s += ms / 1e3;
  torch::Tensor per_rank = torch::zeros({world, 3}, torch::kFloat64);
  per_rank[dist.rank()][0] = stats.median_ms;
  per_rank[dist.rank()][1] = comm.median_ms;
  per_rank[dist.rank()][2] = comm_total_s;
  dist.allreduce({per_rank});
  const auto fp = static_cast<int64_t>(parameter_fingerprint(model.parameters()));
  torch::Tensor lo = torch::full({1}, fp, torch::kInt64), hi = lo.clone();
  dist.allreduce({lo}, ReduceOp::kMin);
  dist.allreduce({hi}, ReduceOp::kMax);
  nlohmann::json j;
  std::vector<double> step_ms, wait_ms, wait_s;
  for (int r = 0; r < world; ++r) {
    step_ms.push_back(per_rank[r][0].item<double>());
    wait_ms.push_back(per_rank[r][1].item<double>());
    wait_s.push_back(per_rank[r][2].item<double>());
  }
  j["per_rank_step_time_ms"] = step_ms;
  j["per_rank_communication_ms"] = wait_ms;
  j["per_rank_communication_seconds"] = wait_s;
  // Exposed communication: the wait for the all-reduces after backward (overlapped transfer
  // time is hidden in the backward pass and not counted).
  j["communication_ms"] = comm.median_ms;
  j["communication_share"] = stats.median_ms > 0 ? comm.median_ms / stats.median_ms : 0.0;
  j["grad_buckets"] = sync.num_buckets();
  j["replicas_identical"] = lo.item<int64_t>() == hi.item<int64_t>();
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(fp));
  j["param_fingerprint"] = hex;
  return j;
}

}  // namespace

RunResult run_benchmark(const RunConfig& cfg, const DistEnv& env) {
  const bool cuda = resolved_device(cfg) == "cuda";
  const torch::Device device =
      cuda && env.distributed() ? torch::Device(torch::kCUDA, static_cast<int8_t>(env.local_rank))
                                : torch::Device(resolved_device(cfg));
  // The processes of one machine share its cores; more threads than cores only slow a run.
  if (cfg.threads > available_cores()) {
    throw ConfigError("--threads: " + std::to_string(cfg.threads) + " is more than the " +
                      std::to_string(available_cores()) +
                      " cores available to this process; allowed: 0 (all of them) to " +
                      std::to_string(available_cores()));
  }
  const int threads = cfg.threads > 0 ? static_cast<int>(cfg.threads)
                                      : std::max(1, available_cores() / env.local_world_size);
  at::set_num_threads(threads);
  // float32 on CUDA may use TF32 tensor cores, as in the reference (recorded in env.json).
  if (device.is_cuda()) at::globalContext().setAllowTF32CuBLAS(true);
#ifdef TB_WITH_CUDA
  // Each rank's own GPU is the current one, for every stream and kernel it starts.
  if (device.is_cuda() && device.has_index()) c10::cuda::set_device(device.index());
#endif
  // A forced attention backend that cannot run is a usage error, found before anything starts.
  const std::string sdpa_used = resolve_sdpa_backend(cfg, device);

  // A multi-process run meets its peers first: a rank that never comes fails the run here.
  std::unique_ptr<DistContext> dist;
  if (env.distributed()) dist = std::make_unique<DistContext>(env, cfg, device);
  const bool rank0 = env.rank == 0;
  const int world = env.world_size;
  // Every rank learns whether the others' setup (or folder creation) went well, so that a bad
  // input on one rank stops all of them at once instead of leaving them waiting.
  auto agree = [&](const std::string& stage, const std::string& error) {
    if (!dist) return;
    const std::string other = dist->agree(stage, error);
    if (error.empty() && !other.empty()) throw RunError(other);
  };
  RunSetup setup;
  try {
    setup = prepare_run(cfg, device, threads, dist.get(), env.local_world_size);
  } catch (const std::exception& e) {
    agree("setup", error_text(e));
    throw;
  }
  agree("setup", "");
  setup.config_json["sdpa_backend_used"] =
      sdpa_used.empty() ? nlohmann::json(nullptr) : nlohmann::json(sdpa_used);
  if (rank0) warn_about_setup_(threads, env.local_world_size);
  Trainer& trainer = *setup.trainer;
  const ByteCorpus& corpus = setup.corpus;
  const std::string& run_dir = setup.run_dir;
  const int64_t start_step = setup.start_step;
  double compile_s = setup.compile_s;
  int64_t fused_groups = 0;
  // Replicas start from rank 0's parameters (before any file is written: a rank lost here
  // leaves nothing behind).
  std::unique_ptr<GradSync> sync;
  if (dist) {
    dist->broadcast_from_rank0(trainer.model().parameters());
    sync = std::make_unique<GradSync>(trainer.model().parameters(), *dist,
                                      static_cast<int64_t>(cfg.bucket_mb * (1 << 20)),
                                      cfg.dist_overlap == 1, [] { return stop_signal() != 0; });
    trainer.attach(sync.get());
  }

  // Rank 0 writes the run folder. A folder that cannot be written (or a full disk) is found
  // here, before any training step; a run folder this run created is then removed again.
  std::optional<ResultWriter> writer_slot;
  std::string files_error;
  if (rank0) {
    const bool existed = std::filesystem::exists(run_dir);
    try {
      writer_slot.emplace(run_dir, setup.checkpoint.empty() ? -1 : start_step);
      writer_slot->write_config(setup.config_json);
      writer_slot->write_env(collect_env(device, threads));
    } catch (const RunError& e) {
      writer_slot.reset();
      std::error_code ec;
      if (!existed) std::filesystem::remove_all(run_dir, ec);
      files_error = e.what();
    }
  }
  agree("files", files_error);
  if (!files_error.empty()) throw RunError(files_error);
  ResultWriter* writer = writer_slot ? &*writer_slot : nullptr;
  const double elapsed_before = writer ? writer->elapsed_before() : 0.0;
  log_info("run folder " + run_dir + ": " + cfg.model + " model, " + std::to_string(setup.params) +
           " parameters, " + cfg.dtype + " on " + setup.device_name + ", " +
           std::to_string(threads) + " threads" +
           (dist ? " x " + std::to_string(world) + " processes (" + dist->backend() + ")" : "") +
           ", " + setup.backend + "; corpus " + corpus.source() + " (" +
           std::to_string(corpus.size()) + " bytes)");

  SamplerOptions so;
  so.train_end = setup.split.train_end;
  so.seq_len = cfg.seq_len;
  so.batch_size = cfg.batch_size;
  so.seed = static_cast<uint64_t>(cfg.seed);
  so.world_size = world;
  so.rank = env.rank;
  EpochSampler sampler(so);
  for (int64_t i = 0; i < start_step; ++i) sampler.next_batch();  // the batches already trained
  BatchLoader loader(corpus, std::move(sampler), device.is_cuda());
  // Each rank evaluates its share of the same global validation batches; the sums are reduced.
  const auto valid = rank_share(
      validation_batches(setup.split, cfg.seq_len, cfg.batch_size * world, cfg.eval_batches),
      env.rank, world);
  const int64_t global_batch = cfg.batch_size * world;

  Progress progress(cfg.steps, rank0);
  std::vector<double> timed_ms, comm_ms;
  Window win;
  double warmup_s = 0, final_train_loss = NAN, valid_loss = NAN;
  const StopSignalGuard stop_guard;
  const double run_start = synchronized_now_s(device);
  std::string status = "completed";
  int run_signal = 0;  // the signal that stopped the run (the highest any rank received)
  int64_t step = start_step;
  auto metric = [&](const nlohmann::json& line) {
    if (writer) writer->append_metric(line);
  };
  auto run_eval = [&] {
    const Trainer::EvalSums sums = trainer.evaluate_sums(corpus, valid);
    torch::Tensor t =
        torch::tensor({sums.loss_sum, static_cast<double>(sums.count)}, torch::kFloat64);
    if (dist) dist->allreduce({t});
    valid_loss = t[0].item<double>() / t[1].item<double>();
    metric({{"step", step}, {"valid_loss", valid_loss}, {"valid_bpb", valid_loss / std::log(2.0)}});
    progress.message("eval at step " + std::to_string(step) + ": valid loss " +
                     std::to_string(valid_loss) + " nats/byte, " +
                     std::to_string(valid_loss / std::log(2.0)) + " bits/byte");
  };
  auto flush_window = [&](double now) {
    final_train_loss = win.loss_sum / win.steps;
    const double seq_s = global_batch * win.steps / win.seconds;
    metric({{"step", step},
            {"loss", final_train_loss},
            {"sequences_per_s", seq_s},
            {"tokens_per_s", seq_s * cfg.seq_len},
            {"elapsed_s", elapsed_before + now - run_start},
            {"window_steps", win.steps},
            {"includes_warmup", win.has_warmup}});
    progress.window(step, final_train_loss, seq_s, seq_s * cfg.seq_len);
    win = Window{};
  };
  std::string error;  // a failure after training started: recorded as status "failed"
  try {
    while (step < cfg.steps) {
      if (cfg.fault_exit_step == step + 1) std::_Exit(3);  // testing aid: a crashing process
      // Dropout differs per rank. Rank 0 keeps the single-process stream (checkpointed); the
      // others reseed from (seed, rank, step) each step, so a resume continues them exactly.
      if (dist && !rank0) torch::manual_seed(rank_step_seed_(cfg.seed, env.rank, step));
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
        if (sync) comm_ms.push_back(sync->last_wait_s() * 1e3);
      }
      win.loss_sum += loss_value;
      win.seconds += t1 - t0;
      win.has_warmup |= warm;
      ++win.steps;
      const double tok_s = global_batch * cfg.seq_len * win.steps / win.seconds;
      progress.update(step, loss_value, tok_s, (cfg.steps - step) * (t1 - t0));
      // Warm-up and the first timed steps get a line each (a slow run speaks from step 1), and
      // the first timed step a projection of the whole run.
      const int64_t done = step - start_step;
      if (done <= cfg.warmup_steps + kEarlyLines && step % cfg.log_every != 0 &&
          step != cfg.steps) {
        progress.early_step(step, loss_value, t1 - t0, warm);
      }
      if (done == cfg.warmup_steps + 1 && step < cfg.steps) {
        progress.projection(cfg.steps - step, t1 - t0, !device.is_cuda());
      }
      if (!std::isfinite(loss_value)) {
        status = "diverged";
        progress.finish();
        log_error("loss is " + std::to_string(loss_value) + " at step " + std::to_string(step) +
                  "; the run diverged (try a lower --lr, or float32/bfloat16)");
        break;
      }
      // The ranks agree on stopping (a signal seen by any of them) with each step's loss.
      const bool stopping = sync ? sync->stop_requested() : stop_signal() != 0;
      if (stopping) {
        torch::Tensor sig = torch::full({1}, static_cast<int64_t>(stop_signal()), torch::kInt64);
        if (dist) dist->allreduce({sig}, ReduceOp::kMax);  // the ranks agreed to stop together
        run_signal = static_cast<int>(sig.item<int64_t>());
      }
      const bool checkpoint_now =
          cfg.checkpoint_every > 0 && (step % cfg.checkpoint_every == 0 || stopping);
      // A window also ends where a checkpoint or a stop falls, so a resumed run logs every step.
      if (step % cfg.log_every == 0 || step == cfg.steps || checkpoint_now || stopping) {
        flush_window(t1);
      }
      if (checkpoint_now && rank0) save_checkpoint(run_dir, step, trainer, cfg.keep_checkpoints);
      if (stopping) {
        status = "interrupted";
        progress.finish();
        log_warn("stopped by signal " + std::to_string(run_signal) + " after step " +
                 std::to_string(step) + "; writing the results so far");
        break;
      }
      if (cfg.eval_every > 0 && step % cfg.eval_every == 0 && step < cfg.steps) run_eval();
    }
    if (status == "completed") run_eval();
  } catch (const CollectiveError& e) {
    status = "failed";
    error = dist->explain_failure(e.what(), /*collective=*/true);
  } catch (const std::exception& e) {
    status = "failed";
    error = dist ? dist->explain_failure(error_text(e), /*collective=*/false) : error_text(e);
  }
  progress.finish();

  const StepStats stats = step_stats(timed_ms);
  const double seq_s = stats.count ? global_batch * 1e3 / stats.median_ms : NAN;
  const PeakFlops& peak = setup.peak;
  nlohmann::json summary;
  summary["status"] = status;
  summary["params"] = setup.params;
  summary["steps_done"] = step;
  summary["resumed_from_step"] = start_step ? nlohmann::json(start_step) : nlohmann::json(nullptr);
  summary["steps_timed"] = stats.count;
  summary["step_time_ms"] = {
      {"median", stats.median_ms}, {"min", stats.min_ms}, {"max", stats.max_ms}};
  summary["step_time_ms_samples"] = timed_ms;
  summary["world_size"] = world;
  summary["global_batch_size"] = global_batch;
  summary["sequences_per_s"] = seq_s;  // all ranks together
  summary["tokens_per_s"] = seq_s * cfg.seq_len;
  summary["flops_per_token"] = setup.flops_per_token;
  summary["mfu"] =
      peak.flops_per_s > 0
          ? nlohmann::json(seq_s * cfg.seq_len * setup.flops_per_token / (peak.flops_per_s * world))
          : nlohmann::json(nullptr);
  summary["peak_flops"] = peak.flops_per_s > 0 ? nlohmann::json(peak.flops_per_s) : nullptr;
  summary["peak_flops_source"] = peak.source;
  summary["peak_memory_bytes"] = peak_memory_bytes_(device);
  summary["warmup_seconds"] = warmup_s;
  // null for eager runs: nothing was compiled (0.0 would read as a compiler that took no time)
  summary["compile_seconds"] = cfg.compile ? nlohmann::json(compile_s) : nlohmann::json(nullptr);
  summary["compile_backend"] = setup.backend;
  summary["sdpa_backend_used"] = setup.config_json["sdpa_backend_used"];
  summary["fused_groups"] = cfg.compile ? nlohmann::json(fused_groups) : nlohmann::json(nullptr);
  // Timing figures (step times, speeds, MFU) cover this session's timed steps; total_seconds
  // covers the whole run, earlier sessions included.
  const double session_s = synchronized_now_s(device) - run_start;
  summary["session"] = {
      {"first_step", start_step + 1}, {"last_step", step}, {"seconds", session_s}};
  summary["total_seconds"] = elapsed_before + session_s;
  summary["final_train_loss"] = final_train_loss;
  summary["final_valid_loss"] = valid_loss;
  summary["final_valid_bpb"] = valid_loss / std::log(2.0);
  summary["loss_scale"] = trainer.scaler().enabled() ? nlohmann::json(trainer.scaler().scale())
                                                     : nlohmann::json(nullptr);
  summary["skipped_steps"] = trainer.scaler().skipped_steps();
  summary["stop_signal"] = run_signal ? nlohmann::json(run_signal) : nlohmann::json(nullptr);
  if (dist && error.empty()) {
    try {
      summary.update(dist_summary_(*dist, *sync, trainer.model(), stats, comm_ms));
    } catch (const CollectiveError& e) {
      status = "failed";
      summary["status"] = status;
      error = dist->explain_failure(e.what(), /*collective=*/true);
    }
  }
  if (rank0 && !cfg.save_model.empty() && status == "completed") {
    save_torchscript(trainer.model(), cfg.save_model);
    log_info("saved the trained network as TorchScript: " + cfg.save_model);
  }
  if (!error.empty()) summary["error_message"] = error;
  if (writer) writer->write_summary(summary);
  if (!error.empty()) {
    throw RunError(error + (writer ? " (recorded in " + run_dir + "/summary.json)" : ""));
  }
  return {run_dir, status, run_signal, summary};
}

}  // namespace trainbench
