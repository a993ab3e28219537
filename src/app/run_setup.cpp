// prepare_run: data, run folder checks, resume, model and the resolved config (see run_setup.h).
#include "trainbench/app/run_setup.h"

#include <cstdio>
#include <filesystem>
#include <tuple>

#include "trainbench/app/run_figures.h"
#include "trainbench/core/log.h"
#include "trainbench/core/timing.h"
#include "trainbench/model/flops.h"
#include "trainbench/model/gemm_probe.h"
#include "trainbench/model/model.h"
#include "trainbench/model/probe_cache.h"
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
void check_memory_(const RunConfig& cfg, int64_t corpus_bytes, int local_processes) {
  const double available = available_memory_bytes();
  if (available <= 0) return;
  const MemoryEstimate m = estimate_memory(cfg, parameter_count(cfg));
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

// The GEMM probe of a CPU run and the route it decides: cfg with --lowp_gemm auto replaced by
// the measured route (the model, the peak, env.json and config.json all take that one). The
// probe runs where a figure needs it: the MFU peak (no --peak_tflops), the choice, or the
// warning's slowdown of a bfloat16/float16 GEMM. The ranks of a multi-process run decide from
// their mean rates, so every replica takes the same route.
RunConfig decide_gemm_route_(const RunConfig& cfg, const torch::Device& device, DistContext* dist,
                             bool rank0, int threads, RunSetup& s) {
  RunConfig run_cfg = cfg;
  const bool lowp = precision(cfg) != Precision::kFloat32;
  const bool forced_float32 = lowp_gemm(cfg) == LowpGemm::kFloat32;
  if (device.is_cuda() || (cfg.peak_tflops > 0 && (!lowp || forced_float32))) return run_cfg;
  ProbeOutcome outcome = cached_or_measured_probe(cfg, threads);
  s.probe = std::move(outcome.probe);
  s.probe_cache = outcome.record;
  if (rank0) {
    const nlohmann::json& r = s.probe_cache;
    const std::string file = r["file"].is_string() ? r["file"].get<std::string>() : "";
    log_info(r["hit"].get<bool>()
                 ? "GEMM probe: this machine's figures for these GEMMs, measured " +
                       r["measured_at"].get<std::string>() + ", from " + file +
                       " (one peak for every run here; --reprobe 1 measures again)"
                 : "measured this model's GEMMs (" +
                       std::to_string(model_gemm_products(cfg).size()) +
                       " products: forward, input and weight gradients) for " + cfg.dtype +
                       (lowp ? " natively and as float32 GEMMs of rounded operands" : "") +
                       (r["stored"].get<bool>() ? "; stored for later runs in " + file
                        : r["disturbed"].get<bool>()
                            ? "; disturbed by other work in every attempt, so not stored"
                            : "") +
                       "; --peak_tflops and --lowp_gemm native|float32 skip what they decide");
  }
  if (dist) {
    torch::Tensor rates =
        torch::zeros({static_cast<int64_t>(2 * s.probe.routes.size())}, torch::kFloat64);
    for (size_t i = 0; i < s.probe.routes.size(); ++i) {
      rates[2 * i] = s.probe.routes[i].flops_per_s;
      rates[2 * i + 1] = s.probe.routes[i].peak_flops_per_s;
    }
    dist->allreduce({rates});
    for (size_t i = 0; i < s.probe.routes.size(); ++i) {
      s.probe.routes[i].flops_per_s = rates[2 * i].item<double>() / dist->world_size();
      s.probe.routes[i].peak_flops_per_s = rates[2 * i + 1].item<double>() / dist->world_size();
    }
  }
  s.gemm_route = {{"lowp_gemm", cfg.lowp_gemm}, {"probe_seconds", s.probe.seconds}};
  nlohmann::json rates = nlohmann::json::object();
  for (const RouteRate& r : s.probe.routes) rates[gemm_path_name(r.path)] = r.flops_per_s;
  s.gemm_route["flops_per_s"] = rates;
  const bool applies = lowp && compile_path(cfg) == CompilePath::kFused;
  std::string decision;
  if (applies && lowp_gemm(cfg) == LowpGemm::kAuto) {
    const RouteChoice choice = choose_route(s.probe);
    run_cfg.lowp_gemm = lowp_gemm_name(choice.route);
    s.gemm_route["reason"] = choice.reason;
    s.gemm_route["chosen_by"] = "measurement";
    decision =
        "; --lowp_gemm auto takes the " +
        std::string(choice.route == LowpGemm::kFloat32 ? "float32 route: " : "native route: ") +
        choice.reason;
  } else {
    s.gemm_route["reason"] =
        applies ? "forced by --lowp_gemm " + cfg.lowp_gemm
                : "one route (" + std::string(lowp ? "not --compile fused" : "float32") + ")";
    s.gemm_route["chosen_by"] = applies ? "flag" : "one route";
  }
  s.gemm_route["chosen"] = lowp_gemm_name(resolved_lowp_gemm(run_cfg));
  if (rank0) {
    char cost[32];
    std::snprintf(cost, sizeof(cost), "%.1f s", s.probe.seconds);
    log_info((s.probe_cache["hit"].get<bool>() ? std::string("GEMM probe from the cache")
                                               : "GEMM probe took " + std::string(cost)) +
             (s.probe.injected ? " (rates injected)" : "") + decision);
  }
  return run_cfg;
}

}  // namespace

RunSetup prepare_run(const RunConfig& cfg, torch::Device device, int threads, DistContext* dist,
                     int local_processes) {
  RunSetup s;
  const int world = dist ? dist->world_size() : 1;
  const bool rank0 = !dist || dist->rank() == 0;
  s.run_dir = cfg.resume.empty() ? run_dir_name(cfg) : cfg.resume;
  if (rank0) {
    // Refused before anything is written: a folder holding results (unless --overwrite 1), or
    // one another live bench process holds (a second run, a resume of a live run, a sweep
    // entry that overlaps in time). The emptiness is checked again under the hold, since
    // another run may have finished in between; --overwrite 1 clears the old files only under
    // the hold.
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
  // Then the data: a bad corpus is a usage error, and a folder the hold created goes again.
  s.corpus = cfg.data.empty() ? embedded_corpus() : open_corpus(cfg.data);
  if (!device.is_cuda()) check_memory_(cfg, s.corpus.size(), local_processes);
  if (cfg.data.empty()) log_info("data: no --data given, using the embedded generated corpus");
  const int64_t valid_bytes = resolved_valid_bytes(cfg, s.corpus.size());
  s.split = split_corpus(s.corpus.size(), valid_bytes, cfg.seq_len, cfg.batch_size * world,
                         s.corpus.source());
  s.checkpoint = cfg.resume.empty() ? "" : latest_checkpoint(s.run_dir);
  if (!cfg.resume.empty() && s.checkpoint.empty()) {
    throw ConfigError("--resume: '" + s.run_dir +
                      "' holds no checkpoint; a run writes one when a signal stops it, and every "
                      "--checkpoint_every steps (a completed run or one with --checkpoint_every "
                      "-1 has none to continue from)");
  }

  const bool script = compile_path(cfg) == CompilePath::kTorchScript;
  s.backend = script                                     ? configure_script_executor(device)
              : compile_path(cfg) == CompilePath::kFused ? "fused"
                                                         : "eager";
  const RunConfig run_cfg = decide_gemm_route_(cfg, device, dist, rank0, threads, s);
  torch::manual_seed(static_cast<uint64_t>(cfg.seed));
  const double build_start = synchronized_now_s(device);
  s.trainer = std::make_unique<Trainer>(run_cfg, device);
  // Compiling = defining the script (here) + the executor's profiling steps (in the loop).
  s.compile_s = script ? synchronized_now_s(device) - build_start : 0.0;
  s.params = count_parameters(s.trainer->model());
  s.device_name = device_name(device);
  s.gemm_paths = gemm_paths(run_cfg, device.is_cuda());
  if (!s.gemm_route.is_null()) s.gemm_paths["route"] = s.gemm_route;
  s.peak = resolve_peak_flops(run_cfg, device, s.device_name, s.probe);
  s.flops_per_token = flops_per_token(cfg);

  RunConfig resolved = cfg;
  resolved.device = device.is_cuda() ? "cuda" : "cpu";  // not the rank's own GPU index
  resolved.threads = threads;
  resolved.valid_bytes = valid_bytes;
  resolved.dropout_impl = dropout_impl_name(resolved_dropout_impl(cfg));
  resolved.lowp_gemm = lowp_gemm_name(resolved_lowp_gemm(run_cfg));
  if (dist) resolved.dist_backend = dist->backend();
  s.config_json = resolved;
  s.config_json["run_dir"] = s.run_dir;
  s.config_json["corpus_source"] = s.corpus.source();
  s.config_json["corpus_bytes"] = s.corpus.size();
  s.config_json["train_bytes"] = s.split.train_end;
  s.config_json["params"] = s.params;
  // The global batch changes with the number of processes, so a resume must keep it.
  s.config_json["world_size"] = world;
  s.config_json["global_batch_size"] = cfg.batch_size * world;
  if (dist) dist->check_same_config(s.config_json);
  if (!s.checkpoint.empty()) {
    const auto differ =
        resume_config_differences(read_json_file(s.run_dir + "/config.json"), s.config_json);
    if (!differ.empty()) {
      std::string keys;
      for (const auto& k : differ) {
        keys +=
            (keys.empty() ? "" : ", ") +
            (k == "world_size" ? std::string("WORLD_SIZE (the number of processes)") : "--" + k);
      }
      throw ConfigError("--resume: these flags differ from the run in '" + s.run_dir +
                        "': " + keys + "; resume with the run's own values (see its config.json)");
    }
    std::tie(s.checkpoint, s.start_step) = load_newest_whole_checkpoint(s.run_dir, *s.trainer);
    if (s.start_step >= cfg.steps) {
      throw ConfigError("--steps: " + std::to_string(cfg.steps) +
                        " is not past the checkpoint at step " + std::to_string(s.start_step) +
                        "; allowed: > " + std::to_string(s.start_step));
    }
    s.config_json["resumed_from_step"] = s.start_step;
    log_info("resuming " + s.run_dir + " from " + s.checkpoint);
  }
  return s;
}

}  // namespace trainbench
