// The AVX-512 build of the fused kernels' CPU rows: rows.cpp compiled once more with AVX-512
// F/BW/VL/DQ and 512-bit vectors (CMakeLists.txt), into namespace cpu::avx512. launch.cpp takes
// it where the CPU runs those instructions (TB_CPU_ROWS=avx2 forces the other build).
#define TB_ROWS_ISA avx512
#include "rows.cpp"
