// Temporary file + rename (see atomic_file.h).
#include "trainbench/core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "trainbench/core/errors.h"

namespace trainbench {
namespace {

std::string temp_name_(const std::string& path) {
  return path + ".tmp." + std::to_string(::getpid());
}

// Moves tmp over path, or removes tmp and returns why it could not.
std::string commit_(const std::string& tmp, const std::string& path) {
  if (std::rename(tmp.c_str(), path.c_str()) == 0) return "";
  const std::string why = std::strerror(errno);
  std::remove(tmp.c_str());
  return why;
}

}  // namespace

std::string write_bytes(const std::string& file, std::string_view bytes) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int error = fd < 0 ? errno : 0;
  for (size_t done = 0; error == 0 && done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) error = n < 0 ? errno : ENOSPC;
    if (n > 0) done += static_cast<size_t>(n);
  }
  if (fd >= 0 && ::close(fd) != 0 && error == 0) error = errno;
  return error != 0 ? std::strerror(error) : "";
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  const std::string tmp = temp_name_(path);
  const std::string error = write_bytes(tmp, bytes);
  if (!error.empty()) {
    std::remove(tmp.c_str());
    throw RunError("cannot write '" + tmp + "': " + error);
  }
  const std::string why = commit_(tmp, path);
  if (!why.empty()) throw RunError("cannot move '" + tmp + "' to '" + path + "': " + why);
}

void write_file_atomic(const std::string& path,
                       const std::function<std::string(const std::string& tmp)>& fill,
                       const std::string& what) {
  const std::string tmp = temp_name_(path);
  const std::string error = fill(tmp);
  if (!error.empty()) {
    std::remove(tmp.c_str());
    throw RunError(what + " '" + path + "': " + error);
  }
  const std::string why = commit_(tmp, path);
  if (!why.empty()) throw RunError(what + " '" + path + "': " + why);
}

}  // namespace trainbench
