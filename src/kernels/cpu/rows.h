// The CPU rows of the fused kernels: rows_for(a) is the function that runs kernel a's math, for
// a's formats, over the chunks [c0, c1) of kChunkRows rows, or null where this build holds no
// instantiation for them. Builds of one file that includes no LibTorch header (see rows.cpp):
// cpu::avx2 (AVX2/FMA/F16C) and cpu::avx512 (with AVX-512 F/BW/VL/DQ) hold the formats a run
// reaches; cpu::f64 (AVX2), the kernels with a float64 tensor, the tests' reference, is linked
// into the test binary alone. launch.cpp picks the build the CPU runs (core/cpu_isa's answer),
// the float64 one where that returns null, and calls it from at::parallel_for.
#pragma once

#include <cstdint>

#include "trainbench/kernels/kernel_args.h"

namespace trainbench::kernels::cpu {

template <typename Args>
using Rows = void (*)(const Args& a, int64_t c0, int64_t c1);

#define TB_DECLARE_CPU_ROWS(Args) Rows<Args> rows_for(const Args& a);
namespace avx2 {
TB_FUSED_KERNELS(TB_DECLARE_CPU_ROWS)
}  // namespace avx2
namespace avx512 {
TB_FUSED_KERNELS(TB_DECLARE_CPU_ROWS)
}  // namespace avx512
#undef TB_DECLARE_CPU_ROWS
// Weak: null in a binary without rows_f64.cpp (bench).
#define TB_DECLARE_CPU_ROWS(Args) [[gnu::weak]] Rows<Args> rows_for(const Args& a);
namespace f64 {
TB_FUSED_KERNELS(TB_DECLARE_CPU_ROWS)
}  // namespace f64
#undef TB_DECLARE_CPU_ROWS

}  // namespace trainbench::kernels::cpu
