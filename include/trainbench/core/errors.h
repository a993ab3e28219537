// The two errors every layer may throw, and how the top level prints any exception.
#pragma once

#include <exception>
#include <functional>
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

// An exception that no caller can catch (thrown from a destructor or another noexcept
// function, escaping a worker thread, or std::terminate called) ends bench through this
// handler instead of the C++ runtime's abort: one line on stderr, "bench: <who>failed: <what>"
// (LibTorch's message without its stack), then the fatal hook, then exit status 1. `who` is
// the "rank N: " prefix of a multi-process run, or "".
void install_fatal_handler(const std::string& who);
// What the handler does before it exits, given the error's line (a run with its folder open
// records summary.json as failed); {} clears it. A hook that throws is ignored.
void set_fatal_hook(std::function<void(const std::string&)> hook);

}  // namespace trainbench
