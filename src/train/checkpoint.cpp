// Checkpoint files: one torch::serialize archive holding sub-archives for the model and the
// optimizer, plus the step, the CPU generator state and the loss-scaler state.
#include "trainbench/train/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "trainbench/core/flags.h"

namespace trainbench {

namespace fs = std::filesystem;

namespace {

const char* kPrefix = "checkpoint-";

std::vector<std::string> checkpoints_(const std::string& run_dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(run_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kPrefix, 0) != 0 || entry.path().extension() != ".pt") continue;
    try {
      found.emplace_back(std::stoll(name.substr(std::string(kPrefix).size())), entry.path());
    } catch (const std::exception&) {
    }
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> paths;
  for (const auto& f : found) paths.push_back(f.second);
  return paths;
}

// Streams the archive into `path` through our own writer and returns "" or why it failed.
// LibTorch's file writer throws a second time from its destructor when a write fails (a full
// disk, a file size limit), which ends the process in std::terminate; here a failed write is
// remembered, the rest of the archive is passed over, and the error comes back afterwards.
std::string write_archive_(torch::serialize::OutputArchive& archive, const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return std::strerror(errno);
  int error = 0;
  try {
    archive.save_to([&](const void* data, size_t n) -> size_t {
      const char* p = static_cast<const char*>(data);
      for (size_t left = n; left > 0 && error == 0;) {
        const ssize_t w = ::write(fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) error = errno;
        if (w > 0) p += w, left -= static_cast<size_t>(w);
      }
      return n;  // what the archive asked for, so that it finishes and unwinds cleanly
    });
  } catch (const c10::Error& e) {
    ::close(fd);
    return e.what_without_backtrace();
  }
  if (::close(fd) != 0 && error == 0) error = errno;
  return error ? std::strerror(error) : "";
}

}  // namespace

void save_checkpoint(const std::string& run_dir, int64_t step, Trainer& trainer, int64_t keep) {
  torch::serialize::OutputArchive archive, model, optimizer;
  trainer.model().save(model);
  if (FusedAdam* fused = trainer.fused_adam()) {
    fused->save(optimizer);
  } else {
    trainer.optimizer().save(optimizer);
  }
  archive.write("model", model);
  archive.write("optimizer", optimizer);
  archive.write("step", c10::IValue(step));
  {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    archive.write("rng_cpu", gen.get_state(), /*is_buffer=*/true);
  }
  const LossScaler& s = trainer.scaler();
  archive.write("scaler_scale", c10::IValue(s.scale()));
  archive.write("scaler_growth_tracker", c10::IValue(s.growth_tracker()));
  archive.write("scaler_skipped", c10::IValue(s.skipped_steps()));
  const std::string path = run_dir + "/" + kPrefix + std::to_string(step) + ".pt";
  const std::string tmp = path + ".tmp";
  const std::string error = write_archive_(archive, tmp);
  if (!error.empty()) {
    std::remove(tmp.c_str());
    throw RunError("cannot write checkpoint '" + path + "': " + error);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw RunError("cannot move '" + tmp + "' to '" + path + "'");
  }
  const std::vector<std::string> all = checkpoints_(run_dir);
  for (size_t i = 0; i + static_cast<size_t>(keep) < all.size(); ++i) std::remove(all[i].c_str());
}

std::string latest_checkpoint(const std::string& run_dir) {
  const std::vector<std::string> all = checkpoints_(run_dir);
  return all.empty() ? std::string() : all.back();
}

int64_t load_checkpoint(const std::string& path, Trainer& trainer) {
  torch::serialize::InputArchive archive, model, optimizer;
  try {
    archive.load_from(path);
    archive.read("model", model);
    archive.read("optimizer", optimizer);
  } catch (const c10::Error& e) {
    throw RunError("cannot read checkpoint '" + path + "': " + e.what_without_backtrace());
  }
  trainer.model().load(model);
  if (FusedAdam* fused = trainer.fused_adam()) {
    fused->load(optimizer);
  } else {
    trainer.optimizer().load(optimizer);
  }
  c10::IValue step, scale, tracker, skipped;
  archive.read("step", step);
  archive.read("scaler_scale", scale);
  archive.read("scaler_growth_tracker", tracker);
  archive.read("scaler_skipped", skipped);
  torch::Tensor rng;
  archive.read("rng_cpu", rng, /*is_buffer=*/true);
  {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(rng);
  }
  trainer.restore(step.toInt(), scale.toDouble(), tracker.toInt(), skipped.toInt());
  return step.toInt();
}

std::vector<std::string> resume_config_differences(const nlohmann::json& saved,
                                                   const nlohmann::json& now) {
  std::vector<std::string> differ;
  for (const auto& [key, value] : now.items()) {
    if (resume_may_change(key)) continue;  // the flag table's resume rule
    // --lowp_gemm came later: a folder without it ran the dtype's own GEMMs.
    if (key == "lowp_gemm" && !saved.contains(key) && value == "native") continue;
    // same_setting: a switch saved as 0/1 (before switches were bools) equals false/true.
    if (!saved.contains(key) || !same_setting(saved.at(key), value)) differ.push_back(key);
  }
  return differ;
}

}  // namespace trainbench
