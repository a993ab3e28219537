// Block-lower-triangular score GEMMs of causal attention (see causal_gemm.h).
#include "trainbench/model/causal_gemm.h"

#include "trainbench/core/cpu_isa.h"

#include <algorithm>

#include <ATen/ops/bmm.h>

#include "trainbench/kernels/fused_math.h"

namespace trainbench {

int64_t causal_block_for(c10::ScalarType dtype, int64_t seq, bool cuda) {
  // Measured faster only where MKL's float32 GEMMs are AVX2 ones (docs/BENCHMARKS.md).
  static const bool avx2_class = !effective_isa().avx512f;
  const bool wide = dtype == torch::kFloat || dtype == torch::kDouble;
  return !cuda && wide && avx2_class ? kCausalBlock : seq;
}

namespace {
// Block j of the flat layout as [BH, rows, keys] (a view).
torch::Tensor block_of_(const torch::Tensor& flat, int64_t bh, int64_t s, int64_t block,
                        int64_t r0) {
  const int64_t rows = std::min(block, s - r0), keys = r0 + rows;
  return flat.narrow(0, kernels::math::causal_block_row(0, r0, bh, s, block), bh * rows * keys)
      .view({bh, rows, keys});
}
}  // namespace

int64_t causal_blocks_size(int64_t bh, int64_t seq, int64_t block) {
  // The offset one past the last row of the last block.
  const int64_t last = (seq - 1) / block * block, rows = seq - last;
  return kernels::math::causal_block_row(0, last, bh, seq, block) + bh * rows * seq;
}

torch::Tensor causal_scores(const torch::Tensor& a, const torch::Tensor& b, c10::ScalarType dtype,
                            int64_t block) {
  const int64_t s = a.size(1);
  if (block >= s) {
    const torch::Tensor whole = at::bmm(a, b.transpose(1, 2));
    return whole.scalar_type() == dtype ? whole : whole.to(dtype);
  }
  // Each block's product straight into its place in the flat layout, contiguous there.
  const int64_t bh = a.size(0);
  torch::Tensor out = torch::empty({causal_blocks_size(bh, s, block)}, a.options().dtype(dtype));
  for (int64_t r0 = 0; r0 < s; r0 += block) {
    torch::Tensor dst = block_of_(out, bh, s, block, r0);
    const torch::Tensor qa = a.narrow(1, r0, dst.size(1)),
                        kb = b.narrow(1, 0, dst.size(2)).transpose(1, 2);
    if (a.scalar_type() == dtype) {
      at::bmm_out(dst, qa, kb);
    } else {
      dst.copy_(at::bmm(qa, kb));  // operands of another dtype (a test's float32 of 16-bit)
    }
  }
  return out;
}

torch::Tensor causal_pv(const torch::Tensor& p, const torch::Tensor& v, int64_t block) {
  const int64_t bh = v.size(0), s = v.size(1);
  if (block >= s) return at::bmm(p, v);
  torch::Tensor out = torch::empty_like(v);
  for (int64_t r0 = 0; r0 < s; r0 += block) {
    const torch::Tensor pj = block_of_(p, bh, s, block, r0);
    torch::Tensor rows = out.narrow(1, r0, pj.size(1));
    at::bmm_out(rows, pj, v.narrow(1, 0, pj.size(2)));
  }
  return out;
}

std::array<torch::Tensor, 3> causal_grads(const torch::Tensor& ds, const torch::Tensor& p,
                                          const torch::Tensor& q, const torch::Tensor& k,
                                          const torch::Tensor& dout, int64_t block) {
  const int64_t bh = q.size(0), s = q.size(1);
  if (block >= s) {
    return {at::bmm(ds, k), at::bmm(ds.transpose(1, 2), q), at::bmm(p.transpose(1, 2), dout)};
  }
  // dq row-block by row-block; dk and dv gather every block's contribution to their keys
  // (block j reaches keys [0, (j + 1) * block)): the last block, which reaches every key, is
  // written first, straight into them; each earlier one is a product of its own added into the
  // keys it reaches. LibTorch's CPU bmm runs one GEMM per head, each dispatched, when its output
  // is a view that is not contiguous: baddbmm_ into those rows did (2 * B*H calls a block; the
  // op 0.89x at the median without them, docs/BENCHMARKS.md). dq and P v still do: a product
  // into a temporary and a copy into the rows measured no faster.
  torch::Tensor dq = torch::empty_like(q), dk = torch::empty_like(k), dv = torch::empty_like(dout);
  const int64_t last = (s - 1) / block * block;
  for (int64_t r0 = last; r0 >= 0; r0 -= block) {
    const torch::Tensor dsj = block_of_(ds, bh, s, block, r0), pj = block_of_(p, bh, s, block, r0);
    const int64_t rows = dsj.size(1), keys = dsj.size(2);
    torch::Tensor dqj = dq.narrow(1, r0, rows);
    at::bmm_out(dqj, dsj, k.narrow(1, 0, keys));
    const torch::Tensor dsj_t = dsj.transpose(1, 2), pj_t = pj.transpose(1, 2);
    const torch::Tensor qj = q.narrow(1, r0, rows), dout_j = dout.narrow(1, r0, rows);
    if (r0 == last) {
      at::bmm_out(dk, dsj_t, qj);
      at::bmm_out(dv, pj_t, dout_j);
    } else {
      dk.narrow(1, 0, keys).add_(at::bmm(dsj_t, qj));
      dv.narrow(1, 0, keys).add_(at::bmm(pj_t, dout_j));
    }
  }
  return {dq, dk, dv};
}

}  // namespace trainbench
