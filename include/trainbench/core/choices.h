// One table per closed set (ggml's type_traits and op-name tables are the model): each enum of
// the flags and the result files has one row per value, with its name as the flags and files
// spell it, its help words and its properties. The flag table's choices and help (core/flags.cpp),
// the parser and every name function come from these rows. Adding a value is one row: each
// table's size is checked against its enum's kLast at compile time, and each row's place
// against its value, so a missing or misplaced row fails the build.
#pragma once

#include <array>

#include "trainbench/core/choice_table.h"

namespace trainbench {

// --preset: the defaults, or a CPU-sized variant (core/config.cpp's apply_preset).
enum class Preset { kReference, kQuick, kLast = kQuick };
template <>
struct ChoiceTable<Preset> {
  static constexpr std::array<ChoiceRow<Preset>, 2> rows = {{
      {Preset::kReference, "reference", "the defaults shown"},
      {Preset::kQuick, "quick", "CPU-sized: 2 layers, d 128, seq 128, batch 16, 400 steps"},
  }};
};

// --model: the two implementations behind model/model.h's interface.
enum class ModelKind { kTorch, kHandcraft, kLast = kHandcraft };
template <>
struct ChoiceTable<ModelKind> {
  static constexpr std::array<ChoiceRow<ModelKind>, 2> rows = {{
      {ModelKind::kTorch, "torch", "nn::TransformerEncoder's modules, pre-LN; --norm_first"},
      {ModelKind::kHandcraft, "handcraft", "pre-LN blocks from Linear/LayerNorm/matmul"},
  }};
};

// --dtype: float32, or 16-bit compute with float32 master weights: LibTorch's autocast in the
// eager and TorchScript models, the fused model's own casts (model/fused_model.cpp).
enum class Precision { kFloat32, kFloat16, kBFloat16, kLast = kBFloat16 };
struct PrecisionRow {
  Precision value;
  const char* name;
  const char* help;
  bool loss_scaled;  // dynamic loss scaling (float16's narrow exponent)
};
template <>
struct ChoiceTable<Precision> {
  static constexpr std::array<PrecisionRow, 3> rows = {{
      {Precision::kFloat32, "float32", "", false},
      {Precision::kFloat16, "float16", "16-bit compute, float32 weights, loss-scaled", true},
      {Precision::kBFloat16, "bfloat16", "16-bit compute, float32 weights", false},
  }};
};

// --compile: eager LibTorch, the TorchScript graph executor, or bench's own kernels with a
// hand-written backward (model/fused_model.cpp).
enum class CompilePath { kNone, kTorchScript, kFused, kLast = kFused };
struct CompilePathRow {
  CompilePath value;
  const char* name;
  const char* help;
  const char* folder_suffix;  // in the reference run-folder name (_compiled: the reference's)
  const char* aliases;        // other spellings on the command line, '|'-separated
};
template <>
struct ChoiceTable<CompilePath> {
  static constexpr std::array<CompilePathRow, 3> rows = {{
      {CompilePath::kNone, "none", "", "", "0|false"},
      {CompilePath::kTorchScript, "torchscript",
       "1: the handcraft model as a TorchScript graph run by the graph executor", "_compiled",
       "1|true"},
      {CompilePath::kFused, "fused",
       "the handcraft model on bench's own fused kernels, hand-written backward", "_fused", ""},
  }};
};

// --keep_memory (kAuto as given; a plan holds the resolved one, train/host_memory.h): bench's
// caching CPU allocator is the default of bench's own --compile fused path only, so that an
// eager run measures LibTorch as shipped.
enum class KeepMemory { kAuto, kOff, kOn, kLast = kOn };
struct KeepMemoryRow {
  KeepMemory value;
  const char* name;
  const char* help;
  const char* aliases;  // other spellings on the command line, '|'-separated
};
template <>
struct ChoiceTable<KeepMemory> {
  static constexpr std::array<KeepMemoryRow, 3> rows = {{
      {KeepMemory::kAuto, "auto", "1 with --compile fused, 0 otherwise", ""},
      {KeepMemory::kOff, "0", "LibTorch's own CPU allocator, the C library's malloc", "false"},
      {KeepMemory::kOn, "1",
       "bench's caching allocator: CPU tensors of 128 KiB or more reuse freed blocks of their "
       "size, as LibTorch's CUDA allocator does, so a step does not fault its buffers in again",
       "true"},
  }};
};

// --dropout_impl (kAuto as given; a plan holds the resolved one).
enum class DropoutImpl { kAuto, kNative, kParallel, kFused, kLast = kFused };
template <>
struct ChoiceTable<DropoutImpl> {
  static constexpr std::array<ChoiceRow<DropoutImpl>, 4> rows = {{
      {DropoutImpl::kAuto, "auto", ""},
      {DropoutImpl::kNative, "native", "torch::dropout, LibTorch as shipped"},
      {DropoutImpl::kParallel, "parallel",
       "bench's multi-threaded mask; CPU, eager handcraft (a 'bench' row in reports)"},
      {DropoutImpl::kFused, "fused", "the fused kernels' own masks; --compile fused"},
  }};
};

// How the fused ops run a GEMM whose operands are bfloat16/float16, from --lowp_gemm to the
// kernels' autograd state: in the dtype itself (LibTorch's oneDNN path), or as a float32 GEMM of
// the same operands (exact in float32) with the result rounded to the dtype, which is what the
// native instructions compute (float32 accumulation, one rounding of the output). The second is
// the fast one on CPUs without AVX512-BF16/AMX. kAuto is the flag's "measure it"; a plan holds
// kNative or kFloat32 (kNative for every run that is not --compile fused with bfloat16/float16
// on the CPU).
enum class GemmRoute { kAuto, kNative, kFloat32, kLast = kFloat32 };
template <>
struct ChoiceTable<GemmRoute> {
  static constexpr std::array<ChoiceRow<GemmRoute>, 3> rows = {{
      {GemmRoute::kAuto, "auto",
       "the faster of the two, measured before training at this model's GEMM shapes; the rates "
       "and the choice go to env.json and summary.json"},
      {GemmRoute::kNative, "native", "GEMMs in the dtype"},
      {GemmRoute::kFloat32, "float32",
       "float32 GEMMs of operands rounded to the dtype, float32 accumulation"},
  }};
};

// --device (kAuto as given; a plan holds a torch::Device).
enum class DeviceChoice { kAuto, kCpu, kCuda, kLast = kCuda };
template <>
struct ChoiceTable<DeviceChoice> {
  static constexpr std::array<ChoiceRow<DeviceChoice>, 3> rows = {{
      {DeviceChoice::kAuto, "auto", ""},
      {DeviceChoice::kCpu, "cpu", ""},
      {DeviceChoice::kCuda, "cuda", ""},
  }};
};

// --sdpa_backend: the one kernel flash attention may use (model/sdpa_backend.h); kAuto leaves
// LibTorch's switches as they are.
enum class SdpaBackend { kAuto, kFlash, kEfficient, kCudnn, kMath, kLast = kMath };
struct SdpaBackendRow {
  SdpaBackend value;
  const char* name;
  const char* help;
  bool has_cpu_kernel;   // the CPU has flash and math
  bool needs_lowp_cuda;  // no float32 path on CUDA
};
template <>
struct ChoiceTable<SdpaBackend> {
  static constexpr std::array<SdpaBackendRow, 5> rows = {{
      {SdpaBackend::kAuto, "auto", "", true, false},
      {SdpaBackend::kFlash, "flash", "", true, true},
      {SdpaBackend::kEfficient, "efficient", "", false, false},
      {SdpaBackend::kCudnn, "cudnn", "", false, true},
      {SdpaBackend::kMath, "math", "", true, false},
  }};
};

// --adam_kernel: how --fused_adam 1 runs its kernel (the same numbers either way).
enum class AdamKernel { kParam, kMulti, kLast = kMulti };
template <>
struct ChoiceTable<AdamKernel> {
  static constexpr std::array<ChoiceRow<AdamKernel>, 2> rows = {{
      {AdamKernel::kParam, "param", "a pass per parameter"},
      {AdamKernel::kMulti, "multi",
       "a pass over the parameters of each format (on CUDA a launch per 24)"},
  }};
};

// --gpu_kernels: which CUDA row kernels --compile fused launches (kernels/cuda/); the CPU's
// are one set. v2 takes the rows it fits (kernels/fused_kernels.h gpu_rows_taken), v1 the rest.
enum class GpuRows { kV1, kV2, kLast = kV2 };
template <>
struct ChoiceTable<GpuRows> {
  static constexpr std::array<ChoiceRow<GpuRows>, 2> rows = {{
      {GpuRows::kV1, "v1", "a block per row or chunk, one element a thread per load"},
      {GpuRows::kV2, "v2",
       "a warp per row with 16-byte loads, each value read once into registers (LayerNorm's "
       "backward: a block per 32 rows); rows it does not fit take v1"},
  }};
};

// --dist_backend: the process group of a multi-process run (kAuto as given).
enum class DistBackend { kAuto, kGloo, kNccl, kLast = kNccl };
template <>
struct ChoiceTable<DistBackend> {
  static constexpr std::array<ChoiceRow<DistBackend>, 3> rows = {{
      {DistBackend::kAuto, "auto", ""},
      {DistBackend::kGloo, "gloo", ""},
      {DistBackend::kNccl, "nccl", ""},
  }};
};

static_assert(choices_in_order<Preset>(), "one row per Preset, in order");
static_assert(choices_in_order<ModelKind>(), "one row per ModelKind, in order");
static_assert(choices_in_order<Precision>(), "one row per Precision, in order");
static_assert(choices_in_order<CompilePath>(), "one row per CompilePath, in order");
static_assert(choices_in_order<DropoutImpl>(), "one row per DropoutImpl, in order");
static_assert(choices_in_order<KeepMemory>(), "one row per KeepMemory, in order");
static_assert(choices_in_order<GemmRoute>(), "one row per GemmRoute, in order");
static_assert(choices_in_order<DeviceChoice>(), "one row per DeviceChoice, in order");
static_assert(choices_in_order<SdpaBackend>(), "one row per SdpaBackend, in order");
static_assert(choices_in_order<DistBackend>(), "one row per DistBackend, in order");
static_assert(choices_in_order<AdamKernel>(), "one row per AdamKernel, in order");
static_assert(choices_in_order<GpuRows>(), "one row per GpuRows, in order");

}  // namespace trainbench
