// The arguments of the fused kernels as raw pointers and sizes: what the CPU rows
// (kernels/cpu/rows.cpp) and the CUDA kernels (kernels/cuda/rows.cu) take, so that neither
// sees a LibTorch header. Tensors are contiguous, row-major; each tensor's elements are
// described by a Format (below): "acc" in a shape comment is the format's accumulation type.
//
// One null contract for every backend: a pointer marked "or null" below may be null and the
// kernels test it; every other pointer is required (a caller with no bias passes zeros).
//
// Adding a kernel: its Args struct here (with formats(): the Formats it holds) and its name in
// TB_FUSED_KERNELS, its builder from tensors in kernel_args.cpp (declared in fused_kernels.h),
// its math in fused_math.h, its rows and rows_for dispatch in cpu/rows.cpp, its CUDA kernel and
// launch in cuda/rows.cu, and the autograd function that calls run() in model/fused_ops.cpp
// (+ its declaration in fused_ops.h).
#pragma once

#include <array>
#include <cstdint>

namespace trainbench::kernels {

// Element storage types of the kernels' tensors.
enum class StorageType : int32_t { kF32, kF64, kBF16, kF16 };

// What a storage type is, in one table (cf. ggml's type traits), indexed by StorageType: its
// name as --dtype says it, its element's bytes, whether it is a 16-bit type (a GEMM of it is a
// 16-bit GEMM; its values are rounded where float32 storage holds them), and the type its math
// accumulates in. The tensor dtype of each is dtype_of's (fused_kernels.h), on the LibTorch side.
struct StorageTraits {
  const char* name;
  int32_t bytes;
  bool half;
  StorageType acc;
};
inline constexpr StorageTraits kStorageTraits[] = {
    {"float32", 4, false, StorageType::kF32},
    {"float64", 8, false, StorageType::kF64},
    {"bfloat16", 2, true, StorageType::kF32},
    {"float16", 2, true, StorageType::kF32},
};
constexpr const StorageTraits& traits(StorageType t) {
  return kStorageTraits[static_cast<int32_t>(t)];
}

// How a kernel's tensor holds its elements, the one kernel-side form of the run's dtype (cf.
// ggml_type's traits, llm.c's floatX): `storage`, its elements' type; `values`, the type whose
// values they are: the storage's own, or on the float32 GEMM route float32 storage of bfloat16
// or float16 values, which a kernel rounds to them as it reads and writes them (as a 16-bit
// tensor would be), so the GEMMs on either side read them without a conversion; `acc`, what
// the math accumulates in (float32, or float64 for float64 storage). format_of
// (fused_kernels.h) builds one and refuses any other combination in one line.
struct Format {
  StorageType storage = StorageType::kF32, values = StorageType::kF32, acc = StorageType::kF32;
};
constexpr bool operator==(const Format& a, const Format& b) {
  return a.storage == b.storage && a.values == b.values && a.acc == b.acc;
}

// Every Format a kernel holds (format_of refuses the rest): first the five a run
// reaches (its dtype's own storage; on the float32 GEMM route float32 storage of its 16-bit
// values), then float64, the tests' reference. The kernels are instantiated per entry
// (storage.h with_format): a run's formats in bench and in the tests, float64 in the test
// binary alone (kernels/cpu/rows_f64.cpp; bench refuses it in one line).
inline constexpr Format kFormats[] = {
    {StorageType::kF32, StorageType::kF32, StorageType::kF32},
    {StorageType::kBF16, StorageType::kBF16, StorageType::kF32},
    {StorageType::kF16, StorageType::kF16, StorageType::kF32},
    {StorageType::kF32, StorageType::kBF16, StorageType::kF32},
    {StorageType::kF32, StorageType::kF16, StorageType::kF32},
    {StorageType::kF64, StorageType::kF64, StorageType::kF64},
};
inline constexpr int kNumFormats = static_cast<int>(sizeof(kFormats) / sizeof(kFormats[0]));

// Rows per chunk of a column reduction (bias, gamma and beta gradients): each chunk writes its
// own partial sums, which are then added in chunk order, so the result does not depend on the
// thread count (or on the device: the CUDA kernels reduce a chunk per block in the same order).
inline constexpr int64_t kChunkRows = 32;
inline int64_t num_chunks(int64_t rows) { return (rows + kChunkRows - 1) / kChunkRows; }

// The v2 CUDA rows' sizes (--gpu_kernels v2, kernels/cuda/rows_v2.cu): a warp's lane moves
// kV2Vec consecutive columns a load (16 bytes of 16-bit values), so a LayerNorm or logits row
// is groups of kV2Cols columns, at most kV2Groups of them in the lanes' registers; a softmax
// row at most kV2Keys keys (kV2Keys / 32 a lane); where a block takes a chunk of rows with a
// thread per kV2Vec columns, at most kV2Packs threads. Wider rows take v1 (fused_kernels.h).
inline constexpr int64_t kV2Vec = 8, kV2Cols = 32 * kV2Vec, kV2Groups = 4, kV2Keys = 512,
                         kV2Packs = 512;

// Dropout as every kernel takes it: counter-based keep(key, index) (fused_math.h) with
// threshold = dropout_threshold(p) and the kept elements' factor scale = 1 / (1 - p).
struct DropoutArgs {
  uint64_t key = 0;
  uint32_t threshold = 0;  // 0 keeps every element
  double scale = 1;
  // The step the masks are drawn for, read where the kernel runs (a device scalar on CUDA, so
  // that a captured graph's replays draw new masks), or null: the key as it is (fused_math.h
  // at_step).
  const int64_t* step = nullptr;
};

// r' = resid + dropout(branch + bias); y = LayerNorm(r') (gamma given) or r' itself; [N, d].
struct DropAddLnArgs {
  int64_t rows = 0, cols = 0;
  const void* resid = nullptr;   // [N, d] acc, or null (r' = dropout(branch + bias))
  const void* branch = nullptr;  // [N, d] branch_format
  const void* bias = nullptr;    // [d] acc
  const void* gamma = nullptr;   // [d] acc, or null: no LayerNorm, y = r'
  const void* beta = nullptr;    // [d] acc (with gamma)
  void* resid_out = nullptr;     // [N, d] acc (r')
  void* y = nullptr;             // [N, d] out_format
  void* mean = nullptr;          // [N] acc (with gamma)
  void* rstd = nullptr;          // [N] acc (with gamma)
  // out_format: y's, as the next GEMMs read it (the run's format); its acc is the kernel's.
  Format branch_format, out_format;
  DropoutArgs drop;
  double eps = 1e-5;
  auto formats() const { return std::array{branch_format, out_format}; }
};

// Backward of DropAddLn. g = d_resid_out + (LayerNorm backward of dy, or dy itself);
// d_resid = g; d_branch = g * mask * scale; per chunk: sum d_branch, sum dy*xhat, sum dy.
struct DropAddLnGradArgs {
  int64_t rows = 0, cols = 0;
  const void* dy = nullptr;           // [N, d] out_format
  const void* d_resid_out = nullptr;  // [N, d] acc
  const void* resid_out = nullptr;    // [N, d] acc: the saved r' (read with gamma)
  const void* mean = nullptr;         // [N] acc (with gamma)
  const void* rstd = nullptr;         // [N] acc (with gamma)
  const void* gamma = nullptr;        // [d] acc, or null: no LayerNorm
  void* d_resid = nullptr;            // [N, d] acc, or null: not wanted
  void* d_branch = nullptr;           // [N, d] branch_format
  void* partials = nullptr;           // [chunks, 3, d] acc: d_bias, d_gamma, d_beta
  // As DropAddLnArgs'; float32 dy of 16-bit values (a GEMM's unrounded output) is rounded to
  // them as it is read.
  Format branch_format, out_format;
  DropoutArgs drop;
  auto formats() const { return std::array{branch_format, out_format}; }
};

// a = dropout(relu(a + bias)) in place, [N, f]. Here and in the causal softmax each row is
// rounded to the format's values as it is read (the GEMM's own output) and as it is written.
struct BiasReluDropoutArgs {
  int64_t rows = 0, cols = 0;
  void* a = nullptr;           // [N, f] format
  const void* bias = nullptr;  // [f] acc
  Format format;
  DropoutArgs drop;
  auto formats() const { return std::array{format}; }
};
// da = dout * scale where out > 0, else 0; per chunk: sum da (the bias gradient).
struct BiasReluDropoutGradArgs {
  int64_t rows = 0, cols = 0;
  const void* dout = nullptr;  // [N, f] format
  const void* out = nullptr;   // [N, f] format (the forward's output)
  void* da = nullptr;          // [N, f] format
  void* partials = nullptr;    // [chunks, f] acc
  Format format;
  double scale = 1;  // the forward's dropout scale
  auto formats() const { return std::array{format}; }
};

// Causal softmax of attention scores in place: rows are (batch*head, query t), columns keys j;
// p_j = softmax_j(scale * x_j) over j <= t, 0 above the diagonal. [BH * S, S]. format: as for
// BiasReluDropoutArgs (x the score GEMM's own output).
// block in (0, S): x is in the blocked causal layout of `block` query rows instead (each row as
// long as its block's keys; fused_math.h score_row), as the blocked score GEMMs leave it.
struct CausalSoftmaxArgs {
  int64_t rows = 0, seq = 0;
  void* x = nullptr;  // [BH * S, S] format; p on return
  int64_t block = 0;
  Format format;
  double scale = 1;
  auto formats() const { return std::array{format}; }
};
// dx = scale * p * (dp - sum_k p_k dp_k), in place over dp; on the float32 route p holds
// rounded values already, dp (a GEMM's output) is rounded as it is read, dx as it is stored.
// block: p and dp in the blocked layout, as for CausalSoftmaxArgs.
struct CausalSoftmaxGradArgs {
  int64_t rows = 0, seq = 0;
  const void* p = nullptr;  // [BH * S, S] format
  void* dp = nullptr;       // [BH * S, S] format; the score gradient on return
  int64_t block = 0;
  Format format;
  double scale = 1;
  auto formats() const { return std::array{format}; }
};

// Attention heads between a linear's rows and the attention GEMMs' layout: rows [N = B*S,
// P*H*hd] (row b*S + s holds part p's head h in columns (p*H + h)*hd: q, k, v for P = 3) and
// P tensors heads[p] [B*H, S, hd]. to_heads: the rows are read and the heads written, else the
// reverse. Each element goes from the source's storage to the destination's (rounded to it when
// it is 16-bit); where the destination's format is float32 storage of 16-bit values a float32
// source is rounded to them: one pass where the layout copy, the rounding of a GEMM's output
// and the next GEMM's conversion were three (the source's format: its storage). bias (to_heads
// only): the rows' linear's bias, added to each row as it is read (in HeadsAcc, before any
// rounding: the GEMM then runs without it, and addmm's copy of it into the product is gone).
// partials (to rows only): the column sums of the rows as stored, per chunk of kChunkRows rows
// as ColumnSumsArgs adds them (that bias's gradient, from the pass that writes its rows).
struct HeadsArgs {
  int64_t rows = 0, seq = 1, heads = 1, hd = 0, parts = 1;
  void* row_data = nullptr;                          // [N, P*H*hd] rows_format
  void* head_data[3] = {nullptr, nullptr, nullptr};  // P x [B*H, S, hd] heads_format
  const void* bias = nullptr;                        // [P*H*hd] HeadsAcc, or null
  void* partials = nullptr;                          // [chunks, P*H*hd] HeadsAcc, or null
  Format rows_format, heads_format;
  bool to_heads = true;
  int64_t block = 0;  // the heads tensors in blocks of query rows (fused_math.h head_block_row)
  auto formats() const { return std::array{rows_format, heads_format}; }
};

// Output head + cross-entropy over the vocabulary: per row, z = logits + bias, loss = lse(z) -
// z[target]; logits are overwritten with the loss gradient (softmax(z) - onehot) / rows.
// The logits (the GEMM's product) are rounded to the format's values as they are read, the
// gradient as it is stored.
// bias_partials: the column sums of the gradient as stored, per chunk as ColumnSumsArgs adds
// them (the bias's gradient for a loss gradient of 1).
struct HeadCrossEntropyArgs {
  int64_t rows = 0, cols = 0;
  void* logits = nullptr;            // [N, V] format; the gradient on return
  const void* bias = nullptr;        // [V] acc
  const int64_t* targets = nullptr;  // [N]
  void* partials = nullptr;          // [chunks] acc: loss sums per chunk
  void* bias_partials = nullptr;     // [chunks, V] acc, or null
  Format format;
  auto formats() const { return std::array{format}; }
};

// Column sums of rows [N, w] (a bias gradient whose rows no other kernel reads) as per-chunk
// partial sums, read once in their own storage type.
struct ColumnSumsArgs {
  int64_t rows = 0, cols = 0;
  const void* x = nullptr;   // [N, w] format (its storage read as it is)
  void* partials = nullptr;  // [chunks, w] acc
  Format format;
  auto formats() const { return std::array{format}; }
};

// ColumnSums of rows [rows, cols] at x in `format` into partials (kernel_args.cpp builds it from
// tensors; the CUDA heads launch, from the merged rows it wrote).
inline ColumnSumsArgs column_sums_args(int64_t rows, int64_t cols, const void* x, void* partials,
                                       Format format) {
  return {.rows = rows, .cols = cols, .x = x, .partials = partials, .format = format};
}

// Adam's hyperparameters (train/fused_adam.h FusedAdamOptions), as AdamArgs takes them.
struct AdamOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
};

// One Adam step (no weight decay) on a float32 parameter seen as rows [N, w] (any shape:
// N = numel / w), with its float32 moments: g = grad / grad_scale; m = b1 m + (1 - b1) g;
// v = b2 v + (1 - b2) g^2; p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps); and
// where a copy is given, copy = p in copy_format (the weight as the next step's GEMMs read it,
// written in the same pass, in the run's format). Nothing changes when *found_inf != 0. step,
// grad_scale and found_inf are read where the kernel runs (device scalars on CUDA), so no value
// is read back to the host.
struct AdamArgs {
  int64_t rows = 0, cols = 0;
  void* param = nullptr;              // [N, w] f32
  void* exp_avg = nullptr;            // [N, w] f32
  void* exp_avg_sq = nullptr;         // [N, w] f32
  const void* grad = nullptr;         // [N, w] grad_format
  void* copy = nullptr;               // [N, w] copy_format, or null
  const float* step = nullptr;        // [] t, this step's count (already incremented)
  const float* grad_scale = nullptr;  // [], or null: 1
  const float* found_inf = nullptr;   // [], or null: 0
  Format grad_format, copy_format;
  AdamOptions options;
  auto formats() const { return std::array{grad_format, copy_format}; }
};

// Adam over several parameters of one gradient and copy format in one pass (--adam_kernel
// multi), each item an AdamArgs: the CPU takes the chunks of kChunkRows rows of every item in
// turn, CUDA one launch with a row of blocks per item. At most kAdamListSize items, so that a
// CUDA kernel's 4 KiB of parameters hold them.
inline constexpr int kAdamListSize = 24;
struct AdamListArgs {
  int32_t count = 0;
  AdamArgs items[kAdamListSize];
  int64_t chunks() const {  // the launcher's: every item's chunks
    int64_t n = 0;
    for (int32_t i = 0; i < count; ++i) n += num_chunks(items[i].rows);
    return n;
  }
  auto formats() const { return items[0].formats(); }
};
static_assert(sizeof(AdamListArgs) <= 4096, "a CUDA kernel's parameters: 4 KiB");

// Every kernel's Args: each backend's declarations and the entry run() (fused_kernels.h) are
// made from this list.
#define TB_FUSED_KERNELS(X)  \
  X(DropAddLnArgs)           \
  X(DropAddLnGradArgs)       \
  X(BiasReluDropoutArgs)     \
  X(BiasReluDropoutGradArgs) \
  X(CausalSoftmaxArgs)       \
  X(CausalSoftmaxGradArgs)   \
  X(HeadsArgs)               \
  X(HeadCrossEntropyArgs)    \
  X(ColumnSumsArgs)          \
  X(AdamArgs)                \
  X(AdamListArgs)

}  // namespace trainbench::kernels
