// The files of a run folder, in one table: each one's name (or the prefix of a family of them),
// what it holds and whether `--overwrite 1` clears it. Every layer that reads or writes a run
// folder names its files from here, so that a file a run writes cannot be missed by the
// overwrite (which clears every file of the table but the hold) or spelled twice.
#pragma once

#include <array>
#include <string>

#include "trainbench/core/choice_table.h"

namespace trainbench {

// The one form of every file bench writes (run folders, checkpoints' config, the GEMM probe
// cache, --help --json) and the peers too; a file of another schema is refused with one line
// (a cache entry: measured again). 2: choice flags typed, switches true/false only.
inline constexpr int kSchemaVersion = 2;

enum class RunFile {
  kConfig,
  kEnv,
  kMetrics,
  kSummary,
  kTrace,
  kCheckpoint,
  kEvents,
  kLock,
  kLast = kLock
};
struct RunFileRow {
  RunFile value;
  const char* name;  // the file's name, or the prefix of its family
  const char* help;
  bool prefix;            // a family: checkpoint-N.pt (and .sum), events.out.tfevents.*
  bool overwrite_clears;  // --overwrite 1 removes it (all but the hold of a live run)
};
template <>
struct ChoiceTable<RunFile> {
  static constexpr std::array<RunFileRow, 8> rows = {{
      {RunFile::kConfig, "config.json", "every flag as the run resolved it", false, true},
      {RunFile::kEnv, "env.json", "the machine, LibTorch and the GEMM paths", false, true},
      {RunFile::kMetrics, "metrics.jsonl", "one line per window and evaluation", false, true},
      {RunFile::kSummary, "summary.json", "the run's figures and status", false, true},
      {RunFile::kTrace, "trace.json", "--profile_steps' Chrome trace", false, true},
      {RunFile::kCheckpoint, "checkpoint-", "checkpoint-N.pt and its .sum record", true, true},
      {RunFile::kEvents, "events.out.tfevents.", "TensorBoard event files", true, true},
      {RunFile::kLock, ".lock", "the hold of the run writing the folder", false, false},
  }};
};
static_assert(choices_in_order<RunFile>(), "one row per RunFile, in order");

// dir/name of a file of the table (a family's prefix for kCheckpoint and kEvents).
inline std::string run_file(const std::string& dir, RunFile file) {
  return dir + "/" + name_of(file);
}

// The row a file name in a run folder belongs to: its name, its family's prefix, or a temporary
// file an atomic write of it left behind (NAME.tmp.PID); nullptr for a file bench never writes.
inline const RunFileRow* run_file_of(const std::string& filename) {
  for (const RunFileRow& r : ChoiceTable<RunFile>::rows) {
    const std::string name = r.name;
    if (filename == name || filename.rfind(name + ".tmp.", 0) == 0) return &r;
    if (r.prefix && filename.rfind(name, 0) == 0) return &r;
  }
  return nullptr;
}

}  // namespace trainbench
