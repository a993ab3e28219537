// libFuzzer target: the zip reader on arbitrary bytes. A ConfigError is the expected answer to
// bad input; anything else (a crash, a sanitizer report, another exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "trainbench/core/config.h"
#include "trainbench/data/corpus.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    std::string member;
    trainbench::unzip_single_member(data, static_cast<int64_t>(size), "fuzz.zip", &member);
  } catch (const trainbench::ConfigError&) {
  }
  return 0;
}
