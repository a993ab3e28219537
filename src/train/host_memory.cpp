// The caching CPU allocator behind --keep_memory (see host_memory.h).
#include "trainbench/train/host_memory.h"

#include <sys/resource.h>

#include <atomic>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

namespace trainbench {
namespace {

// Sizes rounded up to whole pages, so that near sizes share a free list (< 3% more bytes).
constexpr size_t kPage = 4096;
size_t rounded_(size_t n) { return (n + kPage - 1) / kPage * kPage; }

// Installed once and never taken out: every CPU block of the process, ours or LibTorch's, is
// then freed through this allocator's one deleter (free_any_), whichever way it is freed —
// a tensor's DataPtr or c10::Allocator::raw_deallocate, which oneDNN's scratch memory takes
// (ideep asks GetAllocator(CPU) for raw_allocate/raw_deallocate). keep_freed_memory(false)
// sends new requests on to LibTorch's own allocator instead of taking it out again, so a
// block from either side can still be freed from the other after any switch.
class CachingCpuAllocator final : public c10::Allocator {
 public:
  explicit CachingCpuAllocator(c10::Allocator* libtorch) : libtorch_(libtorch) {}

  c10::DataPtr allocate(size_t n) override {
    if (!keep_.load(std::memory_order_relaxed)) return libtorch_->allocate(n);
    if (n < static_cast<size_t>(kKeptBlockBytes)) {
      void* p = c10::alloc_cpu(n);  // size 0 too: alloc_cpu returns nullptr, free_any_ takes it
      return {p, p, &free_any_, c10::Device(c10::DeviceType::CPU)};
    }
    const size_t size = rounded_(n);
    void* p = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      std::vector<void*>& free = free_[size];
      if (!free.empty()) {
        p = free.back();
        free.pop_back();
        free_bytes_ -= static_cast<int64_t>(size);
      }
    }
    if (p == nullptr) {
      p = c10::alloc_cpu(size);  // outside the lock: a fresh block is the slow case
      std::lock_guard<std::mutex> lock(mutex_);
      size_of_[p] = size;
      total_bytes_ += static_cast<int64_t>(size);
    }
    // data == context: a simple data pointer, as LibTorch's own CPU allocator gives (and as
    // raw_allocate requires).
    return {p, p, &free_any_, c10::Device(c10::DeviceType::CPU)};
  }

  // Frees what allocate() or LibTorch's allocator gave: a kept block goes to its free list,
  // anything else (small blocks, LibTorch's own) back to the C library as LibTorch would.
  c10::DeleterFnPtr raw_deleter() const override { return &free_any_; }

  void copy_data(void* dest, const void* src, size_t count) const override {
    default_copy_data(dest, src, count);
  }

  void set_keep(bool keep) { keep_.store(keep, std::memory_order_relaxed); }

  KeptMemory figures() {
    std::lock_guard<std::mutex> lock(mutex_);
    return {free_bytes_, total_bytes_};
  }

  static CachingCpuAllocator& instance() {
    // Never destroyed: tensors alive at exit still return their blocks to it. The first call
    // saves LibTorch's own allocator, before anything replaced it.
    static auto* one = new CachingCpuAllocator(c10::GetCPUAllocator());
    return *one;
  }

 private:
  static void free_any_(void* p) {
    if (p == nullptr) return;
    if (!instance().give_back_(p)) c10::free_cpu(p);
  }

  bool give_back_(void* p) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = size_of_.find(p);
    if (it == size_of_.end()) return false;
    free_[it->second].push_back(p);
    free_bytes_ += static_cast<int64_t>(it->second);
    return true;
  }

  c10::Allocator* const libtorch_;
  std::atomic<bool> keep_{false};
  std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // size -> blocks free for reuse
  std::unordered_map<void*, size_t> size_of_;            // every kept block -> its size
  int64_t free_bytes_ = 0, total_bytes_ = 0;
};

}  // namespace

void keep_freed_memory(bool keep) {
  CachingCpuAllocator& ours = CachingCpuAllocator::instance();
  ours.set_keep(keep);
  // Installed on the first call that keeps memory; from then on it stays (see above).
  if (keep) c10::SetCPUAllocator(&ours);
}

KeptMemory kept_memory() { return CachingCpuAllocator::instance().figures(); }

int64_t minor_page_faults() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_minflt);
}

}  // namespace trainbench
