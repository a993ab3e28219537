// The fused kernels' one entry: run(args, device) fills the outputs named in the arguments
// (already allocated by the caller, model/fused_ops.cpp) with the math of fused_math.h: on
// the CPU by the rows of kernels/cpu/rows.cpp over LibTorch's intra-op threads in chunks of
// kChunkRows rows, on CUDA by the kernels of kernels/cuda/rows.cu on the current stream (a
// build without CUDA refuses).
#pragma once

#include <span>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include "trainbench/core/choices.h"
#include "trainbench/kernels/kernel_args.h"

namespace trainbench {
struct CpuIsa;  // core/cpu_isa.h
}  // namespace trainbench

namespace trainbench::kernels {

// The kernels' name for a tensor dtype; throws RunError for one they do not take.
StorageType storage_type_of(c10::ScalarType type);
// The storage type of a run's --dtype (the traits' name is the flag's).
StorageType storage_type_of(Precision dtype);
// The tensor dtype of a storage type (storage_type_of's inverse).
c10::ScalarType dtype_of(StorageType type);
// The accumulation dtype of a storage dtype: float64 for float64, else float32.
c10::ScalarType acc_dtype_of(c10::ScalarType type);
// A Format (kernel_args.h) of a tensor stored as `storage` holding `values` (by default its
// own), accumulating in `acc` (float32 or float64; by default float64 for float64 storage, else
// float32): values == storage, or float32 storage of bfloat16 or float16 values (the float32 GEMM
// route, float32 accumulation). Any other combination is refused here in one line naming it
// (RunError), never deep in a kernel.
Format format_of(c10::ScalarType storage, c10::ScalarType values = c10::ScalarType::Undefined,
                 c10::ScalarType acc = c10::ScalarType::Undefined);
// The run's format, built once from its dtype and GEMM route (model/model.h ModelOptions::format):
// how the fused ops hold what their GEMMs read and what they keep for backward. The dtype's own
// storage, or on the float32 route (kFloat32 with bfloat16 or float16) float32 storage of its
// values. kAuto is refused (a plan resolves it).
Format run_format(Precision dtype, GemmRoute route);
Format run_format(c10::ScalarType dtype, GemmRoute route);  // the tests' float64 too
// A GEMM's product in f's storage before any rounding (float32 on the float32 route), and f's
// values in their own storage (a 16-bit tensor): the two outputs a GEMM op returns.
Format product_format(const Format& f);
Format values_format(const Format& f);
// A format's types as the user names them: "float32 storage of bfloat16 values", "bfloat16".
std::string format_name(const Format& f);

// Each kernel's Args from its tensors (kernel_args.h names them; rows and columns from the
// [N, width] tensor each reads or writes, rows given where the tensor is in a blocked layout):
// the one place the ops, the bit tests and kernel_bench fill them. An input or output that is
// undefined or empty is a null pointer (where kernel_args.h allows one).
DropAddLnArgs drop_add_ln_args(const at::Tensor& resid, const at::Tensor& branch,
                               const at::Tensor& bias, const at::Tensor& gamma,
                               const at::Tensor& beta, const at::Tensor& resid_out,
                               const at::Tensor& y, const at::Tensor& mean, const at::Tensor& rstd,
                               Format branch_format, Format out_format, DropoutArgs drop);
DropAddLnGradArgs drop_add_ln_grad_args(const at::Tensor& dy, const at::Tensor& d_resid_out,
                                        const at::Tensor& resid_out, const at::Tensor& mean,
                                        const at::Tensor& rstd, const at::Tensor& gamma,
                                        const at::Tensor& d_resid, const at::Tensor& d_branch,
                                        const at::Tensor& partials, Format branch_format,
                                        Format out_format, DropoutArgs drop);
BiasReluDropoutArgs bias_relu_dropout_args(const at::Tensor& x, const at::Tensor& bias,
                                           Format format, DropoutArgs drop);
BiasReluDropoutGradArgs bias_relu_dropout_grad_args(const at::Tensor& dout, const at::Tensor& out,
                                                    const at::Tensor& da,
                                                    const at::Tensor& partials, Format format,
                                                    double scale);
CausalSoftmaxArgs causal_softmax_args(const at::Tensor& x, int64_t rows, int64_t seq, int64_t block,
                                      Format format, double scale);
CausalSoftmaxGradArgs causal_softmax_grad_args(const at::Tensor& p, const at::Tensor& dp,
                                               int64_t rows, int64_t seq, int64_t block,
                                               Format format, double scale);
// dst_format: the destination's (its tensors' storage; the values it holds), the source's is
// its own dtype's; the checks of the destination's dtype, the parts' sizes, the bias and the
// partials are one-line errors (c10::Error).
HeadsArgs heads_args(const at::Tensor& rows, const std::vector<at::Tensor>& parts, int64_t seq,
                     int64_t heads, bool to_heads, Format dst_format, int64_t block = 0,
                     const at::Tensor& bias = {}, const at::Tensor& partials = {});
HeadCrossEntropyArgs head_cross_entropy_args(const at::Tensor& logits, const at::Tensor& bias,
                                             const at::Tensor& targets, const at::Tensor& partials,
                                             const at::Tensor& bias_partials, Format format);
ColumnSumsArgs column_sums_args(const at::Tensor& x, const at::Tensor& partials, Format format);
// One parameter's step (contiguous tensors on one device; rows of the last dimension): copy
// undefined for none, else it holds copy_format's values (the run's format: bfloat16 or float16,
// stored as such or in float32 on the float32 GEMM route); grad_scale and found_inf: float32
// [] or [1] tensors on the device, or undefined (1 and 0).
AdamArgs adam_args(const at::Tensor& param, const at::Tensor& exp_avg, const at::Tensor& exp_avg_sq,
                   const at::Tensor& step, const at::Tensor& grad, const at::Tensor& copy = {},
                   Format copy_format = {}, const at::Tensor& grad_scale = {},
                   const at::Tensor& found_inf = {}, const AdamOptions& options = {});
// The parameters' AdamArgs in one pass (one gradient and copy format, at most kAdamListSize).
AdamListArgs adam_list_args(std::span<const AdamArgs> items);

// gpu_rows_taken: the CUDA kernels a run(a, CUDA) launches under gpu_rows(): v2 where it is
// asked for and a's widths and pointers fit it (kernel_args.h kV2*: rows of whole groups of
// kV2Cols columns, at most kV2Groups, of whole packs of kV2Vec columns, at most kV2Packs
// where a thread takes a pack of every row, or of at most kV2Keys keys; pointers on 16 bytes), v1
// otherwise and for Adam (no v2).
#define TB_DECLARE_RUN(Args)                       \
  void run(const Args& a, c10::DeviceType device); \
  GpuRows gpu_rows_taken(const Args& a);
TB_FUSED_KERNELS(TB_DECLARE_RUN)
#undef TB_DECLARE_RUN

// --gpu_kernels: the CUDA row kernels this process launches (v1 until a scope sets another).
// Process-wide, as LibTorch's SDPA switches are: the trainer holds a scope for its run.
GpuRows gpu_rows();
class GpuRowsScope {
 public:
  explicit GpuRowsScope(GpuRows rows);  // sets it
  ~GpuRowsScope();                      // puts back the one before
  GpuRowsScope(const GpuRowsScope&) = delete;
  GpuRowsScope& operator=(const GpuRowsScope&) = delete;

 private:
  GpuRows before_;
};

// "" when this CPU can run the fused kernels, else why not (they are built for AVX2 + FMA, or
// TB_CPU_ROWS asks for a build the CPU cannot run).
std::string cpu_kernels_unavailable();
// The build of the CPU rows this process runs: "avx512" where the CPU has AVX-512 F/BW/VL/DQ,
// else "avx2"; TB_CPU_ROWS=avx2|avx512 forces one (the tests run every kernel test on both).
// "" when none can run.
std::string cpu_rows_isa();
// Whether CUDA code built for TORCH_CUDA_ARCH_LIST `list` ("8.0;9.0+PTX", spaces or ';'
// between entries) runs on a GPU of compute capability major.minor: a native entry X.Y on
// X.Z with Z >= Y (binary compatibility within a major version), a +PTX entry on any later one
// (the driver compiles it at first use).
bool arch_list_runs_on(const std::string& list, int major, int minor);
// "" when bench's CUDA kernels (--compile fused, --fused_adam 1) have code for CUDA device
// `device`, else a one-line reason naming its architecture and the TORCH_CUDA_ARCH_LIST to
// rebuild with (a build without CUDA: "" — the device check comes first).
std::string cuda_kernels_unavailable(int device);
// The TORCH_CUDA_ARCH_LIST the CUDA kernels were built for ("" in a build without CUDA).
std::string cuda_arch_list();
// The choice cpu_rows_isa() makes for a CPU with the sets `isa` (core/cpu_isa.h's answer) and
// TB_CPU_ROWS = `forced` ("": unset); "" with the one-line reason in *why when none can run.
std::string rows_isa_for(const CpuIsa& isa, const std::string& forced, std::string* why);

}  // namespace trainbench::kernels
