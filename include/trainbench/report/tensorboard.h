// TensorBoard event files in the run folder, written as the run goes, so that `tensorboard
// --logdir runs` shows bench's curves (and the peers', which write the same tags) while they
// train. Records are TensorBoard's own protobuf messages (proto/tb_event.proto,
// tb_hparams.proto, compiled by protoc at build time) framed as TFRecords: uint64 length,
// masked CRC-32C of the length, the bytes, masked CRC-32C of the bytes (CRC-32C by the SSE4.2
// instruction). A file starts with the "brain.Event:2" event; the records of a log window are
// written in one write(2) when the window ends, so a killed run's file reads up to its last
// whole window.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace trainbench {

struct CpuIsa;  // core/cpu_isa.h

// The tags, named once (bench, the peers and the tests use these). TensorBoard orders tag
// groups alphabetically: the loss curves' group, "bpb", comes first, so TensorBoard opens on
// them, train and valid side by side; then memory, speed and whole_run.
namespace tb_tag {
inline constexpr const char* kTrainBpbStep = "bpb/train_step";  // every step's loss, bits/byte
inline constexpr const char* kTrainBpb = "bpb/train";           // the window's mean
inline constexpr const char* kValidBpb = "bpb/valid";
// The same evaluations with training milliseconds as the step (evaluations excluded, warm-up
// included: the time to target's clock), so TensorBoard's step axis draws bpb against time.
inline constexpr const char* kValidBpbByTrainMs = "bpb/valid_by_train_ms";
inline constexpr const char* kSeqPerS = "speed/seq_per_s";
inline constexpr const char* kTokensPerS = "speed/tokens_per_s";
inline constexpr const char* kStepMs = "speed/step_ms";  // the window's median step
inline constexpr const char* kMfuPercent = "speed/mfu_percent";
inline constexpr const char* kPeakMemoryMb = "memory/peak_mb";
// The HParams tab's metrics, written once at the end. Their group sorts after the curves'
// (bpb, memory, speed), so TensorBoard shows these one-point charts last; the Text tab has
// them as a table ("whole_run").
inline constexpr const char* kFinalPrefix = "whole_run/";
inline constexpr const char* kFinalSeqPerS = "whole_run/seq_per_s";
inline constexpr const char* kFinalTokensPerS = "whole_run/tokens_per_s";
inline constexpr const char* kFinalValidBpb = "whole_run/valid_bpb";
inline constexpr const char* kFinalCompleted = "whole_run/completed";  // 1 completed, else 0
}  // namespace tb_tag

// The scalars by the names the Python peers give them, each with its tag: one list, exported by
// `bench --help --json` under "tensorboard" (scripts/peers/flags.json), which the peers' event
// writer (scripts/peers/board.py) reads, so bench's curves and theirs share tags by
// construction.
struct TensorBoardScalar {
  const char* key;
  const char* tag;
};
inline constexpr TensorBoardScalar kTensorBoardScalars[] = {
    {"train_bpb_step", tb_tag::kTrainBpbStep},
    {"train_bpb", tb_tag::kTrainBpb},
    {"valid_bpb", tb_tag::kValidBpb},
    {"valid_bpb_by_train_ms", tb_tag::kValidBpbByTrainMs},
    {"seq_per_s", tb_tag::kSeqPerS},
    {"tokens_per_s", tb_tag::kTokensPerS},
    {"step_ms", tb_tag::kStepMs},
    {"mfu_percent", tb_tag::kMfuPercent},
    {"peak_mb", tb_tag::kPeakMemoryMb},
    {"final_seq_per_s", tb_tag::kFinalSeqPerS},
    {"final_tokens_per_s", tb_tag::kFinalTokensPerS},
    {"final_valid_bpb", tb_tag::kFinalValidBpb},
    {"final_completed", tb_tag::kFinalCompleted},
};
// {key: tag} of every row of kTensorBoardScalars.
nlohmann::json tensorboard_scalars_json();

// CRC-32C (Castagnoli) of `n` bytes: SSE4.2's CRC32 instruction on a CPU with the sets `isa`
// (core/cpu_isa.h; this CPU's where not given); throws RunError with the one-line way out where
// it lacks SSE4.2.
uint32_t crc32c(const void* data, size_t n, const CpuIsa& isa);
uint32_t crc32c(const void* data, size_t n);

// One TFRecord around `payload`.
std::string tfrecord(const std::string& payload);
// The payloads of the whole, intact records of an event file, in order; reading stops at the
// first short or damaged record (a killed writer's last bytes).
std::vector<std::string> read_tfrecords(const std::string& path);

// The event files of a run folder (events.out.tfevents.*), sorted by name (= by start).
std::vector<std::string> event_files(const std::string& run_dir);

// A resumed run continues from `last_step`: every event file keeps only the records of steps up
// to it (and not the session-end record or the whole_run/* metrics, which the resumed session
// writes), so that no step is written twice across files. Each changed file is replaced
// atomically.
void trim_event_files(const std::string& run_dir, int64_t last_step);

class TensorBoardWriter {
 public:
  // Starts a new event file in run_dir (events.out.tfevents.SECONDS.HOST.PID.bench). Throws
  // RunError naming the file when it cannot be created.
  explicit TensorBoardWriter(const std::string& run_dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  const std::string& file() const { return file_; }
  // Buffered until flush(). wall_time: seconds since the epoch.
  void scalar(const std::string& tag, int64_t step, double value, double wall_time);
  // A text-plugin record (markdown).
  void text(const std::string& tag, int64_t step, const std::string& markdown, double wall_time);
  // The HParams plugin's experiment (the flags and the whole_run/* metrics) and this run's session
  // start with its flags (config.json's flag keys: strings, numbers, switches).
  void hparams_start(const nlohmann::json& flags, double wall_time);
  // The session's end: completed is success, diverged/failed failure, interrupted unknown.
  void hparams_end(const std::string& status, int64_t step, double wall_time);
  // Writes the buffered records in one write(2). Throws RunError on a write error.
  void flush();

 private:
  void append_(const std::string& event);
  std::string file_;
  int fd_ = -1;
  std::string pending_;
};

// Seconds since the epoch (an event's wall_time).
double wall_time_now();

}  // namespace trainbench
