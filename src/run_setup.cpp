// prepare_run: data, run folder checks, resume, model and the resolved config (see run_setup.h).
#include "trainbench/run_setup.h"

#include "trainbench/checkpoint.h"
#include "trainbench/env_info.h"
#include "trainbench/log.h"
#include "trainbench/model.h"
#include "trainbench/results.h"
#include "trainbench/scripted_model.h"
#include "trainbench/timing.h"

namespace trainbench {

RunSetup prepare_run(const RunConfig& cfg, torch::Device device, int threads, DistContext* dist) {
  RunSetup s;
  const int world = dist ? dist->world_size() : 1;
  const bool rank0 = !dist || dist->rank() == 0;
  // Data first: a bad corpus is a usage error and must leave nothing on disk.
  if (cfg.data.empty()) log_info("data: no --data given, using the embedded generated corpus");
  s.corpus = cfg.data.empty() ? embedded_corpus() : open_corpus(cfg.data);
  const int64_t valid_bytes = resolved_valid_bytes(cfg, s.corpus.size());
  s.split = split_corpus(s.corpus.size(), valid_bytes, cfg.seq_len, cfg.batch_size * world,
                         s.corpus.source());
  s.run_dir = cfg.resume.empty() ? run_dir_name(cfg) : cfg.resume;
  if (cfg.resume.empty() && rank0) check_run_dir(s.run_dir, cfg.overwrite);
  s.checkpoint = cfg.resume.empty() ? "" : latest_checkpoint(s.run_dir);
  if (!cfg.resume.empty() && s.checkpoint.empty()) {
    throw ConfigError("--resume: '" + s.run_dir +
                      "' holds no checkpoint; it must come from a run with --checkpoint_every");
  }

  s.backend = cfg.compile ? configure_script_executor(device) : "eager";
  torch::manual_seed(static_cast<uint64_t>(cfg.seed));
  const double build_start = synchronized_now_s(device);
  s.trainer = std::make_unique<Trainer>(cfg, device);
  // Compiling = defining the script (here) + the executor's profiling steps (in the loop).
  s.compile_s = cfg.compile ? synchronized_now_s(device) - build_start : 0.0;
  s.params = count_parameters(s.trainer->model());
  s.device_name = device_name(device);
  s.peak = resolve_peak_flops(cfg, device, s.device_name);
  s.flops_per_token = flops_per_token(cfg);

  RunConfig resolved = cfg;
  resolved.device = device.is_cuda() ? "cuda" : "cpu";  // not the rank's own GPU index
  resolved.threads = threads;
  resolved.valid_bytes = valid_bytes;
  resolved.dropout_impl = resolved_dropout_impl(cfg);
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
    s.start_step = load_checkpoint(s.checkpoint, *s.trainer);
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
