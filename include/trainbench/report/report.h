// `bench report RUN_DIR...`: run folders (ours, or the Python/JAX peers', which write the same
// files) → the reference's tables: rows by dtype, columns by configuration, speed-up ratios
// against a baseline column, then one detail row per run. Markdown, CSV or JSON.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainbench {

// One run folder as the report sees it.
struct RunRecord {
  std::string dir;
  // configuration column: "{framework} {model}[ torchscript|compiled|fused[ float32-gemm]]
  // [ keep_memory|libtorch-allocator][ parallel-dropout][ sdpa-B][ flash][ fused_adam]
  // [ cuda_graph][ xN processes[ all-reduce after backward]]"; framework: libtorch (as
  // shipped), bench (a run with any of bench's own replacements), pytorch, jax
  std::string label;
  std::string dtype;
  int64_t num_layer = 0;
  int64_t batch_size = 0;
  std::string shape;  // "8 layers, d_model 512, seq_len 256, batch 8": runs compare only within one
  std::string status;     // completed | interrupted | diverged | failed | killed | running
  int64_t last_step = 0;  // killed/running (no summary.json): the last step metrics.jsonl logged
  nlohmann::json sequences_per_s, tokens_per_s, mfu, peak_memory_bytes, final_valid_bpb;
  nlohmann::json final_train_bpb;   // timed steps of the last window, bits per byte (or null)
  nlohmann::json tokens_per_joule;  // the GPU's energy over the timed steps (null: not read)
  // Warm-up (excluded from timing) and the compiler's share of it (null for eager runs).
  nlohmann::json warmup_seconds, compile_seconds;
  // Multi-process runs: the exposed all-reduce wait per step (median, ms) and its share of the
  // median step (null for single-process runs).
  nlohmann::json communication_ms, communication_share;
  // --profile_steps: summary.json's "profile" (time by op category), or null.
  nlohmann::json profile;
  // The GEMM path of the model's GEMMs (summary.json "gemm_path": reference, onednn_native,
  // float32_rounded, ...; "" for older folders and the peers).
  std::string gemm_path;
  // How that path was chosen (summary.json "gemm_route"): "auto 1.69x" (measured, the chosen
  // route's rate over the other's), "forced", or "" (one route, older folders, the peers).
  std::string gemm_choice;
  bool peak_unreliable = false;  // the run was faster than its peak: no MFU
  nlohmann::json noise;          // summary.json "noise" (measure/cpu_noise.h), or null
  nlohmann::json manifest;       // summary.json "manifest" (app/run_figures.h), or null
  // summary.json's time-to-target fields {target_bpb, target_reached, steps_to_target,
  // tokens_to_target, time_to_target_s, eval_seconds_to_target, stopped_at_target}; null where
  // the run had no target.
  nlohmann::json target;
  // From env.json where the folder has one ("" otherwise): what ran where and when.
  std::string machine;   // device_name (CPU model or GPU)
  std::string date;      // the start day, YYYY-MM-DD (UTC)
  std::string revision;  // what the binary was built from (env.json build_revision)
  // env_info.h's provenance_mark: "built from uncommitted changes" (also at the end of the
  // label, in parentheses), or "".
  std::string provenance;
};

// Reads config.json + summary.json of `dir`. Throws RunError naming the folder and the problem
// (missing file, bad JSON, schema_version other than 1, missing fields).
RunRecord read_run(const std::string& dir);

struct ReportOptions {
  std::string format = "markdown";  // markdown | csv | json
  std::string baseline;             // column label the ratios divide by; "": the first column
};

// Renders the report. Repetitions of one configuration (same label and dtype) are aggregated
// in the speed table: the median of their completed runs with the count and range, ratios of
// medians, "~" where two repeated configurations' ranges overlap (JSON: "aggregates"). Only
// completed runs enter the speed table; others appear there as their
// status and in the detail rows. Runs of different shapes get the shape in their column label,
// so no ratio divides runs of different sizes. The detail rows, the CSV and the JSON runs show
// report_columns.h's columns; the communication ones only when a run has those figures. Throws
// ConfigError for a baseline that names no column.
std::string render_report(const std::vector<RunRecord>& runs, const ReportOptions& options);

// True when `baseline` is a published measurement: a folder holding machine.json (results/NAME,
// written by scripts/record_results.sh) rather than a configuration's label.
bool is_published_folder(const std::string& baseline);
// Your runs against the published ones of `folder`: one row per configuration and dtype of
// yours, beside the same configuration there (same label), the ratio of medians within one
// model shape ("n/a (other shape)", "not published") and the U-test's p with 3 or more
// repetitions a side. format: markdown | json. With fail_below R > 0, the regression gate: a
// row is slower where its ratio is below R and the U-test of its runs against the published
// runs' speeds times R gives p < 0.05 (so it needs 4 or more repetitions a side: 3 against 3 reach
// p = 0.1 at best); those rows are listed in `slower` and under the table. Throws ConfigError when
// nothing was published.
struct PublishedComparison {
  std::string text;
  std::vector<std::string> slower;  // "LABEL DTYPE: 0.71x the published median, ..."
};
PublishedComparison compare_with_published(const std::vector<RunRecord>& yours,
                                           const std::vector<RunRecord>& published,
                                           const std::string& folder, const std::string& format,
                                           double fail_below = 0);

// The fairness manifest of each run (summary.json "manifest", written by bench and the peers
// alike): one row per run with what makes frameworks comparable, and a last column that flags
// a run whose parameter count differs from its dtype's other runs, or whose first loss is more
// than kFirstLossTolerance (relative) from their median. A run without a manifest (older
// folders) is a row saying so. format: markdown | json.
inline constexpr double kFirstLossTolerance = 0.05;
std::string render_manifest(const std::vector<RunRecord>& runs, const std::string& format);

// The run folders under `paths`: a path holding config.json is one; any other folder is
// searched below for them (sorted), as tensorboard --logdir searches.
std::vector<std::string> run_folders(const std::vector<std::string>& paths);

// The `report` subcommand: argv after "report". Returns the exit code (0 ok, 2 usage or no
// readable run folder); warnings for unreadable folders go to stderr.
int report_main(int argc, const char* const* argv);

}  // namespace trainbench
