// Graceful stop: the first SIGINT/SIGTERM/SIGHUP asks the run to finish its current step and write
// its files with status "interrupted"; a second one exits at once (every file already written is
// whole: JSON files are replaced atomically and metrics lines go out in single writes).
#pragma once

namespace trainbench {

// Installs the handlers for its lifetime and restores the previous ones after.
class StopSignalGuard {
 public:
  StopSignalGuard();
  ~StopSignalGuard();
  StopSignalGuard(const StopSignalGuard&) = delete;
  StopSignalGuard& operator=(const StopSignalGuard&) = delete;
};

// The signal number that asked to stop (SIGINT, SIGTERM or SIGHUP), or 0.
int stop_signal();

}  // namespace trainbench
