// summary.json's fields in one table: each key, when a run writes it, and whether the Python
// peers (scripts/peers) write it too. `bench --help --json` exports it beside the flag table
// (scripts/peers/flags.json "summary"), the peers write exactly the keys it gives them, and the
// tests hold bench's and the peers' files against it. Every file also carries "schema_version"
// (report/results.h), which is not a row here.
#pragma once

#include <array>

#include <nlohmann/json.hpp>

#include "trainbench/core/choice_table.h"

namespace trainbench {

// When a run writes a key: always, only after a failure, or only in a multi-process run.
enum class SummaryWhen { kAlways, kFailed, kMultiProcess, kLast = kMultiProcess };
template <>
struct ChoiceTable<SummaryWhen> {
  static constexpr std::array<ChoiceRow<SummaryWhen>, 3> rows = {{
      {SummaryWhen::kAlways, "always", ""},
      {SummaryWhen::kFailed, "failed", "a failure after training started"},
      {SummaryWhen::kMultiProcess, "multi_process", "WORLD_SIZE > 1"},
  }};
};
static_assert(choices_in_order<SummaryWhen>(), "one row per SummaryWhen, in order");

struct SummaryField {
  const char* key;
  SummaryWhen when;
  bool peers;  // the PyTorch and JAX peers write it too
};

// In the order bench writes them (app/run.cpp's summary_, then dist_summary, then the error).
inline constexpr SummaryField kSummaryFields[] = {
    {"status", SummaryWhen::kAlways, true},
    {"params", SummaryWhen::kAlways, true},
    {"steps_done", SummaryWhen::kAlways, true},
    {"resumed_from_step", SummaryWhen::kAlways, false},
    {"steps_timed", SummaryWhen::kAlways, true},
    {"step_time_ms", SummaryWhen::kAlways, true},
    {"step_time_ms_samples", SummaryWhen::kAlways, true},
    {"world_size", SummaryWhen::kAlways, false},
    {"global_batch_size", SummaryWhen::kAlways, false},
    {"sequences_per_s", SummaryWhen::kAlways, true},
    {"tokens_per_s", SummaryWhen::kAlways, true},
    {"flops_per_token", SummaryWhen::kAlways, true},
    {"mfu", SummaryWhen::kAlways, true},
    {"peak_unreliable", SummaryWhen::kAlways, true},
    {"achieved_flops_per_s", SummaryWhen::kAlways, false},
    {"peak_flops", SummaryWhen::kAlways, true},
    {"peak_flops_source", SummaryWhen::kAlways, true},
    {"peak_probe", SummaryWhen::kAlways, false},
    {"probe_cache", SummaryWhen::kAlways, false},
    {"gemm_path", SummaryWhen::kAlways, false},
    {"gemm_route", SummaryWhen::kAlways, false},
    {"noise", SummaryWhen::kAlways, true},
    {"peak_memory_bytes", SummaryWhen::kAlways, true},
    {"energy_joules", SummaryWhen::kAlways, true},
    {"tokens_per_joule", SummaryWhen::kAlways, true},
    {"energy_source", SummaryWhen::kAlways, true},
    {"warmup_seconds", SummaryWhen::kAlways, true},
    {"compile_seconds", SummaryWhen::kAlways, true},
    {"compile_backend", SummaryWhen::kAlways, true},
    {"sdpa_backend_used", SummaryWhen::kAlways, false},
    {"fused_groups", SummaryWhen::kAlways, false},  // TorchScript's fusion groups
    {"session", SummaryWhen::kAlways, false},
    {"total_seconds", SummaryWhen::kAlways, false},
    {"final_train_loss", SummaryWhen::kAlways, true},
    {"final_train_bpb", SummaryWhen::kAlways, true},
    {"final_train_steps", SummaryWhen::kAlways, true},
    {"final_valid_loss", SummaryWhen::kAlways, true},
    {"final_valid_bpb", SummaryWhen::kAlways, true},
    // Time to target (--target_bpb): null where no target was set; the *_to_target figures
    // null where it was not reached.
    {"target_bpb", SummaryWhen::kAlways, true},
    {"target_reached", SummaryWhen::kAlways, true},
    {"steps_to_target", SummaryWhen::kAlways, true},
    {"tokens_to_target", SummaryWhen::kAlways, true},
    {"time_to_target_s", SummaryWhen::kAlways, true},
    {"eval_seconds_to_target", SummaryWhen::kAlways, true},
    {"stopped_at_target", SummaryWhen::kAlways, true},
    {"loss_scale", SummaryWhen::kAlways, false},
    {"skipped_steps", SummaryWhen::kAlways, false},
    {"stop_signal", SummaryWhen::kAlways, false},
    {"profile", SummaryWhen::kAlways, false},
    {"manifest", SummaryWhen::kAlways,
     true},  // what makes frameworks comparable (report --manifest)
    {"per_rank_step_time_ms", SummaryWhen::kMultiProcess, false},
    {"per_rank_communication_ms", SummaryWhen::kMultiProcess, false},
    {"per_rank_communication_seconds", SummaryWhen::kMultiProcess, false},
    {"communication_ms", SummaryWhen::kMultiProcess, false},
    {"communication_share", SummaryWhen::kMultiProcess, false},
    {"grad_buckets", SummaryWhen::kMultiProcess, false},
    {"replicas_identical", SummaryWhen::kMultiProcess, false},
    {"param_fingerprint", SummaryWhen::kMultiProcess, false},
    {"error_message", SummaryWhen::kFailed, false},
};

// The table as `bench --help --json` exports it: [{"key", "when", "peers"}] in its order.
inline nlohmann::json summary_fields_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const SummaryField& f : kSummaryFields) {
    out.push_back({{"key", f.key}, {"when", name_of(f.when)}, {"peers", f.peers}});
  }
  return out;
}

}  // namespace trainbench
