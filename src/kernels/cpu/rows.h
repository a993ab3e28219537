// The CPU rows of the fused kernels: rows(a, c0, c1) runs a kernel's math over the chunks
// [c0, c1) of kChunkRows rows. Compiled with AVX2/FMA/F16C flags in a file that includes no
// LibTorch header (see rows.cpp); launch.cpp calls them from at::parallel_for.
#pragma once

#include <cstdint>

#include "trainbench/kernels/kernel_args.h"

namespace trainbench::kernels::cpu {

#define TB_DECLARE_CPU_ROWS(Args) void rows(const Args& a, int64_t c0, int64_t c1);
TB_FUSED_KERNELS(TB_DECLARE_CPU_ROWS)
#undef TB_DECLARE_CPU_ROWS

// True when this CPU runs the instructions rows.cpp was compiled for.
bool cpu_supported();

}  // namespace trainbench::kernels::cpu
