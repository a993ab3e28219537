// Block-lower-triangular score GEMMs of causal attention (see causal_gemm.h).
#include "trainbench/model/causal_gemm.h"

#include "trainbench/core/cpu_isa.h"

#include <algorithm>

#include <ATen/ops/bmm.h>

#include "trainbench/kernels/fused_kernels.h"
#include "trainbench/kernels/fused_math.h"

namespace trainbench {

int64_t causal_block_for(c10::ScalarType dtype, int64_t seq, bool cuda) {
  // Measured faster only where MKL's float32 GEMMs are AVX2 ones (docs/BENCHMARKS.md).
  static const bool avx2_class = !effective_isa().avx512f;
  const bool wide = !kernels::traits(kernels::storage_type_of(dtype)).half;
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
// Rows [r0, r0 + rows) of every head of a [BH, S, hd] product in blocks of query rows
// (fused_math.h head_block_row): one contiguous [BH, rows, hd] view of the flat tensor.
torch::Tensor rows_of_(const torch::Tensor& flat, int64_t bh, int64_t hd, int64_t r0,
                       int64_t rows) {
  return flat.narrow(0, bh * r0 * hd, bh * rows * hd).view({bh, rows, hd});
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
  if (block <= 0 || block >= s) {
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
  const int64_t bh = v.size(0), s = v.size(1), hd = v.size(2);
  if (block <= 0 || block >= s) return at::bmm(p, v);
  // Each block's product into its own contiguous rows: LibTorch's CPU bmm runs one GEMM per
  // head, each dispatched, when its output is a view that is not contiguous (the rows of a
  // [BH, S, hd] tensor were; docs/BENCHMARKS.md).
  torch::Tensor out = torch::empty({v.numel()}, v.options());
  for (int64_t r0 = 0; r0 < s; r0 += block) {
    const torch::Tensor pj = block_of_(p, bh, s, block, r0);
    torch::Tensor rows = rows_of_(out, bh, hd, r0, pj.size(1));
    at::bmm_out(rows, pj, v.narrow(1, 0, pj.size(2)));
  }
  return out;
}

std::array<torch::Tensor, 3> causal_grads(const torch::Tensor& ds, const torch::Tensor& p,
                                          const torch::Tensor& q, const torch::Tensor& k,
                                          const torch::Tensor& dout, int64_t block) {
  // dq = ds k: the product causal_pv makes of P and V (row-block by row-block in blocks).
  torch::Tensor dq = causal_pv(ds, k, block);
  const int64_t bh = q.size(0), s = q.size(1), hd = q.size(2);
  if (block <= 0 || block >= s) {
    return {dq, at::bmm(ds.transpose(1, 2), q), at::bmm(p.transpose(1, 2), dout)};
  }
  // dk and dv in blocks of key rows, each block's products into its contiguous rows (as P v):
  // key block i gathers the key columns [i*block, i*block + rows_i) of every score block j >= i
  // (the blocks that reach them), the last first and the others added in the GEMM (baddbmm_
  // into contiguous rows: one batched product).
  const auto opts = q.options();
  torch::Tensor dk = torch::empty({k.numel()}, opts), dv = torch::empty({dout.numel()}, opts);
  const int64_t last = (s - 1) / block * block;
  for (int64_t i0 = 0; i0 < s; i0 += block) {
    const int64_t rows_i = std::min(block, s - i0);
    torch::Tensor dki = rows_of_(dk, bh, hd, i0, rows_i), dvi = rows_of_(dv, bh, hd, i0, rows_i);
    for (int64_t r0 = last; r0 >= i0; r0 -= block) {
      const int64_t rows = std::min(block, s - r0);
      // The key columns of block i in score block j, transposed: [BH, rows_i, rows_j].
      const torch::Tensor dsj_t = block_of_(ds, bh, s, block, r0).narrow(2, i0, rows_i).mT();
      const torch::Tensor pj_t = block_of_(p, bh, s, block, r0).narrow(2, i0, rows_i).mT();
      const torch::Tensor qj = q.narrow(1, r0, rows), dout_j = dout.narrow(1, r0, rows);
      if (r0 == last) {
        at::bmm_out(dki, dsj_t, qj);
        at::bmm_out(dvi, pj_t, dout_j);
      } else {
        dki.baddbmm_(dsj_t, qj);
        dvi.baddbmm_(pj_t, dout_j);
      }
    }
  }
  return {dq, dk, dv};
}

torch::Tensor causal_unblocked(const torch::Tensor& t, int64_t bh, int64_t seq, int64_t block) {
  if (block <= 0 || block >= seq) return t;
  const int64_t hd = t.numel() / (bh * seq);
  const torch::Tensor flat = t.reshape({-1});
  torch::Tensor out = torch::empty({bh, seq, hd}, t.options());
  for (int64_t r0 = 0; r0 < seq; r0 += block) {
    const int64_t rows = std::min(block, seq - r0);
    out.narrow(1, r0, rows).copy_(rows_of_(flat, bh, hd, r0, rows));
  }
  return out;
}

}  // namespace trainbench
