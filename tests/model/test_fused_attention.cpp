// The fused causal attention (model/fused_ops.h, model/causal_gemm.h) beyond the kernel table:
// the float32 route's scores and qkv rows against the 16-bit path they replace, bit for bit; the
// attention in blocks against the whole square; and the shapes and dtypes it refuses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include <torch/torch.h>

#include "kernels/kernel_table.h"
#include "trainbench/kernels/fused_kernels.h"
#include "trainbench/kernels/fused_math.h"
#include "trainbench/model/fused_ops.h"

namespace trainbench {
namespace {

using testing::attention_of;
using testing::error_of;
using testing::leaf;
using testing::rel_err;
using testing::run_format;
using torch::Tensor;

// The float32 route's attention scores in float32 storage: the output and the q, k, v gradients
// have the bits of the 16-bit score path it replaces (each score product rounded to the dtype,
// the softmax kernels on 16-bit rows, the probabilities and score gradient widened exactly for
// the next GEMMs), in bfloat16 and float16, as one product and in blocks of query rows; at the
// reference shape, where a softmax sum added in another order had shown in the last bit.
TEST(FusedOps, TheFloat32RoutesAttentionScoresHaveTheBitsOf16BitScores) {
  namespace k = kernels;
  const int64_t b = 2, h = 4, s = 256, hd = 64;
  for (const auto dt : {torch::kBFloat16, torch::kHalf}) {
    for (const int64_t block : {s, int64_t{128}}) {
      SCOPED_TRACE(std::string(c10::toString(dt)) + " block " + std::to_string(block));
      torch::manual_seed(5);
      auto make = [&] { return leaf(torch::randn({b, h, s, hd}).to(dt)); };
      const Tensor q = make(), kk = make(), v = make(), g = torch::randn({b, h, s, hd}).to(dt);
      // The output is float32 holding the dtype's values, its gradient float32 (fused_ops.h).
      attention_of(q, kk, v, GemmRoute::kFloat32, block).backward(g.to(torch::kFloat));
      const Tensor out = attention_of(q, kk, v, GemmRoute::kFloat32, block).detach();
      EXPECT_EQ(out.scalar_type(), torch::kFloat);
      // The 16-bit path by hand: float32 products of the dtype's values, rounded scores.
      auto wide = [&](const Tensor& t) {
        return t.detach().reshape({b * h, s, hd}).to(torch::kFloat);
      };
      const Tensor q32 = wide(q), k32 = wide(kk), v32 = wide(v), g32 = wide(g);
      // In blocks every score-shaped tensor stays in the flat layout (causal_gemm.h).
      Tensor p = causal_scores(q32, k32, dt, block);
      const auto sa =
          k::causal_softmax_args(p, b * h * s, s, block, k::format_of(dt, dt, torch::kFloat),
                                 1.0 / std::sqrt(static_cast<double>(hd)));
      k::run(sa, c10::DeviceType::CPU);
      const Tensor p32 = p.to(torch::kFloat);
      auto as_q = [&](const Tensor& t) { return t.to(dt).view({b, h, s, hd}); };
      // In blocks, P V and the gradients are in blocks of rows (causal_gemm.h).
      auto plain = [&](const Tensor& t) { return causal_unblocked(t, b * h, s, block); };
      EXPECT_TRUE(torch::equal(out, as_q(plain(causal_pv(p32, v32, block))).to(torch::kFloat)));
      Tensor ds = causal_scores(g32, v32, dt, block);
      k::run(k::causal_softmax_grad_args(p, ds, sa.rows, s, block, sa.format, sa.scale),
             c10::DeviceType::CPU);
      const auto [dq, dk, dv] = causal_grads(ds.to(torch::kFloat), p32, q32, k32, g32, block);
      EXPECT_TRUE(torch::equal(q.grad(), as_q(plain(dq))));
      EXPECT_TRUE(torch::equal(kk.grad(), as_q(plain(dk))));
      EXPECT_TRUE(torch::equal(v.grad(), as_q(plain(dv))));
    }
  }
}

// The blocked causal layout (causal_gemm.h): each block holds the bits of its own product; the
// softmax kernels in place there give each row the bits they give it on the whole square (a
// last block shorter than the others, every storage type); and the products on the blocks agree
// with the whole square's (zeros above the diagonal) to rounding.
TEST(FusedOps, TheAttentionInBlocksIsTheSquaresAttention) {
  namespace k = kernels;
  const int64_t bh = 3, s = 37, hd = 8, block = 16;
  for (const auto dt : {torch::kFloat, torch::kDouble, torch::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dt));
    torch::manual_seed(21);
    auto make = [&] { return torch::randn({bh, s, hd}, dt); };
    const Tensor a = make(), b = make(), v = make(), dout = make();
    const Tensor blocks = causal_scores(a, b, dt, block);
    ASSERT_EQ(blocks.dim(), 1);
    ASSERT_EQ(blocks.numel(), causal_blocks_size(bh, s, block));
    ASSERT_EQ(causal_blocks_size(bh, s, block), bh * (16 * 16 + 16 * 32 + 5 * 37));
    // The square from the same products, zeros above each block's keys.
    Tensor square = torch::zeros({bh, s, s}, dt);
    auto each_block = [&](const std::function<void(int64_t, int64_t, int64_t, int64_t)>& f) {
      for (int64_t r0 = 0, at = 0; r0 < s; r0 += block) {
        const int64_t rows = std::min(block, s - r0), keys = r0 + rows;
        f(r0, rows, keys, at);
        at += bh * rows * keys;
      }
    };
    auto in_square = [&](const Tensor& flat) {
      Tensor sq = torch::zeros({bh, s, s}, dt);
      each_block([&](int64_t r0, int64_t rows, int64_t keys, int64_t at) {
        sq.narrow(1, r0, rows)
            .narrow(2, 0, keys)
            .copy_(flat.narrow(0, at, bh * rows * keys).view({bh, rows, keys}));
      });
      return sq;
    };
    each_block([&](int64_t r0, int64_t rows, int64_t keys, int64_t at) {
      const Tensor want =
          torch::bmm(a.narrow(1, r0, rows), b.narrow(1, 0, keys).transpose(1, 2)).reshape(-1);
      EXPECT_TRUE(torch::equal(blocks.narrow(0, at, want.numel()), want)) << "block at " << r0;
    });
    square = in_square(blocks);
    // Forward in place on the blocks against in place on the square.
    Tensor p_blocks = blocks.clone(), p_square = square.clone();
    const k::Format format = k::format_of(dt, dt);
    k::run(k::causal_softmax_args(p_square, bh * s, s, 0, format, 0.3), c10::DeviceType::CPU);
    k::run(k::causal_softmax_args(p_blocks, bh * s, s, block, format, 0.3), c10::DeviceType::CPU);
    EXPECT_TRUE(torch::equal(in_square(p_blocks), p_square));
    // Backward: the same products standing for dP.
    Tensor ds_blocks = blocks.clone(), ds_square = square.clone();
    k::run(k::causal_softmax_grad_args(p_square, ds_square, bh * s, s, 0, format, 0.3),
           c10::DeviceType::CPU);
    k::run(k::causal_softmax_grad_args(p_blocks, ds_blocks, bh * s, s, block, format, 0.3),
           c10::DeviceType::CPU);
    EXPECT_TRUE(torch::equal(in_square(ds_blocks), ds_square));
    // The products on the blocks against the square's (another order of addition).
    const double tol = dt == torch::kBFloat16 ? 2e-2 : 1e-5;
    // P V and the gradients in blocks of rows (causal_gemm.h): flat, each block contiguous.
    auto plain = [&](const Tensor& t) {
      EXPECT_EQ(t.dim(), 1);
      return causal_unblocked(t, bh, s, block);
    };
    EXPECT_TRUE(
        torch::allclose(plain(causal_pv(p_blocks, v, block)), causal_pv(p_square, v, s), tol, tol));
    const auto got = causal_grads(ds_blocks, p_blocks, a, b, dout, block);
    const auto want = causal_grads(ds_square, p_square, a, b, dout, s);
    for (int i = 0; i < 3; ++i) {
      EXPECT_TRUE(torch::allclose(plain(got[i]), want[i], tol, tol)) << "gradient " << i;
    }
  }
}

// The float32 route's qkv rows as the model gives them (the qkv GEMM's float32 output,
// unrounded) and its output gradient as the output projection gives it (a float32 GEMM's
// output, unrounded): the attention rounds both as it splits the heads, so its output, float32
// holding the dtype's values, is the one the dtype's rows give bit for bit, and the gradient it
// returns is float32 holding the dtype's rows' gradient exactly.
TEST(FusedOps, TheFloat32RoutesQkvRowsAreRoundedAsTheHeadsAreSplit) {
  const int64_t b = 2, h = 4, s = 33, hd = 16;
  for (const auto dt : {torch::kBFloat16, torch::kHalf}) {
    SCOPED_TRACE(c10::toString(dt));
    torch::manual_seed(12);
    const Tensor rows32 = leaf(torch::randn({b * s, 3 * h * hd}));
    const Tensor rows16 = leaf(rows32.detach().to(dt));
    const Tensor g = torch::randn({b * s, h * hd});
    const Tensor out32 = causal_attention(rows32, s, h, run_format(dt, GemmRoute::kFloat32));
    const Tensor out16 = causal_attention(rows16, s, h, run_format(dt, GemmRoute::kFloat32));
    EXPECT_EQ(out32.scalar_type(), torch::kFloat);
    EXPECT_TRUE(torch::equal(out32, out16));
    EXPECT_TRUE(torch::equal(out32, out32.to(dt).to(torch::kFloat)));
    out32.backward(g);
    out16.backward(g.to(dt).to(torch::kFloat));
    EXPECT_EQ(rows32.grad().scalar_type(), torch::kFloat);
    EXPECT_EQ(rows16.grad().scalar_type(), dt);
    EXPECT_TRUE(torch::equal(rows32.grad(), rows16.grad().to(torch::kFloat)));
  }
}

// The qkv linear's bias added as the heads are split (the model's float32 rows: float32 runs and
// the float32 route): the output and the rows' gradient are those of the rows with the bias
// added first, bit for bit (one float32 add either way), and the bias's gradient is the column
// sums of the rows' gradient.
TEST(FusedOps, AQkvBiasAddedAsTheHeadsAreSplitIsTheBiasAddedFirst) {
  const int64_t b = 2, h = 4, s = 33, hd = 16;
  for (const auto dt : {torch::kFloat, torch::kBFloat16, torch::kHalf}) {
    SCOPED_TRACE(c10::toString(dt));
    const auto f = run_format(dt, GemmRoute::kFloat32);  // float32 rows either way
    torch::manual_seed(13);
    const Tensor rows = leaf(torch::randn({b * s, 3 * h * hd}));
    const Tensor bias = leaf(torch::randn({3 * h * hd}));
    const Tensor first = leaf(rows.detach());  // the same rows, the bias added before the op
    const Tensor g = torch::randn({b * s, h * hd});
    const Tensor out = causal_attention(rows, s, h, f, 0, bias);
    const Tensor want = causal_attention(first + bias.detach(), s, h, f);
    EXPECT_TRUE(torch::equal(out, want));
    out.backward(g);
    want.backward(g);
    EXPECT_TRUE(torch::equal(rows.grad(), first.grad()));
    EXPECT_LE(rel_err(bias.grad(), first.grad().sum(0)), 1e-6);
  }
}

// 16-bit rows on the native route: the linear adds the qkv bias (rounded once with the product)
// and is given it detached; the attention adds nothing to 16-bit rows and returns its
// gradient from the merge of the rows' gradient. Against the linear computing that gradient
// itself: the output and every gradient bit for bit (the same column sums, in the same order).
TEST(FusedOps, AQkvBiasInTheRowsHasItsGradientFromTheAttentionsMerge) {
  const int64_t b = 2, h = 2, s = 9, hd = 8, d = h * hd;
  for (const auto dt : {torch::kBFloat16, torch::kHalf}) {
    SCOPED_TRACE(c10::toString(dt));
    torch::manual_seed(17);
    const Tensor x = leaf(torch::randn({b * s, 12}).to(dt));
    const Tensor w = leaf(torch::randn({3 * d, 12}).mul(0.3).to(dt));
    const Tensor bias = leaf(torch::randn({3 * d}) * 0.1);
    const Tensor g = torch::randn({b * s, d}).to(dt);
    const auto run = [&](bool in_rows) {
      const Tensor rows =
          fused_linear(x, w, in_rows ? bias.detach() : bias, run_format(dt), run_format(dt));
      const Tensor out = causal_attention(rows, s, h, run_format(dt), 0, in_rows ? bias : Tensor());
      out.backward(g);
      std::vector<Tensor> r{out.detach(), x.grad().clone(), w.grad().clone(), bias.grad().clone()};
      for (const Tensor& t : {x, w, bias}) t.mutable_grad() = Tensor();
      return r;
    };
    const auto want = run(false), got = run(true);
    const char* names[] = {"out", "x", "w", "bias"};
    for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(torch::equal(got[i], want[i])) << names[i];
  }
}

// Rows that are not q, k, v of the given heads and sequence are refused in one line, as is a
// dtype that neither the rows nor the route's storage is.
TEST(FusedOps, CausalAttentionRefusesRowsThatAreNotQkvOfItsHeads) {
  const Tensor rows = torch::randn({8, 24});  // 2 sequences of 4, 3 x 2 heads x 4
  const auto f32 = run_format(torch::kFloat);
  EXPECT_EQ(causal_attention(rows, 4, 2, f32).sizes(), (std::vector<int64_t>{8, 8}));
  EXPECT_NE(error_of([&] {
              causal_attention(rows, 3, 2, f32);
            }).find("qkv rows are [B*S, 3*H*hd]; got [8, 24] for seq 3 and 2 heads"),
            std::string::npos);
  EXPECT_NE(error_of([&] { causal_attention(rows, 4, 5, f32); }).find("for seq 4 and 5"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              causal_attention(rows, 4, 2, run_format(torch::kBFloat16));
            }).find("causal_attention: qkv rows in Float for a run in bfloat16 (BFloat16 only)"),
            std::string::npos);
  // A bias only of the rows' width.
  EXPECT_NE(error_of([&] {
              causal_attention(rows, 4, 2, f32, 0, torch::zeros({23}));
            }).find("a qkv bias of 24 values; got [23]"),
            std::string::npos);
}

}  // namespace
}  // namespace trainbench
