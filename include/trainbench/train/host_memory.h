// Where a CPU step's tensors come from. A training step frees and allocates the same large
// buffers every step (activations, scores, GEMM outputs: 1-16 MB each at the reference width,
// hundreds a step). LibTorch's CPU allocator takes them from the C library, and glibc hands
// such blocks back to the kernel (mmap'd above its threshold, or the heap trimmed), so the next
// step faults them in again page by page, zero-filled (kernel_bench BM_StepBuffers on a 2-vCPU
// Zen 3 VM: 8 layers' buffers, 17k page faults and 47-55 ms a step against none and 14-17 ms;
// docs/BENCHMARKS.md).
// glibc's own settings do not cure it (with mmap off and no trimming its heap still grows
// step after step under aligned allocations), so --keep_memory 1 (the default of --compile
// fused; eager runs keep LibTorch's own) installs a caching CPU allocator, as LibTorch's CUDA
// allocator is: a freed block of 128 KiB or more
// goes to a free list by size and the next request of that size takes it back, already
// faulted in. Nothing is given back before the process ends: its peak RSS is the most it
// held at once, per block size.
#pragma once

#include <cstdint>

namespace trainbench {

// Blocks of at least this many bytes are kept for reuse; smaller ones go to the C library.
inline constexpr int64_t kKeptBlockBytes = 128 * 1024;

// keep: LibTorch's CPU tensors come from the caching allocator from now on; false: from
// LibTorch's own CPU allocator again. The first keep installs the caching allocator as
// LibTorch's CPU allocator for good (false forwards its requests to LibTorch's own), so that
// it keeps c10::Allocator's whole contract after any switch: a block from either side, taken
// as a tensor or by raw_allocate (oneDNN's scratch memory), frees through raw_deallocate or
// its DataPtr on any thread. Blocks already kept stay kept.
void keep_freed_memory(bool keep);

// Bytes the caching allocator holds free for reuse now, and in all (free + in use).
struct KeptMemory {
  int64_t free_bytes = 0, total_bytes = 0;
};
KeptMemory kept_memory();

// Page faults this process took so far that needed no I/O (getrusage's ru_minflt): mostly
// pages touched for the first time since they were mapped.
int64_t minor_page_faults();

}  // namespace trainbench
