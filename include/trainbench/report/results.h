// The run folder: config.json, env.json, metrics.jsonl (flushed per line) and summary.json
// (written atomically: temp file + rename). Every file carries kSchemaVersion (core/run_files.h).
#pragma once

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "trainbench/core/run_files.h"

namespace trainbench {

// Checks that `dir` can become a run folder: it must not exist, be empty, or (with overwrite)
// be a folder, whose previous result files and checkpoints are then removed. A non-empty
// folder without overwrite: ConfigError (nothing is touched).
void check_run_dir(const std::string& dir, bool overwrite);

// Sets value's "schema_version" to kSchemaVersion and writes it to run_file(dir, file)
// atomically; the file either keeps its old contents or has the new. Throws RunError on any I/O
// failure.
void write_run_json(const std::string& dir, RunFile file, nlohmann::json& value);

// Reads a JSON file; throws RunError naming the file when it is missing or malformed.
nlohmann::json read_json_file(const std::string& path);

class ResultWriter {
 public:
  // Creates `dir` (and parents) and starts metrics.jsonl afresh. With resume_step >= 0 the run
  // continues instead: metrics lines after resume_step are dropped (a resumed run repeats
  // them), the rest kept. Throws RunError when it cannot.
  explicit ResultWriter(std::string dir, int64_t resume_step = -1);
  ~ResultWriter();
  ResultWriter(const ResultWriter&) = delete;
  ResultWriter& operator=(const ResultWriter&) = delete;

  const std::string& dir() const { return dir_; }
  // Resumed: the run's wall time up to the checkpoint it continues from (the last kept metrics
  // line's elapsed_s), so elapsed_s goes on from there instead of starting again at 0.
  double elapsed_before() const { return elapsed_before_; }
  void write_config(nlohmann::json config) { write_run_json(dir_, RunFile::kConfig, config); }
  void write_env(nlohmann::json env) { write_run_json(dir_, RunFile::kEnv, env); }
  // One JSON object per line, flushed at once so a crash loses nothing already logged.
  void append_metric(nlohmann::json line);
  void write_summary(nlohmann::json summary) { write_run_json(dir_, RunFile::kSummary, summary); }

 private:
  std::string dir_;
  int metrics_fd_ = -1;
  double elapsed_before_ = 0;  // O_APPEND; one write() per line, so a line is never half-written
};

}  // namespace trainbench
