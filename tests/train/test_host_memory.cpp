// keep_freed_memory: LibTorch's CPU tensors of kKeptBlockBytes or more reuse freed blocks of
// their size (the same address, no new page faults); smaller ones and the switch back go to
// LibTorch's own allocator. The rest of c10::Allocator's contract is tested directly, on every
// CPU: raw_allocate / raw_deallocate / raw_deleter (oneDNN's scratch memory), copy_data, size
// 0, a block freed on another thread, a block freed across a switch either way.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include <c10/core/CPUAllocator.h>

#include "trainbench/core/cpu_isa.h"
#include "trainbench/train/host_memory.h"

namespace trainbench {
namespace {

struct KeptForTheTest {
  KeptForTheTest() { keep_freed_memory(true); }
  ~KeptForTheTest() { keep_freed_memory(false); }  // the rest of the suite on LibTorch's own
};

constexpr size_t kBig = 1 << 20;  // a kept block (1 MiB, whole pages)

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
  {
    KeptForTheTest kept;
    const int64_t total = kept_memory().total_bytes;
    torch::Tensor small = torch::ones({kKeptBlockBytes / 4 - 1});  // one float short
    EXPECT_EQ(kept_memory().total_bytes, total);
    EXPECT_EQ(small.sum().item<double>(), static_cast<double>(kKeptBlockBytes / 4 - 1));
  }
  const int64_t total = kept_memory().total_bytes;
  torch::Tensor big = torch::ones({4 << 20});
  EXPECT_EQ(kept_memory().total_bytes, total);
  EXPECT_EQ(big.sum().item<double>(), static_cast<double>(4 << 20));
}

TEST(HostMemory, RawAllocateAndRawDeallocateKeepAndReuseBlocksAsTensorsDo) {
  KeptForTheTest kept;
  c10::Allocator* cpu = c10::GetCPUAllocator();
  ASSERT_NE(cpu->raw_deleter(), nullptr) << "raw_deallocate asserts without a raw deleter";
  void* p = cpu->raw_allocate(kBig);
  ASSERT_NE(p, nullptr);
  std::memset(p, 7, kBig);
  const KeptMemory before = kept_memory();
  cpu->raw_deallocate(p);
  EXPECT_EQ(kept_memory().free_bytes, before.free_bytes + static_cast<int64_t>(kBig));
  void* again = cpu->raw_allocate(kBig);
  EXPECT_EQ(again, p);
  cpu->raw_deleter()(again);  // the deleter itself, as oneDNN's allocator calls it
  // A tensor's deleter and the raw one free the same way: the tensor takes the block back.
  EXPECT_EQ(torch::empty({static_cast<int64_t>(kBig / 4)}).data_ptr(), p);
  // Small blocks go to the C library both ways.
  const int64_t total = kept_memory().total_bytes;
  void* small = cpu->raw_allocate(100);
  std::memset(small, 1, 100);
  cpu->raw_deallocate(small);
  EXPECT_EQ(kept_memory().total_bytes, total);
}

TEST(HostMemory, SizeZeroAndCopyDataFollowLibTorchsAllocator) {
  KeptForTheTest kept;
  c10::Allocator* cpu = c10::GetCPUAllocator();
  c10::DataPtr none = cpu->allocate(0);
  EXPECT_EQ(none.get(), nullptr);  // as c10::alloc_cpu(0): no block, and a safe free
  none.clear();
  cpu->raw_deallocate(cpu->raw_allocate(0));
  EXPECT_EQ(torch::empty({0}).numel(), 0);
  EXPECT_EQ(torch::cat({torch::empty({0}), torch::ones({3})}).sum().item<float>(), 3.0f);
  // copy_data: what Tensor::clone and storage copies go through.
  std::vector<char> src(kBig, 3);
  c10::DataPtr dest = cpu->allocate(kBig);
  cpu->copy_data(dest.get(), src.data(), kBig);
  EXPECT_EQ(std::memcmp(dest.get(), src.data(), kBig), 0);
  torch::Tensor t = torch::arange(1 << 18, torch::kFloat32);
  EXPECT_TRUE(torch::equal(t.clone(), t));
}

TEST(HostMemory, ABlockFreedOnAnotherThreadIsKept) {
  KeptForTheTest kept;
  c10::Allocator* cpu = c10::GetCPUAllocator();
  void* raw = cpu->raw_allocate(kBig);
  torch::Tensor t = torch::ones({static_cast<int64_t>(kBig / 4)});
  const void* data = t.data_ptr();
  const KeptMemory before = kept_memory();
  std::thread([&] {
    cpu->raw_deallocate(raw);
    t = torch::Tensor();
  }).join();
  EXPECT_EQ(kept_memory().free_bytes, before.free_bytes + 2 * static_cast<int64_t>(kBig));
  EXPECT_EQ(kept_memory().total_bytes, before.total_bytes);
  torch::Tensor a = torch::empty({static_cast<int64_t>(kBig / 4)});
  torch::Tensor b = torch::empty({static_cast<int64_t>(kBig / 4)});
  EXPECT_TRUE((a.data_ptr() == raw && b.data_ptr() == data) ||
              (a.data_ptr() == data && b.data_ptr() == raw));
}

TEST(HostMemory, BlocksFreedAcrossASwitchEitherWayFreeThroughTheAllocatorOfTheirSide) {
  // Allocated while kept, freed after the switch back: the block returns to its free list.
  void* kept_raw = nullptr;
  torch::Tensor kept_tensor;
  {
    KeptForTheTest kept;
    kept_raw = c10::GetCPUAllocator()->raw_allocate(kBig);
    kept_tensor = torch::ones({static_cast<int64_t>(kBig / 4)});
  }
  const KeptMemory before = kept_memory();
  c10::GetCPUAllocator()->raw_deallocate(kept_raw);
  kept_tensor = torch::Tensor();
  EXPECT_EQ(kept_memory().free_bytes, before.free_bytes + 2 * static_cast<int64_t>(kBig));
  // Allocated from LibTorch's allocator, freed while kept: back to the C library, not kept.
  void* stock_raw = c10::GetCPUAllocator()->raw_allocate(kBig);
  torch::Tensor stock_tensor = torch::ones({static_cast<int64_t>(kBig / 4)});
  EXPECT_EQ(kept_memory().total_bytes, before.total_bytes);
  KeptForTheTest kept;
  const KeptMemory now = kept_memory();
  c10::GetCPUAllocator()->raw_deallocate(stock_raw);
  stock_tensor = torch::Tensor();
  EXPECT_EQ(kept_memory().free_bytes, now.free_bytes);
  EXPECT_EQ(kept_memory().total_bytes, now.total_bytes);
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

// LibTorch's oneDNN ops take scratch memory through raw_allocate / raw_deallocate: a float32
// convolution on every x86 CPU, a bfloat16/float16 GEMM where libtorch_gemm_path says oneDNN.
TEST(HostMemory, OneDnnBackedOpsRunUnderTheAllocator) {
  KeptForTheTest kept;
  torch::manual_seed(1);
  const torch::Tensor x = torch::randn({2, 8, 32, 32}), w = torch::randn({16, 8, 3, 3});
  const torch::Tensor conv = torch::conv2d(x, w, {}, 1, 1);
  EXPECT_TRUE(torch::allclose(
      conv,
      torch::conv2d(x.to(torch::kFloat64), w.to(torch::kFloat64), {}, 1, 1).to(torch::kFloat32),
      1e-4, 1e-4));
  const torch::Tensor a = torch::randn({256, 256}), b = torch::randn({256, 256});
  const torch::Tensor exact = torch::mm(a, b);
  const CpuIsa isa = effective_isa();
  for (const auto dtype : {Precision::kBFloat16, Precision::kFloat16}) {
    const GemmPath path = libtorch_gemm_path(isa, dtype);
    if (path != GemmPath::kOnednnNative && path != GemmPath::kOnednnEmulated) {
      std::printf("[ SKIPPED  ] %s: no oneDNN GEMM on this CPU (or under ONEDNN_MAX_CPU_ISA)\n",
                  name_of(dtype));
      continue;
    }
    const auto st = dtype == Precision::kBFloat16 ? torch::kBFloat16 : torch::kFloat16;
    const torch::Tensor low = torch::mm(a.to(st), b.to(st)).to(torch::kFloat32);
    // 8-bit (bfloat16) or 11-bit mantissas over sums of 256 products of unit normals.
    EXPECT_LT((low - exact).abs().max().item<float>(), 2.0f) << name_of(dtype);
  }
}

}  // namespace
}  // namespace trainbench
