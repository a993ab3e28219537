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
#include <vector>

#include <zlib.h>

#include "trainbench/core/atomic_file.h"
#include "trainbench/core/errors.h"
#include "trainbench/core/flags.h"
#include "trainbench/core/log.h"
#include "trainbench/core/run_files.h"

namespace trainbench {

namespace fs = std::filesystem;

namespace {

const char* const kPrefix = name_of(RunFile::kCheckpoint);

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
// The bytes written and their CRC-32 go to *sum (the checkpoint's record, see kSumSuffix).
struct Sum {
  uint64_t bytes = 0;
  uint32_t crc = 0;
};
std::string write_archive_(torch::serialize::OutputArchive& archive, const std::string& path,
                           Sum* sum) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return std::strerror(errno);
  int error = 0;
  *sum = Sum{};
  try {
    archive.save_to([&](const void* data, size_t n) -> size_t {
      const char* p = static_cast<const char*>(data);
      sum->bytes += n;
      sum->crc = static_cast<uint32_t>(
          crc32(sum->crc, reinterpret_cast<const Bytef*>(p), static_cast<uInt>(n)));
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

// checkpoint-N.pt.sum: "bytes crc32" of checkpoint-N.pt, written (temp + rename) before the
// checkpoint is moved into place, so a resume can tell a truncated or altered checkpoint from
// a whole one without LibTorch's zip reader.
const char* kSumSuffix = ".sum";

void write_sum_(const std::string& path, const Sum& sum) {
  char text[64];
  std::snprintf(text, sizeof(text), "%llu %08x\n", static_cast<unsigned long long>(sum.bytes),
                static_cast<unsigned>(sum.crc));
  write_file_atomic(path + kSumSuffix, text);
}

// Why the checkpoint at `path` is not whole ("" when it is). Its record is written before it.
std::string damage_(const std::string& path) {
  FILE* f = std::fopen((path + kSumSuffix).c_str(), "r");
  if (!f) return "its record " + path + kSumSuffix + " is missing";
  unsigned long long want_bytes = 0;
  unsigned want_crc = 0;
  const int got = std::fscanf(f, "%llu %x", &want_bytes, &want_crc);
  std::fclose(f);
  if (got != 2) return "its record " + path + kSumSuffix + " is unreadable";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::strerror(errno);
  uint64_t bytes = 0;
  uLong crc = crc32(0, nullptr, 0);
  std::vector<unsigned char> buf(1 << 20);
  for (ssize_t n; (n = ::read(fd, buf.data(), buf.size())) > 0;) {
    bytes += static_cast<uint64_t>(n);
    crc = crc32(crc, buf.data(), static_cast<uInt>(n));
  }
  ::close(fd);
  if (bytes != want_bytes) {
    return std::to_string(bytes) + " bytes where " + std::to_string(want_bytes) +
           " were written (truncated?)";
  }
  if (static_cast<uint32_t>(crc) != want_crc) return "its CRC-32 differs from the one written";
  return "";
}

// Restores trainer and the default RNG from a checkpoint; returns its step.
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
  write_file_atomic(
      path,
      [&](const std::string& tmp) {
        Sum sum;
        const std::string error = write_archive_(archive, tmp, &sum);
        if (!error.empty()) return error;
        // The record first, then the checkpoint: a checkpoint is never newer than what checks it.
        try {
          write_sum_(path, sum);
        } catch (const RunError& e) {
          return std::string(e.what());
        }
        return std::string();
      },
      "cannot write checkpoint");
  const std::vector<std::string> all = checkpoints_(run_dir);
  for (size_t i = 0; i + static_cast<size_t>(keep) < all.size(); ++i) {
    std::remove(all[i].c_str());
    std::remove((all[i] + kSumSuffix).c_str());
  }
}

std::string latest_checkpoint(const std::string& run_dir) {
  const std::vector<std::string> all = checkpoints_(run_dir);
  return all.empty() ? std::string() : all.back();
}

std::pair<std::string, int64_t> load_newest_whole_checkpoint(const std::string& run_dir,
                                                             Trainer& trainer) {
  const std::vector<std::string> all = checkpoints_(run_dir);
  std::string skipped;
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    std::string why = damage_(*it);
    if (why.empty()) {
      try {
        return {*it, load_checkpoint(*it, trainer)};
      } catch (const std::exception& e) {
        why = error_text(e);
      }
    }
    log_warn("checkpoint '" + *it + "' is damaged (" + why +
             "); left in place, resuming from an older one");
    skipped += (skipped.empty() ? "" : "; ") + *it + ": " + why;
  }
  throw ConfigError("--resume: '" + run_dir + "' holds no checkpoint that reads whole (" + skipped +
                    "); start the run again");
}

std::vector<std::string> resume_config_differences(const nlohmann::json& saved,
                                                   const nlohmann::json& now) {
  std::vector<std::string> differ;
  for (const auto& [key, value] : now.items()) {
    if (resume_may_change(key)) continue;  // the flag table's resume rule
    if (!saved.contains(key) || saved.at(key) != value) differ.push_back(key);
  }
  return differ;
}

}  // namespace trainbench
