// The float64 build of the fused kernels' CPU rows, the tests' reference: rows.cpp compiled once
// more with the AVX2 build's flags (CMakeLists.txt), into namespace cpu::f64, holding only the
// kernels with a float64 tensor. Linked into trainbench_tests alone: in bench, rows.h's weak
// declarations are null and launch.cpp refuses a float64 format in one line.
#define TB_ROWS_ISA f64
#define TB_ROWS_F64 1
#include "rows.cpp"
