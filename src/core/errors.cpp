// Errors: one line for any exception, LibTorch's without their C++ stack.
#include "trainbench/core/errors.h"

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

}  // namespace trainbench
