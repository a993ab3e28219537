// prepare_run: data, run folder checks, resume, model and the resolved config (see run_setup.h).
#include "trainbench/app/run_setup.h"
#include "trainbench/core/run_files.h"

#include <cstdio>
#include <filesystem>
#include <tuple>

#include "trainbench/app/run_figures.h"
#include "trainbench/core/log.h"
#include "trainbench/core/timing.h"
#include "trainbench/measure/flops.h"
#include "trainbench/measure/gemm_probe.h"
#include "trainbench/measure/probe_cache.h"
#include "trainbench/model/model.h"
#include "trainbench/model/scripted_model.h"
#include "trainbench/report/env_info.h"
#include "trainbench/report/results.h"
#include "trainbench/train/checkpoint.h"

namespace trainbench {

namespace {

std::string gb_(double bytes) {
  char buf[32];
  if (bytes < 1e12) {
    std::snprintf(buf, sizeof(buf), "%.1f GB", bytes / 1e9);
  } else {
    std::snprintf(buf, sizeof(buf), "%.3g TB", bytes / 1e12);
  }
  return buf;
}

// Refuses, before the model is allocated, a CPU run whose estimated memory (times the processes
// sharing this machine, plus the corpus held in memory) exceeds what the machine has left; warns
// when it would take more than 80% of it. The kernel's out-of-memory killer would otherwise end
// the run without a word.
void check_memory_(const RunPlan& plan, int64_t corpus_bytes) {
  const RunConfig& cfg = plan.cfg;
  const int local_processes = plan.dist.local_world_size;
  const double available = available_memory_bytes();
  if (available <= 0) return;
  const MemoryEstimate m = estimate_memory(plan, parameter_count(cfg));
  const double need = m.total_bytes * local_processes + static_cast<double>(corpus_bytes);
  const std::string what =
      "this configuration needs about " + gb_(need) + " of memory (parameters, gradients and " +
      "Adam state " + gb_(m.state_bytes) + ", activations " + gb_(m.activation_bytes) +
      " at batch " + std::to_string(cfg.batch_size) + " x " + std::to_string(cfg.num_layer) +
      " layers" +
      (local_processes > 1 ? ", per process x " + std::to_string(local_processes) : "") + ")";
  if (need > available) {
    throw ConfigError(what + ", more than the " + gb_(available) +
                      " available; use a smaller --batch_size, --num_layer, --d_model or "
                      "--seq_len (--preset quick is sized for a CPU)");
  }
  if (need > 0.8 * available) {
    log_warn(what + " of the " + gb_(available) + " available; little is left for anything else");
  }
}

// The probe's outcome in the log: where its figures came from, or what was measured.
void log_probe_(const RunPlan& plan, const nlohmann::json& record) {
  const std::string file = record["file"].is_string() ? record["file"].get<std::string>() : "";
  if (record["hit"].get<bool>()) {
    log_info("GEMM probe: this machine's figures for these GEMMs, measured " +
             record["measured_at"].get<std::string>() + ", from " + file +
             " (one peak for every run here; --reprobe 1 measures again)");
    return;
  }
  log_info("measured this model's GEMMs (" + std::to_string(model_gemm_products(plan.cfg).size()) +
           " products: forward, input and weight gradients) for " + name_of(plan.cfg.dtype) +
           (plan.lowp() ? " natively and as float32 GEMMs of rounded operands" : "") +
           (record["stored"].get<bool>() ? "; stored for later runs in " + file
            : record["disturbed"].get<bool>()
                ? "; disturbed by other work in every attempt, so not stored"
                : "") +
           "; --peak_tflops and --lowp_gemm native|float32 skip what they decide");
}

// The ranks of a multi-process run decide from their mean rates, so every replica takes the
// same route.
void average_rates_(GemmProbe& probe, DistContext& dist) {
  torch::Tensor rates =
      torch::zeros({static_cast<int64_t>(2 * probe.routes.size())}, torch::kFloat64);
  for (size_t i = 0; i < probe.routes.size(); ++i) {
    rates[2 * i] = probe.routes[i].flops_per_s;
    rates[2 * i + 1] = probe.routes[i].peak_flops_per_s;
  }
  dist.allreduce({rates});
  for (size_t i = 0; i < probe.routes.size(); ++i) {
    probe.routes[i].flops_per_s = rates[2 * i].item<double>() / dist.world_size();
    probe.routes[i].peak_flops_per_s = rates[2 * i + 1].item<double>() / dist.world_size();
  }
}

// The GEMM probe of a CPU run and the route it decides: the plan with --lowp_gemm auto's route
// measured (the model, the peak, env.json and config.json all take that one). The probe runs
// where a figure needs it: the MFU peak (no --peak_tflops), the choice, or the warning's
// slowdown of a bfloat16/float16 GEMM.
RunPlan decide_gemm_route_(const RunPlan& plan, DistContext* dist, bool rank0, int threads,
                           RunSetup& s) {
  const bool forced_float32 =
      plan.gemm_route_by == RouteChosenBy::kFlag && plan.gemm_route == GemmRoute::kFloat32;
  if (plan.cuda() || (plan.cfg.peak_tflops > 0 && (!plan.lowp() || forced_float32))) return plan;
  ProbeOutcome outcome = cached_or_measured_probe(plan, threads);
  s.probe = std::move(outcome.probe);
  s.probe_cache = outcome.record;
  if (rank0) log_probe_(plan, s.probe_cache);
  if (dist) average_rates_(s.probe, *dist);
  s.gemm_route = {{"lowp_gemm", name_of(plan.cfg.lowp_gemm)}, {"probe_seconds", s.probe.seconds}};
  nlohmann::json rates = nlohmann::json::object();
  for (const RouteRate& r : s.probe.routes) rates[name_of(r.path)] = r.flops_per_s;
  s.gemm_route["flops_per_s"] = rates;
  RunPlan decided = plan;
  std::string decision;
  if (plan.gemm_route_by == RouteChosenBy::kInstructionSets) {
    const RouteChoice choice = choose_route(s.probe);
    decided = with_measured_route(plan, choice.route);
    s.gemm_route["reason"] = choice.reason;
    s.gemm_route["chosen_by"] = "measurement";
    decision = "; --lowp_gemm auto takes the " + std::string(name_of(choice.route)) +
               " route: " + choice.reason;
  } else {
    const bool flag = plan.gemm_route_by == RouteChosenBy::kFlag;
    s.gemm_route["reason"] =
        flag ? std::string("forced by --lowp_gemm ") + name_of(plan.cfg.lowp_gemm)
             : "one route (" + std::string(plan.lowp() ? "not --compile fused" : "float32") + ")";
    s.gemm_route["chosen_by"] = flag ? "flag" : "one route";
  }
  s.gemm_route["chosen"] = name_of(decided.gemm_route);
  if (rank0) {
    char cost[32];
    std::snprintf(cost, sizeof(cost), "%.1f s", s.probe.seconds);
    log_info((s.probe_cache["hit"].get<bool>() ? std::string("GEMM probe from the cache")
                                               : "GEMM probe took " + std::string(cost)) +
             (s.probe.injected ? " (rates injected)" : "") + decision);
  }
  return decided;
}

// Refused before anything is written: a folder holding results (unless --overwrite 1), or one
// another live bench process holds (a second run, a resume of a live run, a sweep entry that
// overlaps in time). The emptiness is checked again under the hold, since another run may have
// finished in between; --overwrite 1 clears the old files only under the hold.
void hold_run_folder_(const RunConfig& cfg, RunSetup& s) {
  std::error_code ec;
  const bool not_a_folder =
      std::filesystem::exists(s.run_dir, ec) && !std::filesystem::is_directory(s.run_dir, ec);
  // A folder a live run holds is refused by the hold below, naming the holder, whatever the
  // folder holds so far.
  if (cfg.resume.empty() && (!cfg.overwrite || not_a_folder) &&
      (not_a_folder || !run_folder_in_use(s.run_dir))) {
    check_run_dir(s.run_dir, false);
  }
  s.lock = RunFolderLock::acquire(s.run_dir, /*create=*/cfg.resume.empty());
  if (cfg.resume.empty()) check_run_dir(s.run_dir, cfg.overwrite);
}

// The corpus, its split and the checkpoint to resume from: a bad corpus is a usage error (and
// a folder the hold created goes again).
void open_data_(const RunPlan& plan, RunSetup& s) {
  const RunConfig& cfg = plan.cfg;
  s.corpus = cfg.data.empty() ? embedded_corpus() : open_corpus(cfg.data);
  if (!plan.cuda()) check_memory_(plan, s.corpus.size());
  if (cfg.data.empty()) log_info("data: no --data given, using the embedded generated corpus");
  s.split = split_corpus(s.corpus.size(), resolved_valid_bytes(cfg, s.corpus.size()), cfg.seq_len,
                         cfg.batch_size * plan.dist.world_size, s.corpus.source());
  s.checkpoint = cfg.resume.empty() ? "" : latest_checkpoint(s.run_dir);
  if (!cfg.resume.empty() && s.checkpoint.empty()) {
    throw ConfigError("--resume: '" + s.run_dir +
                      "' holds no checkpoint; a run writes one when a signal stops it, and every "
                      "--checkpoint_every steps (a completed run or one with --checkpoint_every "
                      "-1 has none to continue from)");
  }
}

// config.json: the flags as the run resolved them (the choices in the plan's words), and the
// facts of the run that a resume must keep.
nlohmann::json config_json_(const RunSetup& s, int threads) {
  const RunPlan& plan = s.plan;
  RunConfig resolved = plan.cfg;
  resolved.device = plan.cuda() ? DeviceChoice::kCuda : DeviceChoice::kCpu;  // not the GPU index
  resolved.threads = threads;
  resolved.valid_bytes = s.split.valid_end - s.split.valid_begin;
  resolved.dropout_impl = plan.dropout;
  resolved.keep_memory = plan.keep_memory ? KeepMemory::kOn : KeepMemory::kOff;
  resolved.lowp_gemm = plan.gemm_route;
  if (plan.dist.distributed()) resolved.dist_backend = plan.dist_backend;
  nlohmann::json j = resolved;
  j["run_dir"] = s.run_dir;
  j["corpus_source"] = s.corpus.source();
  j["corpus_bytes"] = s.corpus.size();
  j["train_bytes"] = s.split.train_end;
  j["params"] = s.params;
  // The global batch changes with the number of processes, so a resume must keep it.
  j["world_size"] = plan.dist.world_size;
  j["global_batch_size"] = plan.cfg.batch_size * plan.dist.world_size;
  return j;
}

// A resume's flags must match the run's recorded ones (but those a resume may change).
void refuse_resume_differences_(const std::string& run_dir, const nlohmann::json& now) {
  const auto differ =
      resume_config_differences(read_json_file(run_file(run_dir, RunFile::kConfig)), now);
  if (!differ.empty()) {
    std::string keys;
    for (const auto& k : differ) {
      keys += (keys.empty() ? "" : ", ") +
              (k == "world_size" ? std::string("WORLD_SIZE (the number of processes)") : "--" + k);
    }
    throw ConfigError("--resume: these flags differ from the run in '" + run_dir + "': " + keys +
                      "; resume with the run's own values (see its config.json)");
  }
}

// The same refusal before anything is measured or built (the GEMM probe, the model): the
// flags as given, but those resolved by a measurement or the machine.
void refuse_resume_differences_early_(const RunPlan& plan, const std::string& run_dir) {
  RunConfig now = plan.cfg;
  now.device = plan.cuda() ? DeviceChoice::kCuda : DeviceChoice::kCpu;
  now.dropout_impl = plan.dropout;
  nlohmann::json j = now;
  for (const char* later : {"lowp_gemm", "threads", "valid_bytes", "dist_backend"}) j.erase(later);
  refuse_resume_differences_(run_dir, j);
}

// A resume: the recorded flags must match, then the newest whole checkpoint is loaded.
void resume_from_checkpoint_(RunSetup& s) {
  refuse_resume_differences_(s.run_dir, s.config_json);
  std::tie(s.checkpoint, s.start_step) = load_newest_whole_checkpoint(s.run_dir, *s.trainer);
  const int64_t steps = s.plan.cfg.steps;
  if (s.start_step >= steps) {
    throw ConfigError("--steps: " + std::to_string(steps) + " is not past the checkpoint at step " +
                      std::to_string(s.start_step) + "; allowed: > " +
                      std::to_string(s.start_step));
  }
  s.config_json["resumed_from_step"] = s.start_step;
  log_info("resuming " + s.run_dir + " from " + s.checkpoint);
}

}  // namespace

RunSetup prepare_run(const RunPlan& plan, int threads, DistContext* dist) {
  const RunConfig& cfg = plan.cfg;
  RunSetup s;
  const bool rank0 = plan.dist.rank == 0;
  s.run_dir = cfg.resume.empty() ? run_dir_name(cfg) : cfg.resume;
  if (rank0) hold_run_folder_(cfg, s);
  open_data_(plan, s);
  if (!s.checkpoint.empty()) refuse_resume_differences_early_(plan, s.run_dir);
  const bool script = plan.cfg.compile == CompilePath::kTorchScript;
  s.backend = script                                    ? configure_script_executor(plan.device)
              : plan.cfg.compile == CompilePath::kFused ? "fused"
                                                        : "eager";
  s.plan = decide_gemm_route_(plan, dist, rank0, threads, s);
  torch::manual_seed(static_cast<uint64_t>(cfg.seed));
  const double build_start = synchronized_now_s(plan.device);
  s.trainer = std::make_unique<Trainer>(s.plan);
  // Compiling = defining the script (here) + the executor's profiling steps (in the loop).
  s.compile_s = script ? synchronized_now_s(plan.device) - build_start : 0.0;
  s.params = count_parameters(s.trainer->model());
  s.device_name = device_name(plan.device);
  s.gemm_paths = gemm_paths(s.plan);
  if (!s.gemm_route.is_null()) s.gemm_paths["route"] = s.gemm_route;
  s.peak = resolve_peak_flops(s.plan, s.device_name, s.probe);
  s.flops_per_token = flops_per_token(cfg);
  s.config_json = config_json_(s, threads);
  if (dist) dist->check_same_config(s.config_json);
  if (!s.checkpoint.empty()) resume_from_checkpoint_(s);
  return s;
}

}  // namespace trainbench
