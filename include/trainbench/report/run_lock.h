// One bench process at a time writes a run folder. The hold is an exclusive flock(2) on
// DIR/.lock (core/run_files.h), taken without waiting and kept by the open descriptor for the life
// of the process, so the kernel releases it however the process ends (exit, crash, SIGKILL, the OOM
// killer); nothing is left to clean up. The file's text (pid, host, start time) only names the
// holder in the refusal; the text a dead holder left means nothing and is overwritten.
// On NFS, flock is carried by the NFS lock manager (NFSv4, or v3 with lockd) and holds across
// clients; a file system that refuses locks gets a warning and no guarantee (docs/CHECKPOINTS.md).
#pragma once

#include <string>

namespace trainbench {

// True while a live bench process holds `dir` (a run still training, or resuming).
bool run_folder_in_use(const std::string& dir);

class RunFolderLock {
 public:
  // Takes the hold on `dir`, creating the folder when `create` (and remembering that it did).
  // Throws ConfigError when another live process holds it ("run folder 'D' is in use by bench
  // pid 123 on host h since 2026-12-01T10:00:00Z; ..."), RunError when the folder or its lock
  // file cannot be made.
  static RunFolderLock acquire(const std::string& dir, bool create);

  RunFolderLock() = default;
  RunFolderLock(RunFolderLock&& other) noexcept;
  RunFolderLock& operator=(RunFolderLock&& other) noexcept;
  RunFolderLock(const RunFolderLock&) = delete;
  RunFolderLock& operator=(const RunFolderLock&) = delete;
  // Releases the hold; a folder this lock created that holds nothing but the lock file (a run
  // that failed before writing) is removed again.
  ~RunFolderLock();

  bool held() const { return fd_ >= 0; }
  bool created() const { return created_; }

 private:
  void release_();
  std::string dir_;
  std::string top_;  // the highest folder acquire() created (dir_ or a parent), or ""
  int fd_ = -1;
  bool created_ = false;
};

}  // namespace trainbench
