// The fused kernels' own layer, below the autograd ops: the storage conversions both backends
// share (storage.h) against LibTorch's, the null contract of kernel_args.h through run() on
// the CPU, and the dtypes run() refuses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <torch/torch.h>

#include "kernels/kernel_table.h"
#include "test_util.h"
#include "trainbench/core/cpu_isa.h"
#include "trainbench/core/errors.h"
#include "trainbench/kernels/fused_kernels.h"
#include "trainbench/kernels/fused_math.h"
#include "trainbench/kernels/storage.h"

namespace trainbench {
namespace {

namespace k = kernels;

TEST(KernelStorage, Bfloat16AndFloat16RoundAsLibTorchDoes) {
  const torch::Tensor x = testing::awkward_floats();
  const float* xs = x.data_ptr<float>();
  const torch::Tensor bf = x.to(torch::kBFloat16), hf = x.to(torch::kHalf);
  for (int64_t i = 0; i < x.numel(); ++i) {
    uint16_t want_bf, want_hf;
    std::memcpy(&want_bf, bf.data_ptr<at::BFloat16>() + i, 2);
    std::memcpy(&want_hf, hf.data_ptr<at::Half>() + i, 2);
    if (std::isnan(xs[i])) {  // any quiet NaN will do
      EXPECT_TRUE(std::isnan(k::to_float(k::to_bf16(xs[i]))));
      EXPECT_TRUE(std::isnan(k::to_float(k::to_half(xs[i]))));
      continue;
    }
    EXPECT_EQ(k::to_bf16(xs[i]).bits, want_bf) << xs[i];
    EXPECT_EQ(k::to_half(xs[i]).bits, want_hf) << xs[i];
    EXPECT_EQ(k::to_float(k::Bf16{want_bf}), static_cast<float>(bf[i].item<float>()));
    EXPECT_EQ(k::to_float(k::Half{want_hf}), static_cast<float>(hf[i].item<float>()));
  }
}

// DropAddLn with the inputs that may be null left null (no residual, no LayerNorm) and no
// dropout: y = r' = branch + bias, in the branch's storage type.
TEST(KernelRun, DropAddLnWithoutResidualOrLayerNormIsBranchPlusBias) {
  const torch::Tensor branch = torch::randn({70, 24}).to(torch::kBFloat16);
  const torch::Tensor bias = torch::randn({24});
  torch::Tensor resid_out = torch::empty({70, 24}), y = torch::empty({70, 24}, torch::kBFloat16);
  const k::Format bf16 = k::format_of(torch::kBFloat16, torch::kBFloat16);
  k::run(k::drop_add_ln_args({}, branch, bias, {}, {}, resid_out, y, {}, {}, bf16, bf16,
                             k::math::dropout_args(0.0, 9)),
         c10::DeviceType::CPU);
  const torch::Tensor want = branch.to(torch::kFloat) + bias;
  EXPECT_TRUE(torch::equal(resid_out, want));
  EXPECT_TRUE(torch::equal(y, want.to(torch::kBFloat16)));
}

// A step count given to the dropout (DropoutArgs::step, read where the kernel runs) moves the
// key by step * 2^64 / phi: the masks of step 7 are those of the moved key given as it is, and
// not those of step 0. Through DropAddLn (p = 0.5, so about half the elements differ) and the
// bias + ReLU + dropout rows.
TEST(KernelRun, ADropoutStepMovesTheKeyItsMasksAreDrawnWith) {
  const torch::Tensor branch = torch::randn({33, 40}), bias = torch::randn({40});
  const k::Format f = k::format_of(torch::kFloat);
  const auto drop_add = [&](k::DropoutArgs d) {
    torch::Tensor resid_out = torch::empty({33, 40}), y = torch::empty({33, 40});
    k::run(k::drop_add_ln_args({}, branch, bias, {}, {}, resid_out, y, {}, {}, f, f, d),
           c10::DeviceType::CPU);
    return y;
  };
  const auto relu = [&](k::DropoutArgs d) {
    torch::Tensor x = branch.clone();
    k::run(k::bias_relu_dropout_args(x, bias, f, d), c10::DeviceType::CPU);
    return x;
  };
  const int64_t step = 7;
  k::DropoutArgs counted = k::math::dropout_args(0.5, 9), moved = counted, zero = counted;
  counted.step = &step;
  moved.key += 7 * 0x9e3779b97f4a7c15ull;
  const int64_t none = 0;
  zero.step = &none;
  EXPECT_TRUE(torch::equal(drop_add(counted), drop_add(moved)));
  EXPECT_TRUE(torch::equal(drop_add(zero), drop_add(k::math::dropout_args(0.5, 9))));
  EXPECT_GT(drop_add(counted).ne(drop_add(zero)).sum().item<int64_t>(), 33 * 40 / 4);
  EXPECT_TRUE(torch::equal(relu(counted), relu(moved)));
  EXPECT_FALSE(torch::equal(relu(counted), relu(zero)));
}

// The CPU rows convert a 16-bit row into a float buffer and back (kernels/cpu/rows.cpp: 8
// values per vector instruction, then one at a time): through DropAddLn without residual,
// LayerNorm or dropout (resid_out = 0 + (branch + bias) in float, y = the same rounded), every
// float16 and bfloat16 value is read as LibTorch reads it and stored back unchanged, and the
// awkward floats (ties, subnormals, overflow; 8206 columns: a remainder after the vectors) are
// rounded as LibTorch rounds them. Compared as floats (exact for 16-bit values), since the
// residual's +0 turns a -0 into +0; NaNs as NaNs.
void drop_add_(const torch::Tensor& branch, const torch::Tensor& bias, torch::Tensor& resid_out,
               torch::Tensor& y) {
  const k::Format f = k::format_of(branch.scalar_type(), branch.scalar_type());
  k::run(k::drop_add_ln_args({}, branch, bias, {}, {}, resid_out, y, {}, {}, f, f,
                             k::math::dropout_args(0.0, 9)),
         c10::DeviceType::CPU);
}
TEST(KernelRun, SixteenBitRowsAreReadAndRoundedAsLibTorchDoes) {
  for (const auto dtype : {torch::kHalf, torch::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dtype));
    // Every bit pattern, as 256 rows of 256; NaNs compared as NaNs.
    const torch::Tensor bits = torch::arange(65536, torch::kInt32).to(torch::kInt16);
    const torch::Tensor branch = bits.view(dtype).view({256, 256});
    torch::Tensor resid_out = torch::empty({256, 256}), y = torch::empty_like(branch);
    drop_add_(branch, torch::zeros({256}), resid_out, y);
    const torch::Tensor want = branch.to(torch::kFloat);
    EXPECT_TRUE(torch::equal(resid_out.isnan(), want.isnan()));
    EXPECT_TRUE(torch::equal(resid_out.nan_to_num(0), want.nan_to_num(0)));
    const torch::Tensor ok = want.isnan().logical_not();
    EXPECT_TRUE(torch::equal(y.to(torch::kFloat).masked_select(ok), want.masked_select(ok)));
    // Floats rounded to 16 bits: one row of every awkward float.
    const torch::Tensor x = testing::awkward_floats();
    const torch::Tensor zeros = torch::zeros({1, x.numel()}, dtype);
    torch::Tensor out = torch::empty({1, x.numel()}), y16 = torch::empty_like(zeros);
    drop_add_(zeros, x, out, y16);
    const torch::Tensor want16 = x.view({1, -1}).to(dtype).to(torch::kFloat);
    const torch::Tensor got16 = y16.to(torch::kFloat);
    EXPECT_TRUE(torch::equal(got16.isnan(), want16.isnan()));
    EXPECT_TRUE(torch::equal(got16.nan_to_num(0), want16.nan_to_num(0)));
  }
}

// The causal softmax on the CPU: each row sums to one over the keys it may see, zero above.
TEST(KernelRun, CausalSoftmaxRowsSumToOneBelowTheDiagonal) {
  const int64_t s = 9;
  torch::Tensor x = torch::randn({2 * s, s});
  const torch::Tensor before = x.clone();
  k::run(k::causal_softmax_args(x, 2 * s, s, 0, k::format_of(torch::kFloat, torch::kFloat), 0.5),
         c10::DeviceType::CPU);
  const torch::Tensor mask = torch::ones({s, s}).tril().repeat({2, 1}).to(torch::kBool);
  const torch::Tensor want =
      torch::softmax((before * 0.5).masked_fill(~mask, -INFINITY), 1).masked_fill(~mask, 0);
  EXPECT_TRUE(torch::allclose(x, want, 1e-6, 1e-6));
}

// The heads layout (HeadsArgs) against LibTorch's permute and conversions, bit for bit: q, k, v
// split from rows [b*s, 3*h*hd] and merged back, in each storage pair the attention uses (the
// dtype's own, float32 rounded to it, widened from it, narrowed to it) and float32/float64
// copies; hd = 13 leaves a tail after the 8-wide F16C passes; and in blocks of rows.
TEST(KernelRun, HeadsMoveEachElementAsLibTorchsPermuteAndConversionsDo) {
  const int64_t b = 2, s = 5, h = 3, hd = 13;
  torch::manual_seed(4);
  // Magnitudes from 1e-8 (float16's subnormals and below) to 1e2.
  const torch::Tensor rows32 =
      torch::randn({b * s, 3 * h * hd}) *
      torch::pow(10.0, torch::randint(-8, 3, {b * s, 3 * h * hd}).to(torch::kFloat));
  // [b*s, 3*h*hd] → [3, b*h, s, hd]
  auto split = [&](const torch::Tensor& r) {
    return r.view({b, s, 3, h, hd}).permute({2, 0, 3, 1, 4}).reshape({3, b * h, s, hd});
  };
  int64_t block = 0;  // the heads tensors' row blocks (HeadsArgs::block)
  // values: the dtype whose values the destination holds (Undefined: its own).
  auto run = [&](const torch::Tensor& rows, const std::vector<torch::Tensor>& heads, bool to_heads,
                 c10::ScalarType values = c10::ScalarType::Undefined) {
    const auto dst = (to_heads ? heads[0] : rows).scalar_type();
    k::run(k::heads_args(rows, heads, s, h, to_heads, k::format_of(dst, values), block),
           c10::DeviceType::CPU);
  };
  auto empties = [&](c10::ScalarType t, int64_t n) {
    std::vector<torch::Tensor> out;
    for (int64_t p = 0; p < n; ++p) out.push_back(torch::full({b * h, s, hd}, 7.0, t));
    return out;
  };
  for (const auto dt : {torch::kBFloat16, torch::kHalf, torch::kFloat, torch::kDouble}) {
    SCOPED_TRACE(c10::toString(dt));
    const bool narrow = dt == torch::kBFloat16 || dt == torch::kHalf;
    const auto round = narrow ? dt : torch::kFloat;   // what float32 destinations hold
    const torch::Tensor want = split(rows32.to(dt));  // the dtype's values, [3, b*h, s, hd]
    // Split: the dtype's rows into its heads; float32 rows rounded into float32 heads; the
    // dtype's rows widened into float32 heads.
    auto same = empties(dt, 3);
    run(rows32.to(dt), same, true);
    auto rounded = empties(torch::kFloat, 3);
    run(rows32, rounded, true, round);
    auto widened = empties(torch::kFloat, 3);
    run(rows32.to(dt), widened, true);
    for (int p = 0; p < 3; ++p) {
      EXPECT_TRUE(torch::equal(same[p], want[p])) << p;
      EXPECT_TRUE(torch::equal(rounded[p], want[p].to(torch::kFloat))) << p;
      EXPECT_TRUE(torch::equal(widened[p], want[p].to(torch::kFloat))) << p;
    }
    // Merge: three float32 parts into float32 rows rounded to the dtype; one float32 part
    // narrowed into rows of the dtype.
    const auto parts32 = split(rows32).unbind(0);
    const torch::Tensor merged = torch::full({b * s, 3 * h * hd}, 7.0);
    run(merged, {parts32[0].contiguous(), parts32[1].contiguous(), parts32[2].contiguous()}, false,
        round);
    EXPECT_TRUE(torch::equal(merged, rows32.to(dt).to(torch::kFloat)));
    const torch::Tensor one = torch::full({b * s, h * hd}, 7.0, dt);
    run(one, {parts32[1].contiguous()}, false);
    EXPECT_TRUE(torch::equal(one, rows32.narrow(1, h * hd, h * hd).to(dt)));
    // In blocks of 2 rows (the attention in blocks' P V and gradients, causal_gemm.h; a last
    // block of 1): each block [b*h, rows, hd] contiguous, one after another; both ways.
    auto in_blocks = [&](const torch::Tensor& plain) {
      std::vector<torch::Tensor> blocks;
      for (int64_t r0 = 0; r0 < s; r0 += 2) {
        blocks.push_back(plain.narrow(1, r0, std::min<int64_t>(2, s - r0)).reshape(-1));
      }
      return torch::cat(blocks);
    };
    std::vector<torch::Tensor> blocked;
    for (int p = 0; p < 3; ++p) blocked.push_back(in_blocks(parts32[p]));
    block = 2;
    const torch::Tensor merged_blocks = torch::full({b * s, 3 * h * hd}, 7.0);
    run(merged_blocks, blocked, false, round);
    EXPECT_TRUE(torch::equal(merged_blocks, merged));
    auto split_blocks = empties(torch::kFloat, 3);
    for (auto& t : split_blocks) t = t.view(-1);
    run(rows32, split_blocks, true);
    for (int p = 0; p < 3; ++p) EXPECT_TRUE(torch::equal(split_blocks[p], blocked[p])) << p;
    EXPECT_EQ(causal_unblocked(blocked[0], b * h, s, 2).sizes(), parts32[0].sizes());
    EXPECT_TRUE(torch::equal(causal_unblocked(blocked[0], b * h, s, 2), parts32[0]));
    for (const int64_t whole : {int64_t{0}, s}) {  // no blocks: the tensor as it is
      EXPECT_TRUE(causal_unblocked(parts32[0], b * h, s, whole).is_same(parts32[0])) << whole;
    }
    block = 0;
  }
}

// A Format (kernel_args.h) is a tensor's own dtype, or float32 storage of bfloat16 or float16
// values accumulated in float32; every other combination is refused where it is built, in one
// line naming it.
TEST(KernelRun, FormatsAKernelCannotHoldAreRefusedWhereTheyAreBuilt) {
  using S = k::StorageType;
  for (const auto s : {S::kF32, S::kF64, S::kBF16, S::kF16}) {
    const k::Format own = k::format_of(k::dtype_of(s));
    EXPECT_EQ(own.storage, s);
    EXPECT_EQ(own.values, s);
    EXPECT_EQ(own.acc, s == S::kF64 ? S::kF64 : S::kF32);
  }
  const k::Format route = k::format_of(torch::kFloat, torch::kBFloat16);
  EXPECT_EQ(route.storage, S::kF32);
  EXPECT_EQ(route.values, S::kBF16);
  EXPECT_EQ(route.acc, S::kF32);
  EXPECT_EQ(k::format_of(torch::kDouble, torch::kDouble).acc, S::kF64);
  EXPECT_EQ(k::format_name(route), "float32 storage of bfloat16 values");
  EXPECT_EQ(k::format_name(k::format_of(torch::kHalf, torch::kHalf)), "float16");
  const auto refused = [](c10::ScalarType storage, c10::ScalarType values, c10::ScalarType acc) {
    try {
      k::format_of(storage, values, acc);
    } catch (const RunError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refused(torch::kBFloat16, torch::kHalf, torch::kFloat),
            "fused kernels: float16 values in bfloat16 storage: a tensor holds its own dtype's "
            "values, or float32 storage holds bfloat16 or float16 values (the float32 GEMM "
            "route)");
  EXPECT_EQ(refused(torch::kBFloat16, torch::kFloat, torch::kFloat),
            "fused kernels: float32 values in bfloat16 storage: a tensor holds its own dtype's "
            "values, or float32 storage holds bfloat16 or float16 values (the float32 GEMM "
            "route)");
  EXPECT_EQ(refused(torch::kDouble, torch::kBFloat16, torch::kDouble)
                .rfind("fused kernels: bfloat16 values in float64 storage", 0),
            0u);
  EXPECT_EQ(refused(torch::kFloat, torch::kHalf, torch::kDouble),
            "fused kernels: float32 storage of float16 values accumulated in float64: the "
            "kernels accumulate float64 in float64, every other format in float32");
  EXPECT_EQ(refused(torch::kBFloat16, torch::kBFloat16, torch::kDouble),
            "fused kernels: bfloat16 accumulated in float64: the kernels accumulate float64 in "
            "float64, every other format in float32");
  EXPECT_EQ(refused(torch::kDouble, torch::kDouble, torch::kFloat)
                .rfind("fused kernels: float64 accumulated in float32:", 0),
            0u);
  // Every format format_of builds is an entry of kFormats, the table the kernels dispatch on.
  for (const auto s : {torch::kFloat, torch::kDouble, torch::kBFloat16, torch::kHalf}) {
    for (const auto v : {torch::kFloat, torch::kDouble, torch::kBFloat16, torch::kHalf}) {
      if (refused(s, v, c10::ScalarType::Undefined) != "accepted") continue;
      const k::Format f = k::format_of(s, v);
      EXPECT_EQ(std::count(std::begin(k::kFormats), std::end(k::kFormats), f), 1)
          << k::format_name(f);
    }
  }
  EXPECT_EQ(refused(torch::kFloat, torch::kFloat, torch::kBFloat16)
                .rfind("fused kernels: float32 accumulated in bfloat16:", 0),
            0u);
}

TEST(KernelRun, DtypesOutsideTheStorageTypesAreRefusedByName) {
  try {
    k::storage_type_of(torch::kInt32);
    FAIL();
  } catch (const RunError& e) {
    EXPECT_EQ(std::string(e.what()),
              "fused kernels: dtype Int is not supported; use float32, float64, bfloat16 or "
              "float16");
  }
}

// A combination of legal formats that no kernel holds (bfloat16 rows into float16 storage) is
// refused in one line naming the kernel and its formats, on the build the CPU runs and on the
// float64 one alike, before any row is touched; float64 itself runs here (the test binary links
// its build) and on the float64 build's AVX2 code whatever TB_CPU_ROWS forces.
TEST(KernelRun, FormatsNoKernelHoldsAreRefusedInOneLine) {
  const int64_t n = 4, d = 8;
  const auto bf16 = k::format_of(torch::kBFloat16), f16 = k::format_of(torch::kHalf);
  const torch::Tensor branch = torch::randn({n, d}).to(torch::kBFloat16), bias = torch::zeros({d});
  const torch::Tensor resid_out = torch::full({n, d}, 7.0),
                      y = torch::full({n, d}, 7.0, torch::kHalf);
  try {
    k::run(k::drop_add_ln_args({}, branch, bias, {}, {}, resid_out, y, {}, {}, bf16, f16, {}),
           c10::DeviceType::CPU);
    FAIL() << "accepted";
  } catch (const RunError& e) {
    EXPECT_EQ(std::string(e.what()),
              "fused kernels: no CPU kernel of DropAddLnArgs for bfloat16, float16; this binary "
              "holds the formats of float32, bfloat16 and float16 runs");
  }
  EXPECT_TRUE(torch::equal(resid_out, torch::full({n, d}, 7.0)));  // nothing written
  // A destination stored otherwise than its format says, where the heads' Args are built.
  try {
    k::heads_args(torch::zeros({n, d}), {torch::zeros({n, d}, torch::kBFloat16)}, n, 1, true,
                  k::format_of(torch::kFloat, torch::kBFloat16));
    ADD_FAILURE() << "accepted";
  } catch (const c10::Error& e) {
    EXPECT_EQ(e.msg(),
              "fused heads: BFloat16 heads for float32 storage of bfloat16 values; the "
              "destination is stored as its format says");
  }
  const torch::Tensor x = torch::randn({n, d}, torch::kDouble);
  torch::Tensor partials = torch::empty({1, d}, torch::kDouble);
  k::run(k::column_sums_args(x, partials, k::format_of(torch::kDouble)), c10::DeviceType::CPU);
  EXPECT_TRUE(torch::allclose(partials[0], x.sum(0), 0, 1e-12));
}

// The CPU rows run on the widest build the CPU runs (AVX-512 F/BW/VL/DQ, else AVX2), or the one
// TB_CPU_ROWS forces (ctest runs every row-kernel test once more on each build).
TEST(KernelRun, TheRowsBuildIsTheForcedOneOrTheWidestTheCpuRuns) {
  const char* env = std::getenv("TB_CPU_ROWS");
  const CpuIsa isa = hardware_isa();
  const bool wide = isa.avx512f && isa.avx512bw && isa.avx512vl && isa.avx512dq;
  EXPECT_EQ(k::cpu_rows_isa(), env && *env ? std::string(env) : wide ? "avx512" : "avx2");
}

// The choice itself, from core/cpu_isa's answer, forced for each class of CPU bench met: no
// AVX2 (refused), AVX2 only (Zen 3), AVX-512 (Zen 4/5, Xeons), and TB_CPU_ROWS over each.
TEST(KernelRun, TheRowsBuildFollowsTheInstructionSetsOfEachCpuClass) {
  CpuIsa none, avx2, avx512;
  avx2.avx2 = avx2.fma = avx2.f16c = true;
  avx512 = avx2;
  avx512.avx512f = avx512.avx512bw = avx512.avx512vl = avx512.avx512dq = true;
  std::string why;
  EXPECT_EQ(k::rows_isa_for(none, "", &why), "");
  EXPECT_EQ(why,
            "--compile fused: this CPU lacks AVX2, FMA or F16C, which the fused CPU kernels are "
            "built for; use --compile none");
  CpuIsa no_f16c = avx2;
  no_f16c.f16c = false;
  EXPECT_EQ(k::rows_isa_for(no_f16c, "", &why), "");
  why.clear();
  EXPECT_EQ(k::rows_isa_for(avx2, "", &why), "avx2");
  EXPECT_EQ(k::rows_isa_for(avx512, "", &why), "avx512");
  EXPECT_EQ(k::rows_isa_for(avx512, "avx2", &why), "avx2");
  EXPECT_EQ(why, "");
  CpuIsa no_dq = avx512;
  no_dq.avx512dq = false;
  EXPECT_EQ(k::rows_isa_for(no_dq, "", &why), "avx2");
  EXPECT_EQ(k::rows_isa_for(avx2, "avx512", &why), "");
  EXPECT_EQ(why,
            "TB_CPU_ROWS=avx512: this CPU lacks AVX-512 F/BW/VL/DQ; use avx2 or leave it unset");
  EXPECT_EQ(k::rows_isa_for(avx512, "sse", &why), "");
  EXPECT_EQ(why, "TB_CPU_ROWS: 'sse' is not allowed; use avx2 or avx512 (or leave it unset)");
}

TEST(KernelRun, AnUnknownOrUnrunnableRowsBuildIsRefusedInOneLine) {
  const std::string flags =
      " --compile fused --num_layer 1 --d_model 32 --num_heads 2 --ff_dim 64 --seq_len 16 "
      "--batch_size 2 --steps 2 --warmup_steps 0 --eval_every 0 --save_dir /nonexistent/x";
  const auto bad = testing::run_command(std::string("TB_CPU_ROWS=sse ") + TB_BENCH_EXE + flags);
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("TB_CPU_ROWS: 'sse' is not allowed; use avx2 or avx512"),
            std::string::npos)
      << bad.output;
  const CpuIsa isa = hardware_isa();
  if (!(isa.avx512f && isa.avx512bw && isa.avx512vl && isa.avx512dq)) {
    const auto wide =
        testing::run_command(std::string("TB_CPU_ROWS=avx512 ") + TB_BENCH_EXE + flags);
    EXPECT_EQ(wide.exit_code, 2) << wide.output;
    EXPECT_NE(wide.output.find("TB_CPU_ROWS=avx512: this CPU lacks AVX-512"), std::string::npos);
  }
}

}  // namespace
}  // namespace trainbench
