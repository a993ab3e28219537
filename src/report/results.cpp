// Run-folder files. nlohmann::json already writes NaN/inf as null; callers set "status".
#include "trainbench/report/results.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "trainbench/core/atomic_file.h"
#include "trainbench/core/config.h"
#include "trainbench/core/errors.h"
#include "trainbench/core/run_files.h"

namespace trainbench {

namespace fs = std::filesystem;

void check_run_dir(const std::string& dir, bool overwrite) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (!fs::exists(st)) return;
  if (!fs::is_directory(st)) {
    throw ConfigError("--save_dir: run folder '" + dir +
                      "' exists and is not a folder; choose another --save_dir");
  }
  // The hold (run_lock.h) alone is not a result.
  bool empty = true;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const RunFileRow* file = run_file_of(entry.path().filename().string());
    if (!file || file->value != RunFile::kLock) empty = false;
  }
  if (empty) return;
  if (overwrite) {
    // Every file a run writes goes (core/run_files.h), so that none of them (an old summary,
    // an old trace, an old checkpoint that a later --resume would pick) can be mistaken for
    // this run's; files bench never writes stay.
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const RunFileRow* file = run_file_of(entry.path().filename().string());
      if (file && file->overwrite_clears) fs::remove(entry.path(), ec);
    }
    return;
  }
  throw ConfigError("--save_dir: run folder '" + dir +
                    "' already holds results; choose another --save_dir or pass --overwrite 1");
}

void write_run_json(const std::string& dir, RunFile file, nlohmann::json& value) {
  value["schema_version"] = kSchemaVersion;
  write_file_atomic(run_file(dir, file), value.dump(2) + "\n");
}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw RunError("cannot read '" + path + "'");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw RunError("'" + path + "' is not valid JSON: " + json_message(e));
  }
}

ResultWriter::ResultWriter(std::string dir, int64_t resume_step) : dir_(std::move(dir)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw RunError("cannot create run folder '" + dir_ + "': " + ec.message());
  const std::string path = run_file(dir_, RunFile::kMetrics);
  if (resume_step >= 0) {
    std::ifstream in(path);
    std::string kept;
    for (std::string line; std::getline(in, line);) {
      const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_object() && j.value("step", int64_t{0}) <= resume_step) {
        kept += line + "\n";
        if (j.contains("elapsed_s") && j["elapsed_s"].is_number()) {
          elapsed_before_ = std::max(elapsed_before_, j["elapsed_s"].get<double>());
        }
      }
    }
    write_file_atomic(path, kept);
  }
  const int trunc = resume_step >= 0 ? 0 : O_TRUNC;
  metrics_fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | trunc | O_APPEND | O_CLOEXEC, 0644);
  if (metrics_fd_ < 0) {
    throw RunError("cannot write '" + path + "': " + std::strerror(errno));
  }
}

ResultWriter::~ResultWriter() {
  if (metrics_fd_ >= 0) ::close(metrics_fd_);
}

void ResultWriter::append_metric(nlohmann::json line) {
  line["schema_version"] = kSchemaVersion;
  const std::string text = line.dump() + "\n";
  ssize_t n;
  do {
    n = ::write(metrics_fd_, text.data(), text.size());
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(text.size())) {
    throw RunError("cannot append to '" + dir_ +
                   "/metrics.jsonl': " + (n < 0 ? std::strerror(errno) : "short write"));
  }
}

}  // namespace trainbench
