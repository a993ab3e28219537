// The run folder's hold (see run_lock.h).
#include "trainbench/report/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "trainbench/core/errors.h"
#include "trainbench/core/log.h"
#include "trainbench/core/run_files.h"
#include "trainbench/core/timing.h"

namespace trainbench {

namespace fs = std::filesystem;

bool run_folder_in_use(const std::string& dir) {
  const int fd = ::open(run_file(dir, RunFile::kLock).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // drops the shared hold taken when it was free
  return held;
}

RunFolderLock RunFolderLock::acquire(const std::string& dir, bool create) {
  RunFolderLock lock;
  lock.dir_ = dir;
  std::error_code ec;
  if (create && !fs::exists(dir, ec)) {
    // The highest folder this creates, so that a failed run leaves none of them behind.
    fs::path top = fs::absolute(dir, ec);
    while (top.has_parent_path() && top.parent_path() != top && !fs::exists(top.parent_path())) {
      top = top.parent_path();
    }
    lock.top_ = top.string();
    fs::create_directories(dir, ec);
    if (ec) throw RunError("cannot create run folder '" + dir + "': " + ec.message());
    lock.created_ = true;
  }
  const std::string path = run_file(dir, RunFile::kLock);
  lock.fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock.fd_ < 0) {
    throw RunError("cannot open '" + path + "' to hold the run folder: " + std::strerror(errno));
  }
  if (::flock(lock.fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err == EWOULDBLOCK) {
      // The holder names itself just after its flock: a refusal in between waits for the name
      // (up to half a second).
      std::string holder;
      for (int i = 0; i < 50 && holder.empty(); ++i) {
        if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        std::ifstream in(path);
        std::getline(in, holder);
      }
      throw ConfigError("run folder '" + dir + "' is in use by " +
                        (holder.empty() ? std::string("another bench process") : holder) +
                        "; wait for it to end, or choose another --save_dir");
    }
    // ENOLCK / EOPNOTSUPP: a file system without locks (some network mounts).
    log_warn("cannot hold run folder '" + dir + "' (" + std::strerror(err) +
             "): another bench process could write it at the same time");
    return lock;
  }
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::ostringstream who;
  who << "bench pid " << getpid() << " on host " << host << " since " << utc_now_iso8601() << "\n";
  const std::string text = who.str();
  if (::ftruncate(lock.fd_, 0) == 0) {
    const ssize_t w = ::pwrite(lock.fd_, text.data(), text.size(), 0);
    (void)w;  // the text only names the holder; the hold is the flock
  }
  return lock;
}

RunFolderLock::RunFolderLock(RunFolderLock&& other) noexcept { *this = std::move(other); }

RunFolderLock& RunFolderLock::operator=(RunFolderLock&& other) noexcept {
  if (this != &other) {
    release_();
    dir_ = std::move(other.dir_);
    fd_ = other.fd_;
    created_ = other.created_;
    top_ = std::move(other.top_);
    other.fd_ = -1;
    other.created_ = false;
  }
  return *this;
}

RunFolderLock::~RunFolderLock() { release_(); }

void RunFolderLock::release_() {
  if (fd_ < 0 && !created_) return;
  if (created_) {
    // Only a folder that holds nothing but the lock file goes: a run that wrote results keeps
    // them.
    std::error_code ec;
    bool only_lock = true;
    for (const auto& e : fs::directory_iterator(dir_, ec)) {
      if (e.path().filename() != name_of(RunFile::kLock)) only_lock = false;
    }
    if (!ec && only_lock) {
      fs::remove_all(dir_, ec);
      // The parents it created, while they are empty (fs::remove leaves a non-empty one).
      for (fs::path p = fs::absolute(dir_, ec).parent_path();
           !top_.empty() && p.string().size() >= top_.size() && fs::remove(p, ec);) {
        if (p.string() == top_) break;
        p = p.parent_path();
      }
    }
  }
  if (fd_ >= 0) ::close(fd_);  // releases the flock
  fd_ = -1;
  created_ = false;
}

}  // namespace trainbench
