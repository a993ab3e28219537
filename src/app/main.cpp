// bench: parse → validate → plan → run → exit code (0 ok, 1 runtime failure or diverged, 2
// usage).
#include <csignal>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>

#include "trainbench/app/cli.h"
#include "trainbench/app/repeat.h"
#include "trainbench/app/run.h"
#include "trainbench/app/validate.h"
#include "trainbench/core/config.h"
#include "trainbench/core/errors.h"
#include "trainbench/core/log.h"
#include "trainbench/core/plan.h"
#include "trainbench/core/run_files.h"
#include "trainbench/data/corpus.h"
#include "trainbench/dist/dist.h"
#include "trainbench/report/env_info.h"
#include "trainbench/report/progress.h"
#include "trainbench/report/report.h"
#include "trainbench/report/results.h"

namespace {

// --repeat N: the repetitions as processes of this executable, then the table of their medians.
int repeat_main(const trainbench::RunConfig& cfg) {
  using namespace trainbench;
  const RepeatResult r = run_repetitions(cfg, std::filesystem::read_symlink("/proc/self/exe"));
  // The table's device and flags as a repetition resolved them.
  nlohmann::json config = r.config;
  for (const auto& folder : r.summary.at("repetitions").at("folders")) {
    const std::string file =
        run_file(r.run_dir + "/" + folder.get<std::string>(), RunFile::kConfig);
    if (std::filesystem::exists(file)) config = read_json_file(file);
    break;
  }
  std::cout << summary_table(config, r.summary) << repetitions_line(r.summary)
            << "results: " << r.run_dir << "\n";
  return r.exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace trainbench;
  install_fatal_handler("");  // no C++ stack reaches a user, whatever escapes (core/errors.h)
  if (argc > 1 && std::string(argv[1]) == "report") return report_main(argc - 1, argv + 1);
  // A file size limit (ulimit -f) makes the write that crosses it fail with EFBIG, reported
  // like a full disk, instead of killing the process.
  std::signal(SIGXFSZ, SIG_IGN);
  std::string who;  // "rank N: " in a multi-process run, so every line says which process
  try {
    const DistEnv env = dist_env_from_environment();
    if (env.distributed()) {
      who = "rank " + std::to_string(env.rank) + ": ";
      install_fatal_handler(who);
      log_set_prefix(who);
      log_set_quiet(env.rank != 0);  // only rank 0 reports progress
      // A peer that went away makes socket writes fail with an error we can report, instead
      // of killing this process with SIGPIPE.
      std::signal(SIGPIPE, SIG_IGN);
    }
    const CliResult cli = parse_cli(argc, argv);
    if (cli.help_json) {
      std::cout << flag_table_json().dump(2) << "\n";
      return 0;
    }
    if (cli.help) {
      std::cout << cli.help_text;
      return 0;
    }
    if (cli.version) {
      std::cout << version_text();
      return 0;
    }
    if (!cli.export_corpus.empty()) {
      export_embedded_corpus(cli.export_corpus);
      std::cout << "wrote the embedded corpus (" << kEmbeddedCorpusBytes << " bytes) to "
                << cli.export_corpus << "\n";
      return 0;
    }
    const RunPlan plan = validate(cli.config, env);  // every decision, once
    if (cli.config.repeat > 1) return repeat_main(cli.config);
    const RunResult result = run_benchmark(plan);
    if (env.rank == 0) {
      const nlohmann::json config = read_json_file(run_file(result.run_dir, RunFile::kConfig));
      std::cout << summary_table(config, result.summary);
      std::cout << "results: " << result.run_dir << "\n";
    }
    if (result.status == RunStatus::kInterrupted) return 128 + result.stop_signal;  // 130 / 143
    return result.status == RunStatus::kCompleted ? 0 : 1;
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "bench: %serror: %s\n", who.c_str(), e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench: %sfailed: %s\n", who.c_str(), error_text(e).c_str());
    return 1;
  }
}
