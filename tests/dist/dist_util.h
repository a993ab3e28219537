// What the multi-process tests share (tests/dist): the tiny model's flags and the commands that
// start ranks.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace trainbench::testing::dist {

// A tiny model, dropout off, so that two ranks and one process see the same numbers.
inline const char* const kArgs =
    " --num_layer 1 --d_model 32 --num_heads 2 --ff_dim 64 --seq_len 32 --steps 20"
    " --warmup_steps 2 --log_every 1 --eval_every 10 --eval_batches 2 --threads 1 --device cpu"
    " --peak_tflops 1 --dropout 0 --dist_timeout 20";

inline std::string launch(int n, int port, const std::string& args) {
  return "bash " TB_SOURCE_DIR "/scripts/launch.sh --port " + std::to_string(port) + " " +
         std::to_string(n) + " " TB_BENCH_EXE " " + args;
}

inline std::string rank_env(int rank, int world, int port) {
  return "RANK=" + std::to_string(rank) + " WORLD_SIZE=" + std::to_string(world) +
         " MASTER_PORT=" + std::to_string(port) + " ";
}

inline std::vector<nlohmann::json> metric_lines(const std::string& dir, const std::string& key) {
  std::vector<nlohmann::json> out;
  std::istringstream in(testing::read_file(dir + "/metrics.jsonl"));
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.contains(key)) out.push_back(j);
  }
  return out;
}

}  // namespace trainbench::testing::dist
