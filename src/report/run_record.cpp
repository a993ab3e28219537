// Run folders as the report reads them: config.json + summary.json (or, without one, a run
// that is still going or was killed), and the search for run folders below a folder.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <type_traits>

#include "trainbench/core/choices.h"
#include "trainbench/core/config.h"
#include "trainbench/core/errors.h"
#include "trainbench/core/run_files.h"
#include "trainbench/report/env_info.h"
#include "trainbench/report/report.h"
#include "trainbench/report/results.h"
#include "trainbench/report/run_lock.h"

namespace trainbench {

namespace {

// summary.json's gemm_route as the report's short words (report.h RunRecord::gemm_choice).
std::string gemm_choice_(const nlohmann::json& route) {
  if (!route.is_object() || !route.contains("flops_per_s")) return "";
  const std::string by = route.value("chosen_by", std::string());
  const auto& rates = route["flops_per_s"];
  if (!rates.is_object() || rates.size() < 2 || (by != "measurement" && by != "flag")) return "";
  if (by == "flag") return "forced";
  double chosen = 0, other = 0;
  const bool rounded = route.value("chosen", std::string()) == "float32";
  for (const auto& [path, rate] : rates.items()) {
    if (!rate.is_number()) return "";
    ((path == "float32_rounded") == rounded ? chosen : other) = rate.get<double>();
  }
  char buf[48];
  std::snprintf(buf, sizeof(buf), "auto %.2fx", other > 0 ? chosen / other : 0.0);
  return buf;
}

// A contract field of a run's file: present and of its type, or a RunError naming the file and
// the field ("'DIR/config.json': field 'num_layer' is string; expected number_integer").
template <typename T>
T field_(const nlohmann::json& j, const std::string& file, const char* key) {
  if (!j.contains(key)) throw RunError("'" + file + "': field '" + key + "' is missing");
  const nlohmann::json& v = j.at(key);
  const bool ok = std::is_same_v<T, std::string> ? v.is_string() : v.is_number_integer();
  if (!ok) {
    throw RunError("'" + file + "': field '" + key + "' is " + v.type_name() + " (" + v.dump() +
                   "); expected " + (std::is_same_v<T, std::string> ? "a string" : "an integer"));
  }
  return v.get<T>();
}

// What a folder without summary.json says: its run is still training ("running": a live bench
// holds the folder) or ended without writing one ("killed": a crash, SIGKILL, a closed
// session), with the last step its metrics.jsonl logged.
nlohmann::json unfinished_summary_(const std::string& dir) {
  int64_t last = 0;
  std::ifstream in(run_file(dir, RunFile::kMetrics));
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("step") && j["step"].is_number_integer()) {
      last = std::max(last, j["step"].get<int64_t>());
    }
  }
  return {{"schema_version", kSchemaVersion},
          {"status", run_folder_in_use(dir) ? "running" : "killed"},
          {"steps_done", last}};
}

// A run's label from its config.json: the framework, the model, then every choice that changes
// what is measured ("bench handcraft fused float32-gemm flash x2 processes"). A bench run that
// replaces a piece of LibTorch (its fused kernels, its fused Adam, its caching CPU allocator,
// its parallel dropout mask) is named "bench", never "libtorch": "libtorch" rows are LibTorch
// as shipped. Each replacement outside its path's default is named.
std::string label_of_(const nlohmann::json& config, const std::string& cfile) {
  std::string framework = config.value("framework", std::string("libtorch"));
  // Switches are true/false in bench's config.json, 0/1 in the peers'.
  auto on = [&](const char* key) { return config.contains(key) && switch_on(config.at(key)); };
  CompilePath path = CompilePath::kNone;
  if (config.contains("compile")) {
    const nlohmann::json& given = config.at("compile");
    path = given.is_string()
               ? parse_choice<CompilePath>(given.get<std::string>()).value_or(CompilePath::kNone)
           : on("compile") ? CompilePath::kTorchScript
                           : CompilePath::kNone;
  }
  std::string bench_parts;  // bench's replacements, beyond its fused path's own
  if (framework == "libtorch") {
    const bool fused = path == CompilePath::kFused;
    // keep_memory: true/false before it took auto (every such run used it as given), "0"/"1"
    // since; a run folder without it predates the allocator.
    const bool given = config.contains("keep_memory");
    const bool kept = given && (config.at("keep_memory").is_string()
                                    ? config.at("keep_memory").get<std::string>() == "1"
                                    : switch_on(config.at("keep_memory")));
    if (kept && !fused) bench_parts += " keep_memory";
    if (given && !kept && fused) bench_parts += " libtorch-allocator";
    if (config.value("dropout_impl", std::string()) == "parallel") {
      bench_parts += " parallel-dropout";
    }
    if (fused || on("fused_adam") || !bench_parts.empty()) framework = "bench";
  }
  std::string label = framework + " " + field_<std::string>(config, cfile, "model");
  // The torch model's blocks are pre-LN unless norm_first says otherwise.
  if (parse_choice<ModelKind>(config.value("model", std::string())) == ModelKind::kTorch &&
      !on("norm_first")) {
    label += " post-LN";
  }
  // bench's TorchScript path reads "torchscript"; the peers' torch.compile / jax.jit (their
  // --compile 1, the original's switch) "compiled"; bench's own kernels "fused".
  if (path == CompilePath::kTorchScript) {
    label += framework == "libtorch" || framework == "bench" ? " torchscript" : " compiled";
    // The peers' torch.compile mode where not its default ("max-autotune").
    if (const auto mode = config.find("compile_mode");
        mode != config.end() && mode->is_string() && *mode != "default") {
      label += " " + mode->get<std::string>();
    }
  }
  if (path == CompilePath::kFused) label += " fused";
  if (path == CompilePath::kFused &&
      parse_choice<GemmRoute>(config.value("lowp_gemm", std::string())) == GemmRoute::kFloat32) {
    label += " float32-gemm";
  }
  label += bench_parts;
  if (const std::string sdpa = config.value("sdpa_backend", std::string());
      !sdpa.empty() && sdpa != "auto") {
    label += " sdpa-" + sdpa;
  }
  if (on("flash")) label += " flash";
  if (on("fused_adam")) label += " fused_adam";
  if (config.value("adam_kernel", std::string()) == "multi") label += " adam-multi";
  if (on("cuda_graph")) label += " cuda_graph";
  if (const std::string rows = config.value("gpu_kernels", std::string());
      !rows.empty() && rows != "v1") {
    label += " gpu-" + rows;
  }
  // Data-parallel runs (speeds are global) get their own column, those with the all-reduce
  // after backward (--dist_overlap 0) another; batch stays per rank.
  const int64_t world = config.value("world_size", int64_t{1});
  if (world > 1) label += " x" + std::to_string(world) + " processes";
  if (world > 1 && config.contains("dist_overlap") && !on("dist_overlap")) {
    label += " all-reduce after backward";
  }
  return label;
}

}  // namespace

RunRecord read_run(const std::string& dir) {
  const nlohmann::json config = read_json_file(run_file(dir, RunFile::kConfig));
  const bool finished = std::filesystem::exists(run_file(dir, RunFile::kSummary));
  const nlohmann::json summary =
      finished ? read_json_file(run_file(dir, RunFile::kSummary)) : unfinished_summary_(dir);
  for (const auto* j : {&config, &summary}) {
    const nlohmann::json v =
        j->is_object() ? j->value("schema_version", nlohmann::json()) : nlohmann::json();
    if (v != kSchemaVersion) {
      throw RunError("'" + dir + "': schema_version " + (v.is_null() ? "none" : v.dump()) +
                     "; this bench reads " + std::to_string(kSchemaVersion) +
                     " only: run that configuration again with this bench");
    }
  }
  RunRecord r;
  if (std::filesystem::exists(run_file(dir, RunFile::kEnv))) {
    try {
      const nlohmann::json env = read_json_file(run_file(dir, RunFile::kEnv));
      r.machine = env.value("device_name", std::string());
      r.date = env.value("started_at", std::string()).substr(0, 10);
      // The binary's revision (older folders: the checkout's at run time, git_revision); a
      // run whose binary was not a clean build of its tree says so in its label.
      r.revision = env.value("build_revision", env.value("git_revision", std::string()));
      r.provenance = provenance_mark(env);
    } catch (const std::exception&) {  // env.json is context, not contract: a bad one is left
    }
  }
  r.dir = dir;
  try {
    const std::string cfile = run_file(dir, RunFile::kConfig),
                      sfile = run_file(dir, RunFile::kSummary);
    r.label = label_of_(config, cfile) + (r.provenance.empty() ? "" : " (" + r.provenance + ")");
    r.dtype = field_<std::string>(config, cfile, "dtype");
    r.num_layer = field_<int64_t>(config, cfile, "num_layer");
    r.batch_size = field_<int64_t>(config, cfile, "batch_size");
    r.shape = std::to_string(r.num_layer) + " layers, d_model " +
              std::to_string(config.value("d_model", int64_t{0})) + ", seq_len " +
              std::to_string(config.value("seq_len", int64_t{0})) + ", batch " +
              std::to_string(r.batch_size);
    r.status = field_<std::string>(summary, sfile, "status");
    if (!finished) r.last_step = summary.value("steps_done", int64_t{0});
  } catch (const nlohmann::json::exception& e) {
    throw RunError("'" + dir + "': a field is mistyped (" + json_message(e) + ")");
  }
  for (auto [field, key] : {std::pair{&r.sequences_per_s, "sequences_per_s"},
                            {&r.tokens_per_s, "tokens_per_s"},
                            {&r.mfu, "mfu"},
                            {&r.peak_memory_bytes, "peak_memory_bytes"},
                            {&r.tokens_per_joule, "tokens_per_joule"},
                            {&r.final_valid_bpb, "final_valid_bpb"},
                            {&r.final_train_bpb, "final_train_bpb"},
                            {&r.warmup_seconds, "warmup_seconds"},
                            {&r.compile_seconds, "compile_seconds"},
                            {&r.communication_ms, "communication_ms"},
                            {&r.communication_share, "communication_share"}}) {
    *field = summary.contains(key) && summary[key].is_number() ? summary[key] : nullptr;
  }
  if (summary.contains("profile") && summary["profile"].is_object()) r.profile = summary["profile"];
  if (summary.contains("gemm_path") && summary["gemm_path"].is_string()) {
    r.gemm_path = summary["gemm_path"];
  }
  r.gemm_choice = gemm_choice_(summary.value("gemm_route", nlohmann::json()));
  r.peak_unreliable = summary.value("peak_unreliable", false) == true;
  if (summary.contains("noise") && summary["noise"].is_object()) r.noise = summary["noise"];
  if (summary.contains("manifest") && summary["manifest"].is_object()) {
    r.manifest = summary["manifest"];
  }
  if (summary.contains("target_bpb") && summary["target_bpb"].is_number()) {
    r.target = nlohmann::json::object();
    for (const char* k : {"target_bpb", "target_reached", "steps_to_target", "tokens_to_target",
                          "time_to_target_s", "eval_seconds_to_target", "stopped_at_target"}) {
      r.target[k] = summary.value(k, nlohmann::json());
    }
  }
  return r;
}

namespace {

// The repetition folders a --repeat folder's summary.json lists (none for any other folder).
std::vector<std::string> repetition_folders_(const std::string& dir) {
  std::vector<std::string> reps;
  std::error_code ec;
  if (!std::filesystem::exists(run_file(dir, RunFile::kSummary), ec)) return reps;
  try {
    const nlohmann::json s = read_json_file(run_file(dir, RunFile::kSummary));
    if (!s.contains("repetitions") || !s["repetitions"].is_object()) return reps;
    for (const auto& f : s["repetitions"].value("folders", nlohmann::json::array())) {
      if (f.is_string()) reps.push_back(dir + "/" + f.get<std::string>());
    }
  } catch (const std::exception&) {  // read_run names what is wrong with it
  }
  return reps;
}

}  // namespace

std::vector<std::string> run_folders(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::exists(run_file(p, RunFile::kConfig), ec) || !fs::is_directory(p, ec)) {
      out.push_back(p);  // a run folder, or something read_run will name as unreadable
      continue;
    }
    std::vector<std::string> found;
    for (auto it = fs::recursive_directory_iterator(p, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
      if (it->is_directory(ec) && fs::exists(run_file(it->path().string(), RunFile::kConfig), ec)) {
        found.push_back(it->path().string());
        it.disable_recursion_pending();  // a run folder holds no other run
      }
    }
    std::sort(found.begin(), found.end());
    if (found.empty()) out.push_back(p);  // read_run names it: no config.json
    out.insert(out.end(), found.begin(), found.end());
  }
  // A folder of repetitions (--repeat N) stands for its repetitions: each is a run, and the
  // speed table aggregates them as repetitions of one configuration.
  std::vector<std::string> runs;
  for (const std::string& dir : out) {
    const std::vector<std::string> reps = repetition_folders_(dir);
    if (reps.empty()) {
      runs.push_back(dir);
    } else {
      runs.insert(runs.end(), reps.begin(), reps.end());
    }
  }
  return runs;
}

}  // namespace trainbench
