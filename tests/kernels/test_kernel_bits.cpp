// The fused kernels (kernels/fused_kernels.h: every Args of TB_FUSED_KERNELS) as rows of the
// kernel table (kernel_table.h): each case runs one kernel through run() twice with the same
// inputs and holds the two runs to the same bits, in bfloat16: on the CPU with two intra-op
// threads against one (suite KernelTableThreads: every output, since a row is one thread's and
// the column sums are added per chunk), and on CUDA against the CPU (KernelTableBits, and
// KernelTableBitsV2 under --gpu_kernels v2; skipped without a GPU). What must match bit for bit
// across devices is what the code says does not depend on the device: every value a kernel computes
// element by element and stores (storage.h: bfloat16 is rounded by the same integer arithmetic on
// both) and the column partial sums, which both add in the same order per chunk (kernel_args.h). A
// value that comes out of a sum or maximum along a row (LayerNorm's statistics, the softmax and
// cross-entropy sums) is added in each backend's own order (SIMD lanes on the CPU, a warp tree on
// CUDA); it is held to one bfloat16 step of the tensor's largest value (1e-5 relative in float32).
// A NaN matches any NaN (CUDA's float16 conversion returns its own canonical NaN). A new kernel is
// one row of kernel_rows().
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "kernels/kernel_table.h"
#include "trainbench/kernels/fused_kernels.h"
#include "trainbench/kernels/fused_math.h"
#include "trainbench/train/fused_adam.h"

namespace trainbench {
namespace {

namespace k = kernels;
using testing::Shape;
using testing::Variant;
using torch::Tensor;

constexpr uint64_t kBitsDropKey = 29;

struct KernelCase {
  c10::ScalarType dtype;
  Shape shape;
  Variant v;
};

// One output of a kernel run, on the CPU; `exact`: the same bits on every device.
struct Output {
  const char* name;
  Tensor t;
  bool exact;
};

struct KernelRow {
  const char* name;
  const char* args;  // its Args struct in TB_FUSED_KERNELS
  const char* dims;
  std::vector<Shape> shapes;
  std::vector<Variant> variants;
  std::vector<c10::ScalarType> dtypes;
  // Makes the case's inputs (seeded, so the same on every device), runs the kernel on `device`.
  std::vector<Output> (*run)(const KernelCase&, torch::Device);
};

Tensor on(const Tensor& t, torch::Device device) { return t.to(device).contiguous(); }
Tensor empty(std::vector<int64_t> sizes, c10::ScalarType dtype, torch::Device device) {
  return torch::empty(sizes, torch::TensorOptions().dtype(dtype).device(device));
}
Tensor if_(bool present, const Tensor& t) { return present ? t : Tensor(); }
std::vector<Output> on_cpu(std::vector<Output> outs) {
  for (Output& o : outs) o.t = o.t.cpu();
  return outs;
}

// ---- DROP_ADD_LN (DropAddLnArgs) ---------------------------------------------------------------
// store=f32 (variant store_f32), here and in DROP_ADD_LN_BACK: y float32 storage of the
// dtype's values (the float32 route's LayerNorm output), its gradient unrounded float32.
std::vector<Output> drop_add_ln_run(const KernelCase& c, torch::Device dev) {
  const auto [n, d, u1, u2] = c.shape;
  torch::manual_seed(1);
  const Tensor resid = on(torch::randn({n, d}), dev);
  const Tensor branch = on(torch::randn({n, d}).to(c.dtype), dev),
               bias = on(torch::randn({d}), dev);
  const Tensor gamma = on(torch::rand({d}) + 0.5, dev), beta = on(torch::randn({d}), dev);
  const bool f32 = c.v.store_f32;
  Tensor resid_out = empty({n, d}, torch::kFloat, dev);
  Tensor y = empty({n, d}, f32 ? torch::kFloat : c.dtype, dev);
  Tensor mean = empty({n}, torch::kFloat, dev), rstd = empty({n}, torch::kFloat, dev);
  k::run(k::drop_add_ln_args(if_(c.v.resid, resid), branch, bias, if_(c.v.ln, gamma),
                             if_(c.v.ln, beta), resid_out, y, if_(c.v.ln, mean), if_(c.v.ln, rstd),
                             k::format_of(c.dtype, c.dtype, torch::kFloat),
                             k::format_of(y.scalar_type(), c.dtype, torch::kFloat),
                             k::math::dropout_args(c.v.p, kBitsDropKey)),
         dev.type());
  std::vector<Output> out = {{"resid_out", resid_out, true}, {"y", y, !c.v.ln}};
  if (c.v.ln) out.insert(out.end(), {{"mean", mean, false}, {"rstd", rstd, false}});
  return on_cpu(out);
}

// ---- STORE: DropAddLn with r' = resid, no LayerNorm: y is resid stored in the dtype -------------
std::vector<Output> store_run(const KernelCase& c, torch::Device dev) {
  const Tensor resid = on(testing::awkward_floats().view({2, -1}), dev);
  const int64_t n = resid.size(0), d = resid.size(1);
  const Tensor zeros = empty({n, d}, c.dtype, dev).zero_(), bias = on(torch::zeros({d}), dev);
  Tensor resid_out = empty({n, d}, torch::kFloat, dev), y = empty({n, d}, c.dtype, dev);
  const k::Format f = k::format_of(c.dtype, c.dtype, torch::kFloat);
  k::run(k::drop_add_ln_args(resid, zeros, bias, {}, {}, resid_out, y, {}, {}, f, f, {}),
         dev.type());
  return on_cpu({{"resid_out", resid_out, true}, {"y", y, true}});
}

// ---- DROP_ADD_LN_BACK (DropAddLnGradArgs) ------------------------------------------------------
std::vector<Output> drop_add_ln_back_run(const KernelCase& c, torch::Device dev) {
  const auto [n, d, u1, u2] = c.shape;
  torch::manual_seed(2);
  const bool f32 = c.v.store_f32;
  const Tensor dy = on(f32 ? torch::randn({n, d}) : torch::randn({n, d}).to(c.dtype), dev);
  const Tensor dro = on(torch::randn({n, d}), dev);
  const Tensor ro_cpu = torch::randn({n, d}) * 2 + 0.5, ro = on(ro_cpu, dev);
  const Tensor gamma = on(torch::rand({d}) + 0.5, dev), mean = on(ro_cpu.mean(1), dev);
  const Tensor rstd = on(torch::rsqrt(ro_cpu.var(1, false) + 1e-5), dev);
  Tensor d_resid = empty({n, d}, torch::kFloat, dev), d_branch = empty({n, d}, c.dtype, dev);
  Tensor partials = empty({k::num_chunks(n), 3, d}, torch::kFloat, dev);
  k::run(
      k::drop_add_ln_grad_args(dy, dro, ro, mean, rstd, if_(c.v.ln, gamma), if_(c.v.resid, d_resid),
                               d_branch, partials, k::format_of(c.dtype, c.dtype, torch::kFloat),
                               k::format_of(dy.scalar_type(), c.dtype, torch::kFloat),
                               k::math::dropout_args(c.v.p, kBitsDropKey)),
      dev.type());
  // With LayerNorm every gradient but d_gamma's and d_beta's partial sums has the row sums in it.
  std::vector<Output> out = {{"d_branch", d_branch, !c.v.ln},
                             {"d_bias partials", partials.select(1, 0), !c.v.ln},
                             {"d_gamma, d_beta partials", partials.narrow(1, 1, 2), true}};
  if (c.v.resid) out.push_back({"d_resid", d_resid, !c.v.ln});
  return on_cpu(out);
}

// ---- BIAS_RELU_DROPOUT (BiasReluDropoutArgs) ---------------------------------------------------
std::vector<Output> bias_relu_dropout_run(const KernelCase& c, torch::Device dev) {
  const auto [n, f, u1, u2] = c.shape;
  torch::manual_seed(3);
  // store=f32 (variant store_f32): the float32 route's unrounded GEMM output, float32
  // storage of the dtype's values out.
  const bool f32 = c.v.store_f32;
  Tensor x = on(f32 ? torch::randn({n, f}) : torch::randn({n, f}).to(c.dtype), dev);
  const Tensor bias = on(torch::randn({f}) * 0.5, dev);
  k::run(k::bias_relu_dropout_args(x, bias, k::format_of(x.scalar_type(), c.dtype, torch::kFloat),
                                   k::math::dropout_args(c.v.p, kBitsDropKey)),
         dev.type());
  return on_cpu({{"out", x, true}});
}

// ---- BIAS_RELU_DROPOUT_BACK (BiasReluDropoutGradArgs) ------------------------------------------
std::vector<Output> bias_relu_dropout_back_run(const KernelCase& c, torch::Device dev) {
  const auto [n, f, u1, u2] = c.shape;
  torch::manual_seed(4);
  // store=f32: dout the next GEMM's unrounded float32 output, out and da float32 storage of
  // the dtype's values.
  const bool f32 = c.v.store_f32;
  const c10::ScalarType stored = f32 ? torch::kFloat : c.dtype;
  const Tensor dout = on(f32 ? torch::randn({n, f}) : torch::randn({n, f}).to(c.dtype), dev);
  const Tensor out = on(torch::relu(torch::randn({n, f})).to(c.dtype).to(stored), dev);
  Tensor da = empty({n, f}, stored, dev),
         partials = empty({k::num_chunks(n), f}, torch::kFloat, dev);
  k::run(k::bias_relu_dropout_grad_args(dout, out, da, partials,
                                        k::format_of(stored, c.dtype, torch::kFloat),
                                        c.v.p > 0 ? k::math::dropout_scale(c.v.p) : 1.0),
         dev.type());
  return on_cpu({{"da", da, true}, {"partials", partials, true}});
}

// ---- COLUMN_SUMS (ColumnSumsArgs) ------------------------------------------------------------
std::vector<Output> column_sums_run(const KernelCase& c, torch::Device dev) {
  const auto [n, w, u1, u2] = c.shape;
  torch::manual_seed(8);
  const Tensor x = on(torch::randn({n, w}).to(c.dtype), dev);
  Tensor partials = empty({k::num_chunks(n), w}, torch::kFloat, dev);
  k::run(k::column_sums_args(x, partials, k::format_of(c.dtype, c.dtype, torch::kFloat)),
         dev.type());
  return on_cpu({{"partials", partials, true}});
}

// A float32 tensor that holds the dtype's values (store=f32) is compared at the dtype's
// precision, as its 16-bit twin is (CPU and CUDA may round an element one step apart where
// their exp or a row sum's order differs: 7 of 198,147 float16 p on an H200), and whether it
// holds them is checked bit for bit: x less x through the dtype is zero on every device.
std::vector<Output> held_in_float32(const char* name, const Tensor& x, c10::ScalarType dtype) {
  const Tensor values = x.to(dtype);  // exact where x holds the dtype's values
  return on_cpu(
      {{name, values, false}, {"rounding residue", x - values.to(x.scalar_type()), true}});
}

// ---- CAUSAL_SOFT_MAX (CausalSoftmaxArgs) and its backward: store=f32 (variant store_f32)
// as for the bias-ReLU-dropout rows (the score GEMMs' unrounded float32 outputs, float32
// storage of the dtype's values); block=B: the rows in the blocked causal layout of B query rows
// (model/causal_gemm.h), in place there ---------------------------------------------------------
// The rows [bh * s, s] in the blocked layout of `block` query rows (causal_gemm.h), or undefined
// where block is 0 or not below s.
Tensor blocked_(const Tensor& rows, int64_t bh, int64_t s, int64_t block) {
  if (block <= 0 || block >= s) return {};
  std::vector<Tensor> parts;
  for (int64_t r0 = 0; r0 < s; r0 += block) {
    const int64_t n = std::min(block, s - r0);
    parts.push_back(rows.view({bh, s, s}).narrow(1, r0, n).narrow(2, 0, r0 + n).reshape(-1));
  }
  return torch::cat(parts);
}
std::vector<Output> causal_softmax_run(const KernelCase& c, torch::Device dev) {
  const auto [bh, s, u1, u2] = c.shape;
  const bool f32 = c.v.store_f32;
  torch::manual_seed(5);
  const Tensor scores = torch::randn({bh * s, s}) * 3;
  Tensor x = on(f32 ? scores : scores.to(c.dtype), dev);
  if (const Tensor blocks = blocked_(x, bh, s, c.v.block); blocks.defined()) x = blocks;
  k::run(k::causal_softmax_args(x, bh * s, s, c.v.block,
                                k::format_of(x.scalar_type(), c.dtype, torch::kFloat), 0.35),
         dev.type());
  return f32 ? held_in_float32("p", x, c.dtype) : on_cpu({{"p", x, false}});
}
std::vector<Output> causal_softmax_back_run(const KernelCase& c, torch::Device dev) {
  const auto [bh, s, u1, u2] = c.shape;
  const bool f32 = c.v.store_f32;
  const c10::ScalarType stored = f32 ? torch::kFloat : c.dtype;
  torch::manual_seed(6);
  const Tensor p = on(torch::softmax(torch::randn({bh * s, s}), 1).to(c.dtype).to(stored), dev);
  const Tensor grad = torch::randn({bh * s, s});
  Tensor dp = on(f32 ? grad : grad.to(c.dtype), dev);
  Tensor p_at = p;
  if (const Tensor blocks = blocked_(dp, bh, s, c.v.block); blocks.defined()) {
    dp = blocks;
    p_at = blocked_(p, bh, s, c.v.block);
  }
  k::run(k::causal_softmax_grad_args(p_at, dp, bh * s, s, c.v.block,
                                     k::format_of(stored, c.dtype, torch::kFloat), 0.35),
         dev.type());
  return f32 ? held_in_float32("ds", dp, c.dtype) : on_cpu({{"ds", dp, false}});
}

// ---- HEADS (HeadsArgs): to=heads splits q, k, v from rows [b*s, 3*h*hd] (the dtype's, or
// store=f32: float32 rows rounded into float32 heads), to=rows merges one [b*h, s, hd] float32
// tensor into rows of the dtype (store=f32: three, into float32 rows rounded to the dtype);
// block=2: the heads tensors in blocks of 2 rows (fused_math.h head_block_row); bias=yes: to
// heads adds a bias, to rows writes the rows' column partials (the bias's gradient) ----
std::vector<Output> heads_run(const KernelCase& c, torch::Device dev) {
  const auto [b, s, h, hd] = c.shape;
  const bool to_heads = c.v.bias, f32 = c.v.store_f32;
  const int64_t parts = to_heads || f32 ? 3 : 1;
  const c10::ScalarType rows_type = f32 ? torch::kFloat : c.dtype;
  const c10::ScalarType heads_type = to_heads && !f32 ? c.dtype : torch::kFloat;
  torch::manual_seed(8);
  Tensor rows = on(torch::randn({b * s, parts * h * hd}).to(rows_type), dev);
  std::vector<Tensor> heads;
  for (int64_t p = 0; p < parts; ++p) {
    heads.push_back(on(torch::randn({b * h, s, hd}).to(heads_type), dev));
  }
  const Tensor bias = on(torch::randn({parts * h * hd}), dev);
  const Tensor partials = empty({k::num_chunks(b * s), parts * h * hd}, torch::kFloat, dev);
  // The destination holds c.dtype's values (rounded to them in float32 storage).
  k::run(
      k::heads_args(rows, heads, s, h, to_heads,
                    k::format_of((to_heads ? heads[0] : rows).scalar_type(), c.dtype), c.v.block,
                    if_(c.v.qkv_bias && to_heads, bias), if_(c.v.qkv_bias && !to_heads, partials)),
      dev.type());
  if (!to_heads && c.v.qkv_bias)
    return on_cpu({{"rows", rows, true}, {"partials", partials, true}});
  if (!to_heads) return on_cpu({{"rows", rows, true}});
  return on_cpu({{"q", heads[0], true}, {"k", heads[1], true}, {"v", heads[2], true}});
}

// ---- HEAD_CROSS_ENTROPY (HeadCrossEntropyArgs): the logits in the dtype, or store=f32: float32
// logits rounded to the dtype as read (the float32 route's), the gradient stored rounded; with
// the bias's column partials ----
std::vector<Output> head_ce_run(const KernelCase& c, torch::Device dev) {
  const auto [n, v, u1, u2] = c.shape;
  const bool f32 = c.v.store_f32;
  torch::manual_seed(7);
  Tensor logits = on((torch::randn({n, v}) * 2).to(f32 ? torch::kFloat : c.dtype), dev);
  const Tensor bias = on(torch::randn({v}) * 0.1, dev);
  const Tensor targets = on(torch::randint(0, v, {n}, torch::kLong), dev);
  Tensor partials = empty({k::num_chunks(n)}, torch::kFloat, dev);
  Tensor bias_partials = empty({k::num_chunks(n), v}, torch::kFloat, dev);
  k::run(k::head_cross_entropy_args(logits, bias, targets, partials, bias_partials,
                                    k::format_of(logits.scalar_type(), c.dtype, torch::kFloat)),
         dev.type());
  if (f32 && !dev.is_cuda()) {  // what float32 storage holds: the dtype's values
    EXPECT_TRUE(torch::equal(logits, logits.to(c.dtype).to(torch::kFloat)));
  }
  return on_cpu({{"dlogits", logits, false},
                 {"loss partials", partials, false},
                 {"bias partials", bias_partials, false}});
}

// ---- ADAM (AdamArgs): gradient scaled by 8, with values of the case's dtype; the weight copy
// stored in that dtype (copy=dtype), in float32 as on the float32 GEMM route, the gradient too
// (copy=f32: variant store_f32), or none (copy=none: variant bias false) ----------------
std::vector<Output> adam_run(const KernelCase& c, torch::Device dev) {
  const auto [n, w, u1, u2] = c.shape;
  const bool has_copy = c.v.bias;
  const c10::ScalarType stored = c.v.store_f32 ? torch::kFloat : c.dtype;
  torch::manual_seed(9);
  Tensor param = on(torch::randn({n, w}), dev), m = on(torch::randn({n, w}) * 0.1, dev),
         v = on(torch::rand({n, w}) * 0.01, dev);
  const Tensor grad = on((torch::randn({n, w}) * 8).to(c.dtype).to(stored), dev);
  const Tensor step = on(torch::full({}, 3.0f), dev), scale = on(torch::full({}, 8.0f), dev);
  const Tensor copy = has_copy ? empty({n, w}, stored, dev) : Tensor();
  k::run(k::adam_args(param, m, v, step, grad, copy, k::format_of(stored, c.dtype), scale),
         dev.type());
  std::vector<Output> out = {
      {"param", param, false}, {"exp_avg", m, false}, {"exp_avg_sq", v, false}};
  if (has_copy) out.push_back({"copy", copy, false});
  return on_cpu(out);
}

// ---- ADAM_LIST (AdamListArgs): ADAM's case as three parameters of other shapes in one pass; each
// parameter ends as ADAM leaves it alone (FusedAdam.AListStepIsThePerParameterSteps) -----------
std::vector<Output> adam_list_run(const KernelCase& c, torch::Device dev) {
  const auto [n, w, u1, u2] = c.shape;
  const bool has_copy = c.v.bias;
  const c10::ScalarType stored = c.v.store_f32 ? torch::kFloat : c.dtype;
  torch::manual_seed(10);
  const Tensor step = on(torch::full({}, 3.0f), dev), scale = on(torch::full({}, 8.0f), dev);
  std::vector<Output> out;
  std::vector<k::AdamArgs> items;
  for (const auto& [rows, cols] : {std::pair{n, w}, {1, w + 1}, {n + 2, 3}}) {
    Tensor param = on(torch::randn({rows, cols}), dev),
           m = on(torch::randn({rows, cols}) * 0.1, dev),
           v = on(torch::rand({rows, cols}) * 0.01, dev);
    const Tensor grad = on((torch::randn({rows, cols}) * 8).to(c.dtype).to(stored), dev);
    const Tensor copy = has_copy ? empty({rows, cols}, stored, dev) : Tensor();
    items.push_back(
        k::adam_args(param, m, v, step, grad, copy, k::format_of(stored, c.dtype), scale));
    out.insert(out.end(),
               {{"param", param, false}, {"exp_avg", m, false}, {"exp_avg_sq", v, false}});
    if (has_copy) out.push_back({"copy", copy, false});
    out.push_back({"grad", grad, true});  // kept alive until the run
  }
  k::run(k::adam_list_args(items), dev.type());
  return on_cpu(out);
}

// ---- variants ---------------------------------------------------------------------------------
const std::vector<KernelRow>& kernel_rows() {
  const std::vector<Shape> rows_cols = {{1, 3}, {257, 33}, {64, 512}, {33, 768}};
  const std::vector<Shape> heads_seq = {{1, 1}, {2, 7}, {3, 257}};
  const std::vector<Shape> rows_vocab = {{1, 5}, {45, 256}, {257, 255}};
  const std::vector<Variant> one = {Variant{}};
  const std::vector<c10::ScalarType> both_16bit = {torch::kBFloat16, torch::kHalf};
  Variant awkward;
  awkward.text = "values=awkward";
  const std::vector<Variant> awkward_values = {awkward};
  Variant copy_16bit, copy_f32, copy_none;
  copy_16bit.text = "copy=dtype";
  copy_f32.store_f32 = true;
  copy_f32.text = "copy=f32";
  copy_none.bias = false;
  copy_none.text = "copy=none";
  const std::vector<Variant> adam_copies = {copy_16bit, copy_f32, copy_none};
  std::vector<Variant> relu_stores = testing::dropout_variants();
  Variant stored_f32;
  stored_f32.p = 0.2;
  stored_f32.store_f32 = true;
  stored_f32.text = "p=0.2,store=f32";
  relu_stores.push_back(stored_f32);
  Variant scores_f32;
  scores_f32.store_f32 = true;
  scores_f32.text = "store=f32";
  Variant blocks_f32 = scores_f32;
  blocks_f32.block = 3;
  blocks_f32.text = "store=f32,block=3";
  const std::vector<Variant> softmax_stores = {Variant{}, scores_f32, blocks_f32};
  // The LayerNorm's variants, each also with y (and its gradient) in float32 storage.
  const auto ln_stores = [](std::vector<Variant> vs) {
    const size_t n = vs.size();
    for (size_t i = 0; i < n; ++i) {
      Variant v = vs[i];
      v.store_f32 = true;
      v.text += ",store=f32";
      vs.push_back(v);
    }
    return vs;
  };
  std::vector<Variant> heads_ways;
  for (bool to_heads : {true, false}) {
    for (bool f32 : {false, true}) {
      Variant v;
      v.bias = to_heads;
      v.store_f32 = f32;
      v.text = std::string(to_heads ? "to=heads" : "to=rows") + (f32 ? ",store=f32" : "");
      heads_ways.push_back(v);
    }
  }
  for (bool to_heads : {true, false}) {  // the heads tensors in blocks of 2 rows
    Variant v = heads_ways[to_heads ? 1 : 3];
    v.block = 2;
    v.text += ",block=2";
    heads_ways.push_back(v);
  }
  for (int way : {0, 1, 2, 3}) {  // the rows' bias: added to heads, its partials to rows
    Variant v = heads_ways[way];
    v.qkv_bias = true;
    v.text += ",bias=yes";
    heads_ways.push_back(v);
  }
  static const std::vector<KernelRow> rows = {
      {"DROP_ADD_LN", "DropAddLnArgs", "n,d", rows_cols,
       ln_stores(testing::drop_add_ln_variants("resid", false)), both_16bit, drop_add_ln_run},
      {"STORE", "DropAddLnArgs", "", {Shape{}}, awkward_values, both_16bit, store_run},
      {"DROP_ADD_LN_BACK", "DropAddLnGradArgs", "n,d", rows_cols,
       ln_stores(testing::drop_add_ln_variants("d_resid", false)), both_16bit,
       drop_add_ln_back_run},
      {"BIAS_RELU_DROPOUT", "BiasReluDropoutArgs", "n,f", rows_cols, relu_stores, both_16bit,
       bias_relu_dropout_run},
      {"BIAS_RELU_DROPOUT_BACK", "BiasReluDropoutGradArgs", "n,f", rows_cols, relu_stores,
       both_16bit, bias_relu_dropout_back_run},
      {"CAUSAL_SOFT_MAX", "CausalSoftmaxArgs", "bh,s", heads_seq, softmax_stores, both_16bit,
       causal_softmax_run},
      {"CAUSAL_SOFT_MAX_BACK", "CausalSoftmaxGradArgs", "bh,s", heads_seq, softmax_stores,
       both_16bit, causal_softmax_back_run},
      {"HEADS",
       "HeadsArgs",
       "b,s,h,hd",
       {{1, 1, 1, 8}, {2, 33, 3, 8}, {3, 7, 2, 5}},
       heads_ways,
       both_16bit,
       heads_run},
      {"HEAD_CROSS_ENTROPY",
       "HeadCrossEntropyArgs",
       "n,v",
       rows_vocab,
       {Variant{}, scores_f32},
       both_16bit,
       head_ce_run},
      {"COLUMN_SUMS", "ColumnSumsArgs", "n,w", rows_cols, one, both_16bit, column_sums_run},
      {"ADAM", "AdamArgs", "n,w", rows_cols, adam_copies, both_16bit, adam_run},
      {"ADAM_LIST", "AdamListArgs", "n,w", rows_cols, adam_copies, both_16bit, adam_list_run},
  };
  return rows;
}

// Elements whose bits differ (two NaNs match).
int64_t differing_bits(const Tensor& a, const Tensor& b) {
  const auto as_int = a.element_size() == 2   ? torch::kInt16
                      : a.element_size() == 4 ? torch::kInt32
                                              : torch::kInt64;
  const Tensor both_nan = torch::isnan(a) & torch::isnan(b);
  const Tensor differ = a.contiguous().view(as_int) != b.contiguous().view(as_int);
  return (differ & ~both_nan).sum().item<int64_t>();
}

// The outputs of two runs of one case: bit for bit where an output is `exact` (every output
// with all_exact), else within one bfloat16 step of the largest value (1e-5 in float32).
void expect_same(const std::vector<Output>& got, const std::vector<Output>& want, bool all_exact) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const Tensor &g = got[i].t, &w = want[i].t;
    ASSERT_EQ(g.scalar_type(), w.scalar_type()) << want[i].name;
    const int64_t differ = differing_bits(g, w);
    if (all_exact || want[i].exact) {
      EXPECT_EQ(differ, 0) << want[i].name << ": " << differ << " of " << w.numel()
                           << " elements differ in their bits";
    } else {
      const double tol = w.scalar_type() == torch::kFloat ? 1e-5 : 0x1p-7;
      EXPECT_LE(testing::rel_err(g, w), tol)
          << want[i].name << " (" << differ << " of " << w.numel() << " elements differ)";
    }
  }
}

// CUDA against the CPU.
void check_cuda(const KernelRow& row, const KernelCase& c) {
  TB_TABLE_NEED_GPU();
  expect_same(row.run(c, torch::kCUDA), row.run(c, torch::kCPU), false);
}

// Two threads against one on the CPU: every output, row sums included (a row is one thread's).
void check_threads(const KernelRow& row, const KernelCase& c) {
  std::vector<Output> one, two;
  {
    const testing::IntraOpThreads threads(1);
    one = row.run(c, torch::kCPU);
  }
  {
    const testing::IntraOpThreads threads(2);
    two = row.run(c, torch::kCPU);
  }
  expect_same(two, one, true);
}

std::vector<std::string> register_bits_table() {
  std::vector<std::string> args;
  for (const KernelRow& row : kernel_rows()) {
    args.push_back(row.args);
    for (c10::ScalarType dtype : row.dtypes) {
      const char* dtype_name = dtype == torch::kBFloat16 ? "bf16" : "f16";
      for (const Shape& shape : row.shapes) {
        for (const Variant& v : row.variants) {
          const KernelCase c{dtype, shape, v};
          const std::string name =
              testing::case_name(row.name, dtype_name, "", row.dims, shape, v.text);
          testing::register_case(
              "KernelTableBits", name, [&row, c] { check_cuda(row, c); }, __FILE__, __LINE__);
          // The same under --gpu_kernels v2 (its kernels where the shape fits them; the table's
          // shapes include the groups and keys they hold: fused_kernels.h gpu_rows_taken).
          testing::register_case(
              "KernelTableBitsV2", name,
              [&row, c] {
                const k::GpuRowsScope v2(GpuRows::kV2);
                check_cuda(row, c);
              },
              __FILE__, __LINE__);
          testing::register_case(
              "KernelTableThreads", name, [&row, c] { check_threads(row, c); }, __FILE__, __LINE__);
        }
      }
    }
  }
  return args;
}
const std::vector<std::string> kRowArgs = register_bits_table();

// A kernel added to TB_FUSED_KERNELS without a row here fails this.
TEST(KernelTableBits, EveryKernelOfTheListHasARow) {
  std::set<std::string> listed;
#define TB_LIST_NAME(Args) listed.insert(#Args);
  TB_FUSED_KERNELS(TB_LIST_NAME)
#undef TB_LIST_NAME
  EXPECT_EQ(std::set<std::string>(kRowArgs.begin(), kRowArgs.end()), listed);
}

}  // namespace
}  // namespace trainbench
