// The caching CPU allocator behind --keep_memory (see host_memory.h).
#include "trainbench/core/host_memory.h"

#include <sys/resource.h>

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

class CachingCpuAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) override {
    if (n < static_cast<size_t>(kKeptBlockBytes)) {
      void* p = c10::alloc_cpu(n);
      return {p, p, &free_small_, c10::Device(c10::DeviceType::CPU)};
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
    // data == context: a simple data pointer, as LibTorch's own CPU allocator gives.
    return {p, p, &free_kept_, c10::Device(c10::DeviceType::CPU)};
  }

  void copy_data(void* dest, const void* src, size_t count) const override {
    default_copy_data(dest, src, count);
  }

  KeptMemory figures() {
    std::lock_guard<std::mutex> lock(mutex_);
    return {free_bytes_, total_bytes_};
  }

  static CachingCpuAllocator& instance() {
    // Never destroyed: tensors alive at exit still return their blocks to it.
    static auto* one = new CachingCpuAllocator();
    return *one;
  }

 private:
  static void free_small_(void* p) { c10::free_cpu(p); }
  static void free_kept_(void* p) { instance().give_back_(p); }

  void give_back_(void* p) {
    std::lock_guard<std::mutex> lock(mutex_);
    const size_t size = size_of_.at(p);
    free_[size].push_back(p);
    free_bytes_ += static_cast<int64_t>(size);
  }

  std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // size -> blocks free for reuse
  std::unordered_map<void*, size_t> size_of_;            // every kept block -> its size
  int64_t free_bytes_ = 0, total_bytes_ = 0;
};

}  // namespace

void keep_freed_memory(bool keep) {
  // LibTorch's own allocator, as it stood before the first call.
  static c10::Allocator* const libtorch = c10::GetCPUAllocator();
  c10::SetCPUAllocator(keep ? &CachingCpuAllocator::instance() : libtorch);
}

KeptMemory kept_memory() { return CachingCpuAllocator::instance().figures(); }

int64_t minor_page_faults() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_minflt);
}

}  // namespace trainbench
