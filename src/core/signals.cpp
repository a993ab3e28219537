// Async-signal-safe stop flag: the handler only stores a number, or calls _exit.
#include "trainbench/core/signals.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace trainbench {
namespace {

std::atomic<int> g_stop_signal{0};
struct sigaction g_old_int, g_old_term, g_old_hup;

extern "C" void on_stop_signal_(int sig) {
  int expected = 0;
  if (!g_stop_signal.compare_exchange_strong(expected, sig)) _exit(128 + sig);
  // Said at once (a step can take minutes): write(2) is async-signal-safe.
  static const char kMsg[] =
      "\nbench: stopping after this step and writing the results so far (again to quit now)\n";
  const ssize_t w = write(STDERR_FILENO, kMsg, sizeof(kMsg) - 1);
  (void)w;
}

}  // namespace

StopSignalGuard::StopSignalGuard() {
  g_stop_signal = 0;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal_;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
  sigaction(SIGHUP, &sa, &g_old_hup);  // a closed terminal or tmux window: as SIGTERM
}

StopSignalGuard::~StopSignalGuard() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  sigaction(SIGHUP, &g_old_hup, nullptr);
}

int stop_signal() { return g_stop_signal.load(); }

}  // namespace trainbench
