// libFuzzer target: the flag parser and validation on arbitrary argument lists (the input is
// split at NUL bytes into at most 24 arguments). Only ConfigError may come out.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "trainbench/app/cli.h"
#include "trainbench/app/validate.h"
#include "trainbench/core/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args{"bench"};
  std::string current;
  for (size_t i = 0; i < size && args.size() < 24; ++i) {
    if (data[i] == 0) {
      args.push_back(current);
      current.clear();
    } else {
      current += static_cast<char>(data[i]);
    }
  }
  if (!current.empty() && args.size() < 24) args.push_back(current);
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    const trainbench::CliResult r =
        trainbench::parse_cli(static_cast<int>(argv.size()), argv.data());
    if (!r.help) trainbench::validate(r.config);
  } catch (const trainbench::ConfigError&) {
  }
  return 0;
}
