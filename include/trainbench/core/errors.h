// The two errors every layer may throw, and how the top level prints any exception.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>

namespace trainbench {

// A bad flag or input: the run never starts and main exits with status 2.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A failure while running (I/O, a kernel refusing): main exits with status 1.
class RunError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An exception's message for one line of output: a LibTorch error without its C++ stack
// ("Exception raised from ..." and the frames), also where it was wrapped into another error.
std::string error_text(const std::exception& e);

}  // namespace trainbench
