// Helpers shared by the tests: temporary folders, tiny configs, running the bench binary.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainbench/app/run.h"
#include "trainbench/app/validate.h"
#include "trainbench/core/config.h"
#include "trainbench/core/plan.h"
#include "trainbench/data/batch_loader.h"
#include "trainbench/report/summary_fields.h"
#include "trainbench/train/trainer.h"

namespace trainbench::testing {

// A fresh, empty temporary folder removed at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tbtest-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A model small enough to train in milliseconds on one core.
inline RunConfig tiny_config() {
  RunConfig c;
  c.num_layer = 1;
  c.d_model = 32;
  c.num_heads = 2;
  c.ff_dim = 64;
  c.seq_len = 32;
  c.batch_size = 4;
  c.steps = 6;
  c.warmup_steps = 1;
  c.log_every = 2;
  c.eval_every = 0;
  c.eval_batches = 2;
  c.threads = 1;
  c.device = DeviceChoice::kCpu;
  c.peak_tflops = 1.0;  // skip the GEMM probe
  return c;
}

// Losses of `steps` steps of a fresh trainer seeded by cfg.seed, on the embedded corpus, on the
// CPU or on CUDA.
inline std::vector<double> train_losses(RunConfig cfg, int steps,
                                        torch::Device device = torch::kCPU) {
  cfg.device = device.is_cuda() ? DeviceChoice::kCuda : DeviceChoice::kCpu;
  torch::manual_seed(static_cast<uint64_t>(cfg.seed));
  Trainer trainer(make_plan(cfg));
  SamplerOptions o;
  o.train_end = 1'000'000;
  o.seq_len = cfg.seq_len;
  o.batch_size = cfg.batch_size;
  o.seed = static_cast<uint64_t>(cfg.seed);
  EpochSampler sampler(o);
  const ByteCorpus corpus = embedded_corpus();
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i) {
    losses.push_back(
        trainer.step(make_batch(corpus, sampler.next_batch(), cfg.seq_len, false)).item<double>());
  }
  return losses;
}

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// The flags of `base` with those of `extra` in their place (bench refuses a flag given twice):
// each flag is "--name value" or "--name=value"; extra's new flags come after base's.
inline std::string merge_flags(const std::string& base, const std::string& extra) {
  auto parse = [](const std::string& text) {
    std::vector<std::pair<std::string, std::string>> out;  // (name, "--name value" as written)
    std::istringstream in(text);
    std::vector<std::string> tokens;
    for (std::string t; in >> t;) tokens.push_back(t);
    for (size_t i = 0; i < tokens.size(); ++i) {
      const std::string name = tokens[i].substr(0, tokens[i].find('='));
      std::string flag = tokens[i];
      if (tokens[i].find('=') == std::string::npos && i + 1 < tokens.size() &&
          tokens[i + 1].rfind("--", 0) != 0) {
        flag += " " + tokens[++i];
      }
      out.emplace_back(name, flag);
    }
    return out;
  };
  auto merged = parse(base);
  for (const auto& [name, flag] : parse(extra)) {
    auto at =
        std::find_if(merged.begin(), merged.end(), [&](const auto& f) { return f.first == name; });
    if (at != merged.end()) {
      at->second = flag;
    } else {
      merged.emplace_back(name, flag);
    }
  }
  std::string out;
  for (const auto& f : merged) out += " " + f.second;
  return out;
}

// The keys a summary.json holds by report/summary_fields.h: the rows written `when`, those the
// peers write too when `peers`, and the schema_version every file carries.
inline std::set<std::string> summary_keys(std::set<SummaryWhen> when, bool peers) {
  std::set<std::string> out = {"schema_version"};
  for (const SummaryField& f : kSummaryFields) {
    if (when.count(f.when) && (!peers || f.peers)) out.insert(f.key);
  }
  return out;
}
inline std::set<std::string> keys_of(const nlohmann::json& object) {
  std::set<std::string> out;
  for (const auto& item : object.items()) out.insert(item.key());
  return out;
}

// How often `what` occurs in `text`.
inline int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// One figure of every training window in a run folder's metrics.jsonl (the lines with a
// "loss"), in order: the losses by default, or e.g. "elapsed_s"; with `of` "valid_bpb", the
// evaluations' lines instead.
inline std::vector<double> window_values(const std::string& run, const std::string& key = "loss",
                                         const std::string& of = "loss") {
  std::vector<double> out;
  std::istringstream in(read_file(run + "/metrics.jsonl"));
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.contains(of)) out.push_back(j[key].get<double>());
  }
  return out;
}

// A TCP port that was free a moment ago. It is drawn below the kernel's ephemeral range
// (32768+), so that the outgoing connections of tests running alongside cannot take it before
// the rank that should listen on it does.
inline int free_port() {
  static std::mt19937 rng(std::random_device{}());
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int port = 20000 + static_cast<int>(rng() % 12000);
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    close(fd);
    if (ok) return port;
  }
  ADD_FAILURE() << "no free TCP port in [20000, 32000)";
  return 0;
}

// Runs a shell command line, capturing its output and exit status.
inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Runs the bench binary with the given arguments: the one built beside the tests, or the one
// TB_BENCH_EXE names at run time (the GPU call runs carried binaries where the build folder's
// path does not exist: scripts/gpu_bench.sh).
inline CommandResult run_bench(const std::string& args) {
  const char* exe = std::getenv("TB_BENCH_EXE");
  return run_command(std::string(exe && *exe ? exe : TB_BENCH_EXE) + " " + args);
}

// The resume tests' pair from `c` (log_every 1): a 40-step run in "straight" and a 20-step run
// with checkpoints at 10 and 20 in "split" (to be resumed to 40 and compared with the first).
struct StraightAndSplit {
  RunResult straight, first;
};
inline StraightAndSplit straight_and_split(RunConfig c, const TempDir& dir) {
  c.log_every = 1;
  c.steps = 40;
  c.save_dir = dir / "straight";
  StraightAndSplit out;
  out.straight = run_benchmark(c);
  c.save_dir = dir / "split";
  c.steps = 20;
  c.checkpoint_every = 10;
  out.first = run_benchmark(c);
  return out;
}

}  // namespace trainbench::testing
