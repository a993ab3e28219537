// The CPU rows of the fused kernels: rows(a, c0, c1) runs a kernel's math over the chunks
// [c0, c1) of kChunkRows rows. Two builds of one file that includes no LibTorch header (see
// rows.cpp): cpu::avx2 (AVX2/FMA/F16C) and cpu::avx512 (with AVX-512 F/BW/VL/DQ); launch.cpp
// picks the one the CPU runs (core/cpu_isa's answer) and calls it from at::parallel_for.
#pragma once

#include <cstdint>

#include "trainbench/kernels/kernel_args.h"

namespace trainbench::kernels::cpu {

#define TB_DECLARE_CPU_ROWS(Args) void rows(const Args& a, int64_t c0, int64_t c1);
namespace avx2 {
TB_FUSED_KERNELS(TB_DECLARE_CPU_ROWS)
}  // namespace avx2
namespace avx512 {
TB_FUSED_KERNELS(TB_DECLARE_CPU_ROWS)
}  // namespace avx512
#undef TB_DECLARE_CPU_ROWS

}  // namespace trainbench::kernels::cpu
