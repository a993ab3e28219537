// --repeat N (app/repeat.h): the repetitions as child processes and their aggregate.
#include "trainbench/app/repeat.h"
#include "trainbench/core/run_files.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "trainbench/core/flags.h"
#include "trainbench/core/log.h"
#include "trainbench/measure/stats.h"
#include "trainbench/report/results.h"
#include "trainbench/report/run_lock.h"

namespace trainbench {

namespace fs = std::filesystem;

namespace {

// Flags that say how the repetitions run, not what they measure: they may differ between the
// calls that fill one folder (--repetition 1, then 2, ...).
bool how_not_what_(const std::string& key) {
  return key == "repetition" || key == "overwrite" || key == "run_folder" || key == "resume";
}

std::atomic<pid_t> g_child{0};
std::atomic<int> g_signal{0};

// Passes every stop signal on to the running repetition (the first asks it to finish its step
// and write a checkpoint, a second to quit now); the parent itself waits for it either way.
extern "C" void forward_signal_(int sig) {
  int expected = 0;
  g_signal.compare_exchange_strong(expected, sig);
  const pid_t child = g_child.load();
  if (child > 0) kill(child, sig);
}

class ForwardSignals {
 public:
  ForwardSignals() {
    struct sigaction sa {};
    sa.sa_handler = forward_signal_;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~ForwardSignals() {
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &old_[i], nullptr);
  }
  ForwardSignals(const ForwardSignals&) = delete;
  ForwardSignals& operator=(const ForwardSignals&) = delete;

 private:
  static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction old_[3];
};

// Runs argv as a child process and returns its exit code (128 + N for a signal). The child
// gets a process group of its own, so a terminal's Ctrl-C reaches it once (through the
// parent), and dies with the parent.
int run_child_(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw RunError(std::string("cannot start a repetition: ") + std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    // Its table goes nowhere: the parent's table and summary.json hold every repetition.
    const int null_fd = open("/dev/null", O_WRONLY);
    if (null_fd >= 0) dup2(null_fd, STDOUT_FILENO);
    execv(argv[0], argv.data());
    std::fprintf(stderr, "bench: failed: cannot run '%s': %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  g_child = pid;
  if (const int sig = g_signal.load()) kill(pid, sig);  // a signal before the child existed
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_child = 0;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The repetitions' figure `key` (a number; for step_time_ms its median) of the completed ones.
std::vector<double> figures_(const std::vector<nlohmann::json>& done, const std::string& key) {
  std::vector<double> v;
  for (const nlohmann::json& s : done) {
    const nlohmann::json x =
        key == "step_time_ms_median"
            ? s.value("step_time_ms", nlohmann::json::object()).value("median", nlohmann::json())
            : s.value(key, nlohmann::json());
    if (x.is_number()) v.push_back(x.get<double>());
  }
  return v;
}

nlohmann::json median_or_null_(const std::vector<double>& v) {
  return v.empty() ? nlohmann::json(nullptr) : nlohmann::json(summarize(v).median);
}

// Flags of `recorded` (a config.json) that differ from `mine` in what they measure.
std::string differences_(const nlohmann::json& recorded, const nlohmann::json& mine) {
  std::string keys;
  for (const FlagSpec& f : flag_table()) {
    if (how_not_what_(f.name) || !recorded.contains(f.name)) continue;
    if (recorded.at(f.name) != mine.at(f.name)) {
      keys += (keys.empty() ? "--" : ", --") + std::string(f.name);
    }
  }
  return keys;
}

// "RUN_DIR/rep-K".
std::string repetition_dir(const std::string& run_dir, int64_t k) {
  return run_dir + "/rep-" + std::to_string(k);
}

// The command line of repetition K's process: `self`, the preset and every flag that differs
// from it, --repeat 1, --run_folder RUN_DIR/rep-K (and --overwrite as given).
std::vector<std::string> repetition_args(const RunConfig& cfg, const std::string& self,
                                         const std::string& run_dir, int64_t k) {
  RunConfig base;
  apply_preset(base, cfg.preset);
  std::vector<std::string> args = {self, "--preset", name_of(cfg.preset)};
  for (const FlagSpec& f : flag_table()) {
    const std::string name = f.name;
    if (name == "preset" || name == "repeat" || how_not_what_(name)) continue;
    const std::string value = flag_text(f, cfg);
    if (value != flag_text(f, base)) args.insert(args.end(), {"--" + name, value});
  }
  args.insert(args.end(), {"--repeat", "1", "--run_folder", repetition_dir(run_dir, k)});
  if (cfg.overwrite) args.insert(args.end(), {"--overwrite", "1"});
  return args;
}

// The planned repetitions' folders: the names of those with a summary.json, every one's status
// ("killed": metrics but no summary, "not run": neither), the completed ones' summaries and the
// run's status (the first other than completed; "incomplete" while some have not run).
struct RepetitionFolders {
  nlohmann::json folders = nlohmann::json::array(), statuses = nlohmann::json::array();
  std::vector<nlohmann::json> done;
  std::string status = "completed";
};

RepetitionFolders read_repetitions_(const std::string& run_dir, int64_t planned) {
  RepetitionFolders r;
  bool all_ran = true;
  for (int64_t k = 1; k <= planned; ++k) {
    const std::string dir = repetition_dir(run_dir, k);
    std::error_code ec;
    if (!fs::exists(run_file(dir, RunFile::kSummary), ec)) {
      // A folder with metrics but no summary: its process was killed (as bench report says).
      const bool started = fs::exists(run_file(dir, RunFile::kMetrics), ec);
      r.statuses.push_back(started ? "killed" : "not run");
      if (started && r.status == "completed") r.status = "killed";
      all_ran &= started;
      continue;
    }
    const nlohmann::json s = read_json_file(run_file(dir, RunFile::kSummary));
    r.folders.push_back("rep-" + std::to_string(k));
    const std::string st = s.value("status", "failed");
    r.statuses.push_back(st);
    if (st == "completed") {
      r.done.push_back(s);
    } else if (r.status == "completed") {
      r.status = st;
    }
  }
  if (r.status == "completed" && !all_ran) r.status = "incomplete";
  return r;
}

// "statistics": summary_json of each figure over the completed repetitions.
nlohmann::json statistics_(const std::vector<nlohmann::json>& done) {
  nlohmann::json stats = nlohmann::json::object();
  for (const char* key : {"sequences_per_s", "tokens_per_s", "step_time_ms_median", "mfu",
                          "final_train_bpb", "final_valid_bpb"}) {
    stats[key] = summary_json(figures_(done, key));
  }
  return stats;
}

// Each completed repetition's step_time_ms `key` ("min", "max"), where it has step times.
std::vector<double> step_time_field_(const std::vector<nlohmann::json>& done,
                                     const std::string& key) {
  std::vector<double> v;
  for (const auto& s : done)
    if (s["step_time_ms"].is_object()) v.push_back(s["step_time_ms"].value(key, 0.0));
  return v;
}

// "step_time_ms": the median of the repetitions' medians, the least min and the largest max;
// null where no completed repetition has step times.
nlohmann::json step_time_ms_(const std::vector<nlohmann::json>& done) {
  const std::vector<double> mins = step_time_field_(done, "min");
  const std::vector<double> maxs = step_time_field_(done, "max");
  const std::vector<double> step_medians = figures_(done, "step_time_ms_median");
  if (done.empty() || mins.empty()) return nlohmann::json(nullptr);
  return nlohmann::json{{"median", summarize(step_medians).median},
                        {"min", summarize(mins).min},
                        {"max", summarize(maxs).max}};
}

// summary.json of a folder of `planned` repetitions, from their own summary.json files:
// status (completed when every one completed; else the first other status, or "incomplete"
// while some have not run), repetitions {planned, completed, folders, statuses}, statistics
// {sequences_per_s, tokens_per_s, step_time_ms_median, mfu, final_train_bpb, final_valid_bpb:
// count, mean, median, stddev, cv, min, max, samples} over the completed ones, and the run
// fields the tables read (sequences_per_s, tokens_per_s, mfu, ...: their medians; step_time_ms
// {median of medians, min, max}; peak_memory_bytes: the largest).
nlohmann::json aggregate_repetitions(const std::string& run_dir, int64_t planned) {
  const RepetitionFolders reps = read_repetitions_(run_dir, planned);
  const std::vector<nlohmann::json>& done = reps.done;
  const nlohmann::json stats = statistics_(done);
  const nlohmann::json step_time_ms = step_time_ms_(done);
  const std::vector<double> memory = figures_(done, "peak_memory_bytes");
  bool unreliable = false;
  for (const auto& s : done) unreliable |= s.value("peak_unreliable", false);
  return {
      {"status", reps.status},
      {"repetitions",
       {{"planned", planned},
        {"completed", done.size()},
        {"folders", reps.folders},
        {"statuses", reps.statuses}}},
      {"statistics", stats},
      {"params",
       done.empty() ? nlohmann::json(nullptr) : done.front().value("params", nlohmann::json())},
      {"sequences_per_s", median_or_null_(figures_(done, "sequences_per_s"))},
      {"tokens_per_s", median_or_null_(figures_(done, "tokens_per_s"))},
      {"step_time_ms", step_time_ms},
      {"mfu", median_or_null_(figures_(done, "mfu"))},
      {"peak_unreliable", unreliable},
      {"peak_memory_bytes", memory.empty()
                                ? nlohmann::json(nullptr)
                                : nlohmann::json(static_cast<int64_t>(summarize(memory).max))},
      {"final_train_bpb", median_or_null_(figures_(done, "final_train_bpb"))},
      {"final_valid_bpb", median_or_null_(figures_(done, "final_valid_bpb"))},
  };
}

// Readies the run folder: kept where --repetition K adds one to the repetitions of this same
// configuration; else a folder of another configuration's repetitions is refused (ConfigError)
// without --overwrite 1, and check_run_dir refuses or clears it, its rep-* folders too.
void prepare_run_folder_(const RunConfig& cfg, const std::string& dir, const nlohmann::json& mine) {
  std::error_code ec;
  if (!fs::exists(run_file(dir, RunFile::kConfig), ec)) {
    check_run_dir(dir, cfg.overwrite);
    return;
  }
  const nlohmann::json recorded = read_json_file(run_file(dir, RunFile::kConfig));
  const bool repetitions = recorded.value("repeat", int64_t{1}) > 1;
  const std::string differ = repetitions ? differences_(recorded, mine) : "";
  if (cfg.repetition > 0 && repetitions && !differ.empty() && !cfg.overwrite) {
    throw ConfigError("--repetition: run folder '" + dir +
                      "' holds the repetitions of another configuration (" + differ +
                      " differ); choose another --save_dir or pass --overwrite 1");
  }
  const bool add_one = cfg.repetition > 0 && repetitions && differ.empty();
  if (add_one) return;
  check_run_dir(dir, cfg.overwrite);  // refuses without --overwrite 1, else clears
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename().string().rfind("rep-", 0) == 0) fs::remove_all(e.path(), ec);
  }
}

// The parent's config.json: the flags, with the folder and "repetition": 0 (it holds them all).
nlohmann::json write_config_(const std::string& dir, nlohmann::json mine) {
  mine["run_dir"] = dir;
  mine["repetition"] = 0;  // the folder holds them all
  write_run_json(dir, RunFile::kConfig, mine);
  return mine;
}

// "repetition K of N: STATUS, S seq/s", once repetition k has written its summary.json.
void log_outcome_(const std::string& dir, int64_t k, int64_t repeat,
                  const nlohmann::json& statuses) {
  const std::string rep_summary = run_file(repetition_dir(dir, k), RunFile::kSummary);
  std::error_code ec;
  if (!fs::exists(rep_summary, ec)) return;
  const nlohmann::json s = read_json_file(rep_summary);
  char speed[64] = "";
  if (s.value("sequences_per_s", nlohmann::json()).is_number()) {
    std::snprintf(speed, sizeof(speed), ", %.1f seq/s", s["sequences_per_s"].get<double>());
  }
  log_info("repetition " + std::to_string(k) + " of " + std::to_string(repeat) + ": " +
           statuses[static_cast<size_t>(k - 1)].get<std::string>() + speed);
}

// Why repetitions k+1..last do not run after repetition k ended with exit code `code`.
void warn_rest_not_run_(int64_t k, int64_t last, int code) {
  const std::string why = g_signal.load() != 0
                              ? "was stopped by signal " + std::to_string(g_signal.load())
                              : "ended with exit status " + std::to_string(code);
  log_warn("repetition " + std::to_string(k) + " " + why + "; repetitions " +
           std::to_string(k + 1) + "-" + std::to_string(last) + " do not run (--repetition " +
           std::to_string(k + 1) + " starts the next one)");
}

}  // namespace

RepeatResult run_repetitions(const RunConfig& cfg, const std::string& self) {
  RepeatResult out;
  out.run_dir = run_dir_name(cfg);
  const std::string& dir = out.run_dir;
  nlohmann::json mine = cfg;
  RunFolderLock lock = RunFolderLock::acquire(dir, /*create=*/true);
  prepare_run_folder_(cfg, dir, mine);
  out.config = write_config_(dir, std::move(mine));

  const ForwardSignals forward;
  g_signal = 0;
  const int64_t first = cfg.repetition > 0 ? cfg.repetition : 1;
  const int64_t last = cfg.repetition > 0 ? cfg.repetition : cfg.repeat;
  for (int64_t k = first; k <= last && g_signal.load() == 0; ++k) {
    log_info("repetition " + std::to_string(k) + " of " + std::to_string(cfg.repeat) +
             ", a fresh process: " + repetition_dir(dir, k));
    const int code = run_child_(repetition_args(cfg, self, dir, k));
    out.summary = aggregate_repetitions(dir, cfg.repeat);
    log_outcome_(dir, k, cfg.repeat, out.summary["repetitions"]["statuses"]);
    write_run_json(dir, RunFile::kSummary, out.summary);
    if (code != 0) {
      out.exit_code = code;
      if (k < last) warn_rest_not_run_(k, last, code);
      break;
    }
  }
  if (g_signal.load() != 0 && out.exit_code == 0) out.exit_code = 128 + g_signal.load();
  if (out.summary.is_null()) {
    out.summary = aggregate_repetitions(dir, cfg.repeat);
    write_run_json(dir, RunFile::kSummary, out.summary);
  }
  return out;
}

}  // namespace trainbench
