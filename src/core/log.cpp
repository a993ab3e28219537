// spdlog-backed stderr logger (stdout is reserved for result tables).
#include "trainbench/core/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace trainbench {
namespace {

spdlog::logger& logger_() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::stderr_color_st("trainbench");
    l->set_pattern("%^[%L]%$ %v");
    return l;
  }();
  return *logger;
}

}  // namespace

void log_info(const std::string& message) { logger_().info(message); }
void log_warn(const std::string& message) { logger_().warn(message); }
void log_error(const std::string& message) { logger_().error(message); }
void log_set_prefix(const std::string& prefix) {
  // spdlog patterns treat '%' specially; a prefix is plain text.
  std::string escaped;
  for (char c : prefix) escaped += c == '%' ? std::string("%%") : std::string(1, c);
  logger_().set_pattern("%^[%L]%$ " + escaped + "%v");
}
void log_set_quiet(bool quiet) {
  logger_().set_level(quiet ? spdlog::level::warn : spdlog::level::info);
}

}  // namespace trainbench
