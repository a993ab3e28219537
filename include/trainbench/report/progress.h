// Human-facing output: a live progress line on a terminal (stderr), plain log lines otherwise,
// and the short result table printed to stdout at the end.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace trainbench {

class Progress {
 public:
  // live false: never draw the live line (ranks other than 0 of a multi-process run).
  explicit Progress(int64_t total_steps, bool live = true);
  // Redraws the progress line (at most every 0.2 s) when stderr is a terminal: step and share
  // done, loss, s/step (the last step), tok/s, elapsed and ETA.
  void update(int64_t step, double loss, double tokens_per_s, double step_s);
  // Writes one log line for a finished window (UTC time stamp, ETA at the window's s/step),
  // clearing the live line first.
  void window(int64_t step, double loss, double sequences_per_s, double tokens_per_s,
              double step_s);
  // One log line for a step before the windows start (warm-up and the first timed steps), so a
  // log that is not a terminal speaks from the first step.
  void early_step(int64_t step, double loss, double step_s, bool warmup);
  // After the first timed step: the projected time of the steps left, with a hint when a CPU
  // run would take longer than kSlowRunSeconds.
  void projection(int64_t steps_left, double step_s, bool cpu);
  static constexpr double kSlowRunSeconds = 600;
  void message(const std::string& line);
  void finish();

 private:
  void clear_();
  // "ETA 2m 10s" at step_s per step, or "ETA after warm-up" before the first projection.
  std::string eta_(int64_t step, double step_s) const;
  int64_t total_;
  bool projected_ = false;
  bool live_;
  bool tty_;
  bool drawn_ = false;
  double last_draw_s_ = 0;
  double start_s_ = 0;
};

// A duration for people: "42s", "3m 10s", "2h 05m", "1d 22h"; "?" when unknown.
std::string format_duration(double seconds);

// The stdout table: configuration, speed, MFU, memory and losses of one run.
std::string summary_table(const nlohmann::json& config, const nlohmann::json& summary);
// Under that table for a folder of repetitions (app/repeat.h): "3 of 3 repetitions completed;
// seq/s median 308.2, mean 305.1, stddev 4.2 (cv 1.4%), min-max 300.1-310.0"; "" otherwise.
std::string repetitions_line(const nlohmann::json& summary);

}  // namespace trainbench
