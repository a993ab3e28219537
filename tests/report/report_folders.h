// A run folder as bench writes it (config.json, summary.json, metrics.jsonl), made by hand for
// the report's tests.
#pragma once

#include <filesystem>
#include <string>

#include "test_util.h"
#include "trainbench/core/run_files.h"

namespace trainbench {

// Writes a run folder with the contract files and returns its path.
inline std::string make_run(const testing::TempDir& root, const std::string& name,
                            const std::string& framework, const std::string& model,
                            const std::string& dtype, int compile, const std::string& status,
                            double seq_s, int schema = kSchemaVersion) {
  const std::string dir = root / name;
  std::filesystem::create_directories(dir);
  nlohmann::json config = {{"schema_version", schema}, {"model", model},    {"dtype", dtype},
                           {"num_layer", 8},           {"batch_size", 100}, {"flash", 0},
                           {"compile", compile},       {"norm_first", true}};
  if (!framework.empty()) config["framework"] = framework;
  nlohmann::json summary = {
      {"schema_version", schema},    {"status", status}, {"sequences_per_s", seq_s},
      {"tokens_per_s", seq_s * 256}, {"mfu", 0.25},      {"peak_memory_bytes", 3 << 20},
      {"final_valid_bpb", 1.5}};
  if (status != "completed") summary["final_valid_bpb"] = nullptr;
  testing::write_file(dir + "/config.json", config.dump());
  testing::write_file(dir + "/summary.json", summary.dump());
  testing::write_file(dir + "/metrics.jsonl",
                      "{\"step\": 20, \"loss\": 3.5, \"elapsed_s\": 2.0}\n"
                      "{\"step\": 40, \"loss\": 2.5, \"elapsed_s\": 4.0}\n"
                      "{\"step\": 40, \"valid_loss\": 2.6, \"valid_bpb\": 3.75}\n");
  return dir;
}

}  // namespace trainbench
