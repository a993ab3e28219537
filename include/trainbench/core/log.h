// Logging to stderr through spdlog. Kept in its own library whose .cpp includes no torch
// header, so a LibTorch 2.x build (which bundles its own {fmt}) never meets Debian's fmt.
#pragma once

#include <string>

namespace trainbench {

void log_info(const std::string& message);
void log_warn(const std::string& message);
void log_error(const std::string& message);

// Quiet mode drops info lines (warnings and errors still print); used by tests and by the
// ranks other than 0 of a multi-process run.
void log_set_quiet(bool quiet);
// Text put before every message (e.g. "rank 1: ").
void log_set_prefix(const std::string& prefix);

}  // namespace trainbench
