// Progress line and result table.
#include "trainbench/report/progress.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "trainbench/core/config.h"
#include "trainbench/core/log.h"
#include "trainbench/core/timing.h"
#include "trainbench/report/report_columns.h"

namespace trainbench {
namespace {

double now_s_() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// "-" for a figure that is missing or not finite (an interrupted run's speed), as bench report.
std::string num_or_dash_(const nlohmann::json& v, int precision, double scale = 1.0) {
  return v.is_number() && std::isfinite(v.get<double>()) ? fixed_text(v, precision, scale) : "-";
}

// A switch as the command line writes it: 0 or 1 (config.json holds true/false).
std::string switch_(const nlohmann::json& v) { return v == true ? "1" : "0"; }

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<long long>(std::llround(seconds));
  char buf[48];
  if (s < 60) {
    std::snprintf(buf, sizeof(buf), "%llds", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof(buf), "%lldm %02llds", s / 60, s % 60);
  } else if (s < 86400) {
    std::snprintf(buf, sizeof(buf), "%lldh %02lldm", s / 3600, s % 3600 / 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%lldd %02lldh", s / 86400, s % 86400 / 3600);
  }
  return buf;
}

Progress::Progress(int64_t total_steps, bool live)
    : total_(total_steps), live_(live), tty_(live && isatty(STDERR_FILENO)), start_s_(now_s_()) {}

void Progress::clear_() {
  if (drawn_) std::fprintf(stderr, "\r\033[K");
  drawn_ = false;
}

void Progress::update(int64_t step, double loss, double tokens_per_s, double step_s) {
  if (!tty_) return;
  const double now = now_s_();
  if (step != total_ && now - last_draw_s_ < 0.2) return;
  last_draw_s_ = now;
  std::fprintf(stderr,
               "\r\033[Kstep %lld/%lld (%.0f%%)  loss %.4f  %.3f s/step  %.0f tok/s  elapsed %s  "
               "%s",
               static_cast<long long>(step), static_cast<long long>(total_),
               100.0 * static_cast<double>(step) / static_cast<double>(total_), loss, step_s,
               tokens_per_s, format_duration(now - start_s_).c_str(), eta_(step, step_s).c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::window(int64_t step, double loss, double sequences_per_s, double tokens_per_s,
                      double step_s) {
  clear_();
  log_info(utc_now("%H:%M:%SZ") + "  step " + std::to_string(step) + "/" + std::to_string(total_) +
           "  loss " + fixed_text(loss, 4) + "  " + fixed_text(sequences_per_s, 1) + " seq/s  " +
           fixed_text(tokens_per_s, 0) + " tok/s" +
           (step < total_ ? "  " + eta_(step, step_s) : ""));
}

void Progress::early_step(int64_t step, double loss, double step_s, bool warmup) {
  if (!live_) return;
  clear_();
  log_info("step " + std::to_string(step) + "/" + std::to_string(total_) +
           (warmup ? " (warm-up)" : "") + "  loss " + fixed_text(loss, 4) + "  " +
           fixed_text(step_s, 3) + " s/step");
}

std::string Progress::eta_(int64_t step, double step_s) const {
  // The warm-up's steps (compiling, allocating) say nothing about the timed ones.
  if (!projected_) return "ETA after warm-up";
  return "ETA " + format_duration(static_cast<double>(total_ - step) * step_s);
}

void Progress::projection(int64_t steps_left, double step_s, bool cpu) {
  projected_ = true;
  if (!live_) return;
  const double seconds = static_cast<double>(steps_left) * step_s;
  std::string line = "projected: " + format_duration(seconds) + " for the " +
                     std::to_string(steps_left) + " steps left at " + fixed_text(step_s, 3) +
                     " s/step (evaluations not included)";
  if (cpu && seconds > kSlowRunSeconds) {
    line +=
        "; this workload is sized for a GPU: --preset quick trains a small model in seconds "
        "here, or run it on a GPU (--device cuda)";
  }
  clear_();
  if (cpu && seconds > kSlowRunSeconds) {
    log_warn(line);
  } else {
    log_info(line);
  }
}

void Progress::message(const std::string& line) {
  clear_();
  log_info(line);
}

void Progress::finish() { clear_(); }

std::string summary_table(const nlohmann::json& config, const nlohmann::json& summary) {
  std::ostringstream os;
  // null where no step was timed (a run stopped during its warm-up)
  const nlohmann::json st = summary.value("step_time_ms", nlohmann::json()).is_object()
                                ? summary["step_time_ms"]
                                : nlohmann::json::object();
  // Several processes: speeds are global, so the device column says how many shared them.
  const int64_t world = config.value("world_size", int64_t{1});
  const std::string processes = world > 1 ? " x" + std::to_string(world) : "";
  os << "| model | dtype | layers | flash | compile | device | seq/s | tokens/s | step ms (median, "
        "min-max) "
        "| MFU | peak MB | train bpb | valid bpb | status |\n"
     << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
     << "| " << config["model"].get<std::string>() << " | " << config["dtype"].get<std::string>()
     << " | " << config["num_layer"] << " | " << switch_(config["flash"]) << " | "
     << config["compile"].get<std::string>() << " | " << config["device"].get<std::string>()
     << processes << " | " << num_or_dash_(summary["sequences_per_s"], 1) << " | "
     << num_or_dash_(summary["tokens_per_s"], 0) << " | "
     << (st.contains("median") ? num_or_dash_(st["median"], 1) + " (" +
                                     num_or_dash_(st.value("min", nlohmann::json()), 1) + "-" +
                                     num_or_dash_(st.value("max", nlohmann::json()), 1) + ")"
                               : std::string("-"))
     << " | "
     << (summary.value("peak_unreliable", false) ? std::string("unreliable peak")
         : summary["mfu"].is_number()            ? num_or_dash_(summary["mfu"], 1, 100.0) + "%"
                                                 : "-")
     << " | " << num_or_dash_(summary["peak_memory_bytes"], 0, 1.0 / (1 << 20)) << " | "
     << num_or_dash_(summary.value("final_train_bpb", nlohmann::json()), 4) << " | "
     << num_or_dash_(summary["final_valid_bpb"], 4) << " | " << summary["status"].get<std::string>()
     << " |\n";
  return os.str();
}

std::string repetitions_line(const nlohmann::json& summary) {
  if (!summary.contains("repetitions")) return "";
  const nlohmann::json& r = summary["repetitions"];
  const nlohmann::json& s = summary["statistics"]["sequences_per_s"];
  std::string line = std::to_string(r.value("completed", 0)) + " of " +
                     std::to_string(r.value("planned", 0)) + " repetitions completed";
  if (s.value("count", 0) > 0) {
    line += "; seq/s median " + num_or_dash_(s["median"], 1) + ", mean " +
            num_or_dash_(s["mean"], 1) + ", stddev " + num_or_dash_(s["stddev"], 2) + " (cv " +
            num_or_dash_(s["cv"], 1, 100.0) + "%), min-max " + num_or_dash_(s["min"], 1) + "-" +
            num_or_dash_(s["max"], 1);
  }
  return line + "\n";
}

}  // namespace trainbench
