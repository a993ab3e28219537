// The arguments of the fused kernels as raw pointers and sizes: what the CPU row functions
// (kernels/cpu_rows.cpp) and the CUDA kernels (gpu/fused_kernels.cu) take, so that neither sees
// a LibTorch header. Tensors are contiguous, row-major; "acc" is the accumulation type (float,
// or double for float64 runs), the other dtypes are the activation types of the run.
#pragma once

#include <cstdint>

namespace trainbench::kernels {

enum class Dt : int32_t { kF32, kF64, kBF16, kF16 };

// Rows per chunk of a column reduction (bias, gamma and beta gradients): each chunk writes its
// own partial sums, which are then added in chunk order, so the result does not depend on the
// thread count.
inline constexpr int64_t kChunkRows = 32;
inline int64_t num_chunks(int64_t rows) { return (rows + kChunkRows - 1) / kChunkRows; }

// r' = resid + dropout(branch + bias); y = LayerNorm(r') (gamma given) or r' itself; [N, d].
struct DropAddLnArgs {
  int64_t rows = 0, cols = 0;
  const void* resid = nullptr;   // [N, d] acc, or null (r' = dropout(branch + bias))
  const void* branch = nullptr;  // [N, d] branch_dt
  const void* bias = nullptr;    // [d] acc, or null
  const void* gamma = nullptr;   // [d] acc, or null: no LayerNorm, y = r'
  const void* beta = nullptr;    // [d] acc (with gamma)
  void* resid_out = nullptr;     // [N, d] acc (r'), or null when nobody needs it
  void* y = nullptr;             // [N, d] out_dt
  void* mean = nullptr;          // [N] acc (with gamma)
  void* rstd = nullptr;          // [N] acc (with gamma)
  Dt acc = Dt::kF32, branch_dt = Dt::kF32, out_dt = Dt::kF32;
  uint64_t key = 0;
  uint32_t threshold = 0;  // dropout: math::dropout_threshold(p)
  double scale = 1, eps = 1e-5;
};

// Backward of DropAddLn. g = d_resid_out + (LayerNorm backward of dy, or dy itself);
// d_resid = g; d_branch = g * mask * scale; per chunk: sum d_branch, sum dy*xhat, sum dy.
struct DropAddLnGradArgs {
  int64_t rows = 0, cols = 0;
  const void* dy = nullptr;           // [N, d] out_dt, or null
  const void* d_resid_out = nullptr;  // [N, d] acc, or null
  const void* resid_out = nullptr;    // [N, d] acc: the saved r' (with gamma)
  const void* mean = nullptr;         // [N] acc (with gamma)
  const void* rstd = nullptr;         // [N] acc (with gamma)
  const void* gamma = nullptr;        // [d] acc, or null: no LayerNorm
  void* d_resid = nullptr;            // [N, d] acc, or null
  void* d_branch = nullptr;           // [N, d] branch_dt
  void* partials = nullptr;           // [chunks, 3, d] acc: d_bias, d_gamma, d_beta
  Dt acc = Dt::kF32, branch_dt = Dt::kF32, out_dt = Dt::kF32;
  uint64_t key = 0;
  uint32_t threshold = 0;
  double scale = 1;
};

// a = dropout(relu(a + bias)) in place, [N, f].
struct BiasReluDropoutArgs {
  int64_t rows = 0, cols = 0;
  void* a = nullptr;           // [N, f] dt
  const void* bias = nullptr;  // [f] acc
  Dt acc = Dt::kF32, dt = Dt::kF32;
  uint64_t key = 0;
  uint32_t threshold = 0;
  double scale = 1;
};
// da = dout * scale where out > 0, else 0; per chunk: sum da (the bias gradient).
struct BiasReluDropoutGradArgs {
  int64_t rows = 0, cols = 0;
  const void* dout = nullptr;  // [N, f] dt
  const void* out = nullptr;   // [N, f] dt (the forward's output)
  void* da = nullptr;          // [N, f] dt
  void* partials = nullptr;    // [chunks, f] acc
  Dt acc = Dt::kF32, dt = Dt::kF32;
  double scale = 1;
};

// Causal softmax of attention scores in place: rows are (batch*head, query t), columns keys j;
// p_j = softmax_j(scale * x_j) over j <= t, 0 above the diagonal. [BH * S, S].
struct CausalSoftmaxArgs {
  int64_t rows = 0, seq = 0;
  void* x = nullptr;  // [BH * S, S] dt; p on return
  Dt dt = Dt::kF32;
  double scale = 1;
};
// dx = scale * p * (dp - sum_k p_k dp_k), in place over dp.
struct CausalSoftmaxGradArgs {
  int64_t rows = 0, seq = 0;
  const void* p = nullptr;  // [BH * S, S] dt
  void* dp = nullptr;       // [BH * S, S] dt; the score gradient on return
  Dt dt = Dt::kF32;
  double scale = 1;
};

// Output head + cross-entropy over the vocabulary: per row, z = logits + bias, loss = lse(z) -
// z[target]; logits are overwritten with the loss gradient (softmax(z) - onehot) / rows.
struct HeadCrossEntropyArgs {
  int64_t rows = 0, cols = 0;
  void* logits = nullptr;            // [N, V] dt; the gradient on return
  const void* bias = nullptr;        // [V] acc
  const int64_t* targets = nullptr;  // [N]
  void* partials = nullptr;          // [chunks] acc: loss sums per chunk
  Dt acc = Dt::kF32, dt = Dt::kF32;
};

}  // namespace trainbench::kernels
