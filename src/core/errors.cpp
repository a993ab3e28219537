// Errors: one line for any exception, LibTorch's without their C++ stack.
#include "trainbench/core/errors.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include <c10/util/Exception.h>

namespace trainbench {

std::string error_text(const std::exception& e) {
  const auto* c10 = dynamic_cast<const c10::Error*>(&e);
  std::string m = c10 ? c10->what_without_backtrace() : e.what();
  const size_t stack = m.find("\nException raised from ");
  if (stack != std::string::npos) m.erase(stack);
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  return m;
}

namespace {

// Never destroyed: a terminate during static destruction still finds them.
struct FatalState {
  std::mutex mutex;
  std::string who;
  std::function<void(const std::string&)> hook;
};
FatalState& fatal_() {
  static auto* state = new FatalState;
  return *state;
}

// The message of the exception in flight, if any: std::terminate keeps it current.
std::string current_error_() {
  const std::exception_ptr p = std::current_exception();
  if (!p) return "std::terminate was called with no exception in flight";
  try {
    std::rethrow_exception(p);
  } catch (const std::exception& e) {
    return error_text(e);
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

[[noreturn]] void on_terminate_() {
  // A second fault (in the hook, or on another thread at once) exits without the hook.
  static std::atomic<bool> entered{false};
  if (entered.exchange(true)) std::_Exit(1);
  std::string what;
  try {
    what = current_error_();
  } catch (...) {  // out of memory while reading it
    std::fputs("bench: failed: (an error whose message could not be read)\n", stderr);
    std::_Exit(1);
  }
  std::function<void(const std::string&)> hook;
  std::string who;
  {
    std::lock_guard<std::mutex> lock(fatal_().mutex);
    hook = fatal_().hook;
    who = fatal_().who;
  }
  std::fprintf(stderr, "bench: %sfailed: %s\n", who.c_str(), what.c_str());
  std::fflush(stderr);
  if (hook) {
    try {
      hook(what);
    } catch (...) {
    }
  }
  std::fflush(stdout);
  // No exit handlers: the process is in an unknown state (a lock may be held).
  std::_Exit(1);
}

}  // namespace

void install_fatal_handler(const std::string& who) {
  {
    std::lock_guard<std::mutex> lock(fatal_().mutex);
    fatal_().who = who;
  }
  std::set_terminate(&on_terminate_);
}

void set_fatal_hook(std::function<void(const std::string&)> hook) {
  std::lock_guard<std::mutex> lock(fatal_().mutex);
  fatal_().hook = std::move(hook);
}

}  // namespace trainbench
