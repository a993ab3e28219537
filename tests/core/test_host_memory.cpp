// keep_freed_memory: LibTorch's CPU tensors of kKeptBlockBytes or more reuse freed blocks of
// their size (the same address, no new page faults); smaller ones and the switch back go to
// LibTorch's own allocator.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include <torch/torch.h>

#include <c10/core/CPUAllocator.h>

#include "trainbench/core/host_memory.h"

namespace trainbench {
namespace {

struct KeptForTheTest {
  KeptForTheTest() { keep_freed_memory(true); }
  ~KeptForTheTest() { keep_freed_memory(false); }  // the rest of the suite on LibTorch's own
};

TEST(HostMemory, AFreedBlockIsTakenBackByTheNextTensorOfItsSizeWithoutPageFaults) {
  KeptForTheTest kept;
  constexpr int64_t kFloats = 4 << 20;  // 16 MiB, a reference-width activation
  const void* first = nullptr;
  {
    torch::Tensor t = torch::empty({kFloats});
    t.fill_(1.0f);  // faulted in once
    first = t.data_ptr();
  }
  const KeptMemory after_free = kept_memory();
  EXPECT_GE(after_free.free_bytes, kFloats * 4);
  const int64_t faults_before = minor_page_faults();
  torch::Tensor again = torch::empty({kFloats});
  again.fill_(2.0f);
  const int64_t faults = minor_page_faults() - faults_before;
  EXPECT_EQ(again.data_ptr(), first);
  EXPECT_LE(faults, 16) << "4,096 pages would be faulted in again without the cache";
  EXPECT_EQ(kept_memory().free_bytes, after_free.free_bytes - kFloats * 4);
  EXPECT_EQ(again.sum().item<double>(), 2.0 * kFloats);  // a reused block computes as a new one
  // A nearby size (the same pages) takes the same block; another size does not.
  again = torch::Tensor();
  EXPECT_EQ(torch::empty({kFloats - 7}).data_ptr(), first);
  EXPECT_NE(torch::empty({kFloats * 2}).data_ptr(), first);
}

TEST(HostMemory, SmallTensorsAndTheSwitchBackGoToLibTorchsAllocator) {
  const c10::Allocator* libtorch = c10::GetCPUAllocator();
  {
    KeptForTheTest kept;
    EXPECT_NE(c10::GetCPUAllocator(), libtorch);
    const int64_t total = kept_memory().total_bytes;
    torch::Tensor small = torch::ones({kKeptBlockBytes / 4 - 1});  // one float short
    EXPECT_EQ(kept_memory().total_bytes, total);
    EXPECT_EQ(small.sum().item<double>(), static_cast<double>(kKeptBlockBytes / 4 - 1));
  }
  EXPECT_EQ(c10::GetCPUAllocator(), libtorch);
  const int64_t total = kept_memory().total_bytes;
  torch::Tensor big = torch::ones({4 << 20});
  EXPECT_EQ(kept_memory().total_bytes, total);
}

TEST(HostMemory, ThreadsAllocatingAndFreeingAtOnceKeepEveryBlockAccounted) {
  KeptForTheTest kept;
  const KeptMemory before = kept_memory();
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([i] {
      for (int round = 0; round < 50; ++round) {
        torch::Tensor t = torch::full({(64 << 10) + 1024 * i}, static_cast<float>(i));
        ASSERT_EQ(t[-1].item<float>(), static_cast<float>(i));
      }
    });
  }
  for (auto& t : threads) t.join();
  const KeptMemory after = kept_memory();
  // Every block is free again; at most one new block per thread (its own size).
  EXPECT_EQ(after.free_bytes - before.free_bytes, after.total_bytes - before.total_bytes);
  EXPECT_LE(after.total_bytes - before.total_bytes, 4 * ((256 << 10) + 4 * 4096 * 4));
}

}  // namespace
}  // namespace trainbench
