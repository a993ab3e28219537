// run(): the CPU rows over at::parallel_for (the build for the CPU's widest vectors, after
// checking the CPU runs its instructions), or the CUDA launch on LibTorch's current stream.
#include <ATen/Parallel.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <iterator>
#include <string>

#include "cpu/rows.h"
#include "trainbench/core/cpu_isa.h"
#include "trainbench/core/errors.h"
#include "trainbench/kernels/fused_kernels.h"

#ifdef TB_WITH_CUDA
#include <c10/cuda/CUDAStream.h>

#include "cuda/rows.h"
#endif

namespace trainbench::kernels {

std::string rows_isa_for(const CpuIsa& isa, const std::string& forced, std::string* why) {
  // The sets each build is compiled for (CMakeLists.txt's flags of src/kernels/cpu/rows.cpp).
  const bool avx2 = isa.avx2 && isa.fma && isa.f16c;
  const bool avx512 = avx2 && isa.avx512f && isa.avx512bw && isa.avx512vl && isa.avx512dq;
  if (!forced.empty() && forced != "avx2" && forced != "avx512") {
    *why = "TB_CPU_ROWS: '" + forced + "' is not allowed; use avx2 or avx512 (or leave it unset)";
    return "";
  }
  if (forced == "avx512" && !avx512) {
    *why = "TB_CPU_ROWS=avx512: this CPU lacks AVX-512 F/BW/VL/DQ; use avx2 or leave it unset";
    return "";
  }
  if (!avx2) {
    *why =
        "--compile fused: this CPU lacks AVX2, FMA or F16C, which the fused CPU kernels are "
        "built for; use --compile none";
    return "";
  }
  if (forced.empty()) return avx512 ? "avx512" : "avx2";
  return forced;
}

namespace {

// The rows build for this process, picked once (TB_CPU_ROWS, or the widest this CPU runs).
struct RowsIsa {
  std::string name, why;
  RowsIsa() {
    const char* forced = std::getenv("TB_CPU_ROWS");
    name = rows_isa_for(hardware_isa(), forced ? forced : "", &why);
  }
};
const RowsIsa& rows_isa_() {
  static const RowsIsa isa;
  return isa;
}

// "DropAddLnArgs for bfloat16, float32 storage of bfloat16 values": a refusal's subject.
template <typename Args>
std::string formats_text_(const char* name, const Args& a) {
  std::string text = std::string(name) + " for ";
  const auto formats = a.formats();
  for (size_t i = 0; i < formats.size(); ++i) {
    text += (i > 0 ? ", " : "") + format_name(formats[i]);
  }
  return text;
}

// --gpu_kernels for this process (GpuRowsScope sets it; the trainer holds one for its run).
std::atomic<GpuRows> g_gpu_rows{GpuRows::kV1};

// Whether a's widths and pointers fit the v2 CUDA kernels (kernel_args.h kV2*; the rules in
// fused_kernels.h gpu_rows_taken): every pointer a 16-byte word load reads or writes on 16 bytes.
bool aligned_(std::initializer_list<const void*> ps) {
  for (const void* p : ps)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;  // null: aligned
  return true;
}
bool groups_fit_(int64_t rows, int64_t cols) {
  return rows > 0 && cols % kV2Cols == 0 && cols > 0 && cols / kV2Cols <= kV2Groups;
}
bool v2_fits_(const DropAddLnArgs& a) {
  return groups_fit_(a.rows, a.cols) &&
         aligned_({a.resid, a.branch, a.bias, a.gamma, a.beta, a.resid_out, a.y});
}
bool v2_fits_(const DropAddLnGradArgs& a) {
  return groups_fit_(a.rows, a.cols) &&
         aligned_({a.dy, a.d_resid_out, a.resid_out, a.gamma, a.d_resid, a.d_branch, a.partials});
}
bool v2_fits_(const BiasReluDropoutArgs& a) {
  return a.rows > 0 && a.cols > 0 && a.cols % kV2Vec == 0 && aligned_({a.a, a.bias});
}
// A block per chunk, a thread per kV2Vec columns: at most kV2Packs threads.
bool packs_fit_(int64_t rows, int64_t cols) {
  return rows > 0 && cols > 0 && cols % kV2Vec == 0 && cols / kV2Vec <= kV2Packs;
}
bool v2_fits_(const BiasReluDropoutGradArgs& a) {
  return packs_fit_(a.rows, a.cols) && aligned_({a.dout, a.out, a.da, a.partials});
}
bool v2_fits_(const ColumnSumsArgs& a) {
  return packs_fit_(a.rows, a.cols) && aligned_({a.x, a.partials});
}
// A pack of kV2Vec columns within one head; the merged rows' column sums as ColumnSums'.
bool v2_fits_(const HeadsArgs& a) {
  const int64_t width = a.parts * a.heads * a.hd;
  return a.rows > 0 && a.parts > 0 && a.heads > 0 && a.hd > 0 && a.hd % kV2Vec == 0 &&
         (a.partials == nullptr || a.to_heads || packs_fit_(a.rows, width)) &&
         aligned_({a.row_data, a.head_data[0], a.head_data[1], a.head_data[2], a.bias, a.partials});
}
bool v2_fits_(const CausalSoftmaxArgs& a) { return a.rows > 0 && a.seq > 0 && a.seq <= kV2Keys; }
bool v2_fits_(const CausalSoftmaxGradArgs& a) {
  return a.rows > 0 && a.seq > 0 && a.seq <= kV2Keys;
}
bool v2_fits_(const HeadCrossEntropyArgs& a) {
  return groups_fit_(a.rows, a.cols) && aligned_({a.logits, a.bias, a.bias_partials});
}
template <typename Args>
bool v2_fits_(const Args&) {
  return false;  // no v2 kernel
}

template <typename Args>
GpuRows rows_taken_(const Args& a) {
  return g_gpu_rows.load() == GpuRows::kV2 && v2_fits_(a) ? GpuRows::kV2 : GpuRows::kV1;
}

template <typename Args>
void run_(const char* name, const Args& a, c10::DeviceType device) {
  if (device == c10::DeviceType::CUDA) {
#ifdef TB_WITH_CUDA
    const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    cudaError_t err = cudaSuccess;
    if constexpr (requires { cuda::launch_v2(a, stream); }) {
      err = rows_taken_(a) == GpuRows::kV2 ? cuda::launch_v2(a, stream) : cuda::launch(a, stream);
    } else {
      err = cuda::launch(a, stream);
    }
    if (err == cudaErrorNotSupported) {
      throw RunError("fused kernels on CUDA: no kernel of " + formats_text_(name, a) +
                     "; CUDA holds the formats of float32, bfloat16 and float16 runs");
    }
    if (err != cudaSuccess) {
      throw RunError(std::string("fused CUDA kernel failed to launch: ") + cudaGetErrorString(err));
    }
    return;
#else
    (void)name;
    throw RunError("--compile fused on CUDA: this bench was built without CUDA");
#endif
  }
  const RowsIsa& isa = rows_isa_();
  if (!isa.why.empty()) throw RunError(isa.why);
  // The build the CPU runs; a kernel with a float64 tensor from the tests' build, where linked.
  cpu::Rows<Args> rows = isa.name == "avx512" ? cpu::avx512::rows_for(a) : cpu::avx2::rows_for(a);
  using RowsFor = cpu::Rows<Args> (*)(const Args&);
  const RowsFor f64 = static_cast<RowsFor>(&cpu::f64::rows_for);
  if (rows == nullptr && f64 != nullptr) rows = f64(a);
  if (rows == nullptr) {
    throw RunError(
        "fused kernels: no CPU kernel of " + formats_text_(name, a) +
        "; this binary holds the formats of float32, bfloat16 and float16 runs" +
        (f64 == nullptr ? " (float64, the tests' reference, is in trainbench_tests)" : ""));
  }
  int64_t chunks = 0;  // chunks of kChunkRows rows, or an Args' own count (a list's)
  if constexpr (requires { a.chunks(); }) {
    chunks = a.chunks();
  } else {
    chunks = num_chunks(a.rows);
  }
  at::parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) { rows(a, c0, c1); });
}

}  // namespace

namespace {
// The tensor dtype of each StorageType, in kStorageTraits' order.
constexpr c10::ScalarType kDtypes[] = {c10::ScalarType::Float, c10::ScalarType::Double,
                                       c10::ScalarType::BFloat16, c10::ScalarType::Half};
static_assert(std::size(kDtypes) == std::size(kStorageTraits));
}  // namespace

StorageType storage_type_of(c10::ScalarType type) {
  for (int32_t t = 0; t < static_cast<int32_t>(std::size(kDtypes)); ++t)
    if (kDtypes[t] == type) return static_cast<StorageType>(t);
  throw RunError(std::string("fused kernels: dtype ") + c10::toString(type) +
                 " is not supported; use float32, float64, bfloat16 or float16");
}

StorageType storage_type_of(Precision dtype) {
  const std::string name = name_of(dtype);
  for (int32_t t = 0; t < static_cast<int32_t>(std::size(kStorageTraits)); ++t)
    if (name == kStorageTraits[t].name) return static_cast<StorageType>(t);
  throw RunError("fused kernels: --dtype " + name + " has no storage type");
}

std::string format_name(const Format& f) {
  if (f.values == f.storage) return traits(f.storage).name;
  return std::string(traits(f.storage).name) + " storage of " + traits(f.values).name + " values";
}

c10::ScalarType dtype_of(StorageType type) { return kDtypes[static_cast<int32_t>(type)]; }

c10::ScalarType acc_dtype_of(c10::ScalarType type) {
  return dtype_of(traits(storage_type_of(type)).acc);
}

Format format_of(c10::ScalarType storage_dtype, c10::ScalarType values_dtype,
                 c10::ScalarType acc_dtype) {
  constexpr auto kNone = c10::ScalarType::Undefined;
  const StorageType storage = storage_type_of(storage_dtype);
  const StorageType values = values_dtype != kNone ? storage_type_of(values_dtype) : storage;
  const StorageType acc = acc_dtype != kNone ? storage_type_of(acc_dtype) : traits(storage).acc;
  if (values != storage && !(storage == StorageType::kF32 && traits(values).half)) {
    throw RunError(std::string("fused kernels: ") + traits(values).name + " values in " +
                   traits(storage).name +
                   " storage: a tensor holds its own dtype's values, or float32 storage holds "
                   "bfloat16 or float16 values (the float32 GEMM route)");
  }
  if (acc != traits(storage).acc) {
    throw RunError(std::string("fused kernels: ") + format_name({storage, values, acc}) +
                   " accumulated in " + traits(acc).name +
                   ": the kernels accumulate float64 in float64, every other format in float32");
  }
  return Format{storage, values, acc};  // one of kFormats
}

namespace {
// The dtype's own storage, or on the float32 route float32 storage of its 16-bit values.
Format run_format_(StorageType values, GemmRoute route) {
  if (route == GemmRoute::kAuto) {
    throw RunError(
        "fused kernels: a run's format needs a GEMM route (native or float32), not auto");
  }
  const StorageType storage =
      route == GemmRoute::kFloat32 && traits(values).half ? StorageType::kF32 : values;
  return Format{storage, values, traits(storage).acc};
}
}  // namespace

Format run_format(Precision dtype, GemmRoute route) {
  return run_format_(storage_type_of(dtype), route);
}
Format run_format(c10::ScalarType dtype, GemmRoute route) {
  return run_format_(storage_type_of(dtype), route);
}

Format product_format(const Format& f) { return Format{f.storage, f.storage, f.acc}; }
Format values_format(const Format& f) { return Format{f.values, f.values, f.acc}; }

#define TB_DEFINE_RUN(Args)                                                   \
  void run(const Args& a, c10::DeviceType device) { run_(#Args, a, device); } \
  GpuRows gpu_rows_taken(const Args& a) { return rows_taken_(a); }
TB_FUSED_KERNELS(TB_DEFINE_RUN)
#undef TB_DEFINE_RUN

GpuRows gpu_rows() { return g_gpu_rows.load(); }
GpuRowsScope::GpuRowsScope(GpuRows rows) : before_(g_gpu_rows.exchange(rows)) {}
GpuRowsScope::~GpuRowsScope() { g_gpu_rows.store(before_); }

std::string cpu_kernels_unavailable() { return rows_isa_().why; }

bool arch_list_runs_on(const std::string& list, int major, int minor) {
  std::string entry;
  for (size_t i = 0; i <= list.size(); ++i) {
    if (i < list.size() && list[i] != ';' && list[i] != ' ') {
      entry += list[i];
      continue;
    }
    int emajor = 0, eminor = 0;
    char dot = 0;
    const bool ptx = entry.size() > 4 && entry.compare(entry.size() - 4, 4, "+PTX") == 0;
    if (std::sscanf(entry.c_str(), "%d%c%d", &emajor, &dot, &eminor) == 3 && dot == '.') {
      if (emajor == major && eminor <= minor) return true;
      if (ptx && (emajor < major || (emajor == major && eminor <= minor))) return true;
    }
    entry.clear();
  }
  return false;
}

std::string cuda_arch_list() {
#ifdef TB_WITH_CUDA
  return TB_CUDA_ARCHS;
#else
  return "";
#endif
}

std::string cuda_kernels_unavailable(int device) {
#ifdef TB_WITH_CUDA
  int major = 0, minor = 0;
  std::string name;
  // The driver's own answer: a kernel's attributes on the device (no image: an error).
  if (cuda::has_code_for(device, &major, &minor, &name) == cudaSuccess) return "";
  const std::string arch = std::to_string(major) + "." + std::to_string(minor);
  return "--compile fused / --fused_adam 1: bench's CUDA kernels were built for "
         "TORCH_CUDA_ARCH_LIST '" +
         cuda_arch_list() + "', which has no code for this GPU (" + name + ", sm_" +
         std::to_string(major) + std::to_string(minor) +
         "); rebuild with bash scripts/build.sh -DTORCH_CUDA_ARCH_LIST=\"" + arch +
         ";9.0+PTX\" (docs/GPU.md), or use --compile none --fused_adam 0";
#else
  (void)device;
  return "";
#endif
}

std::string cpu_rows_isa() { return rows_isa_().name; }

}  // namespace trainbench::kernels
