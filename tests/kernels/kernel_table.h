// The fused ops' and kernels' test table (cf. ggml's tests/test-backend-ops.cpp): an op or a
// kernel is one row (its shapes, its variants, how to make a case's inputs and run it), and
// the cases, generated over the table's dtypes x the row's shapes x its variants, are tests of
// their own with self-describing names such as
// DROP_ADD_LN(dtype=bf16,n=7,d=48,resid=null,bias=yes,ln=yes,p=0.1). What this header holds:
// the dtypes and their tolerances, shapes and variants, case names, registration, and the
// comparisons; the rows are in test_op_table.cpp (the autograd ops against LibTorch) and
// test_kernel_bits.cpp (the kernels bit for bit: two threads against one, CUDA against the CPU).
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <torch/cuda.h>
#include <torch/torch.h>

#include "trainbench/kernels/fused_kernels.h"
#include "trainbench/kernels/fused_math.h"
#include "trainbench/model/fused_ops.h"

namespace trainbench::testing {

// A dtype of the table: its name in case names and the tolerances of a fused op against its
// reference, as rel_err (below) per output and per input gradient. The 16-bit dtypes allow two
// steps of the dtype at the tensor's largest value (2^-6 for bfloat16's 8 significant bits,
// 2^-9 for float16's 11); the worst cases measured are one step (7.5e-3 and 9.0e-4).
struct DtypeRow {
  c10::ScalarType type;
  const char* name;
  double forward_tol, backward_tol;
};
inline constexpr DtypeRow kFloat32Row = {torch::kFloat, "f32", 1e-6, 1e-5};
inline constexpr DtypeRow kBfloat16Row = {torch::kBFloat16, "bf16", 0x1p-6, 0x1p-6};
inline constexpr DtypeRow kFloat16Row = {torch::kHalf, "f16", 0x1p-9, 0x1p-9};
inline constexpr const DtypeRow* kTableDtypes[] = {&kFloat32Row, &kBfloat16Row, &kFloat16Row};

// A leaf of t's values that records its gradient.
inline torch::Tensor leaf(const torch::Tensor& t) { return t.detach().requires_grad_(true); }
// The gradients of leaves xs (clones; undefined where none), which are then cleared.
inline std::vector<torch::Tensor> grads_of(const std::vector<torch::Tensor>& xs) {
  std::vector<torch::Tensor> g;
  for (const auto& x : xs) g.push_back(x.grad().defined() ? x.grad().clone() : torch::Tensor());
  for (const auto& x : xs) x.mutable_grad() = torch::Tensor();
  return g;
}

// The one-line message of the error fn throws (a LibTorch check's without its stack), or
// "no error".
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  }
  return "no error";
}

// The format a run of dtype t on a GEMM route gives the fused ops (kernels::run_format).
inline kernels::Format run_format(c10::ScalarType t, GemmRoute route = GemmRoute::kNative) {
  return kernels::run_format(t, route);
}

// causal_attention (fused_ops.h) on q, k, v [B, H, S, hd]: the qkv rows [B*S, 3*H*hd] made from
// them, the output back as [B, H, S, hd] (autograd through both).
inline torch::Tensor attention_of(const torch::Tensor& q, const torch::Tensor& k,
                                  const torch::Tensor& v, GemmRoute route = GemmRoute::kNative,
                                  int64_t block = 0) {
  const int64_t b = q.size(0), h = q.size(1), s = q.size(2), hd = q.size(3);
  const torch::Tensor rows =
      torch::stack({q, k, v}, 1).permute({0, 3, 1, 2, 4}).reshape({b * s, 3 * h * hd});
  return causal_attention(rows, s, h, run_format(q.scalar_type(), route), block)
      .view({b, s, h, hd})
      .transpose(1, 2);
}

inline bool is_16bit(c10::ScalarType t) { return t == torch::kBFloat16 || t == torch::kHalf; }

// A case's sizes; a row names the ones it uses ("n,d": rows and width).
using Shape = std::array<int64_t, 4>;

// The switches a case runs with (each row uses the ones it has) and their part of the name.
struct Variant {
  bool resid = true, bias = true, ln = true;
  bool store_f32 = false;  // float32 storage: the GEMM's unrounded product, the route's tensors
  // A GEMM op's x as float32 storage of the 16-bit dtype's values (the float32 route's
  // LayerNorm output; fused_ops.h): float32-route cases only.
  bool x_float32 = false;
  // HEADS: the rows' linear's bias added as they are read (to heads), or its gradient's column
  // partials added as they are written (to rows).
  bool qkv_bias = false;
  double p = 0;       // dropout probability
  int64_t block = 0;  // causal attention's score block (0: the op's own choice)
  std::string text;   // "resid=null,bias=yes,ln=yes,p=0.1"
};

inline const char* yes_null(bool present) { return present ? "yes" : "null"; }

// The residual add + LayerNorm's variants: a residual (named `resid_name`: "resid", or
// "d_resid" for a backward) or none, x a bias or none (where `vary_bias`) x gamma+beta or none
// x dropout 0 and 0.1.
inline std::vector<Variant> drop_add_ln_variants(const char* resid_name, bool vary_bias) {
  std::vector<Variant> out;
  for (bool resid : {true, false}) {
    for (bool bias : vary_bias ? std::vector<bool>{true, false} : std::vector<bool>{true}) {
      for (bool ln : {true, false}) {
        for (double p : {0.0, 0.1}) {
          Variant v;
          v.resid = resid;
          v.bias = bias;
          v.ln = ln;
          v.p = p;
          v.text = std::string(resid_name) + "=" + yes_null(resid) +
                   (vary_bias ? std::string(",bias=") + yes_null(bias) : std::string()) +
                   ",ln=" + yes_null(ln) + ",p=" + (p > 0 ? "0.1" : "0");
          out.push_back(v);
        }
      }
    }
  }
  return out;
}
// Dropout off and on (0.2).
inline std::vector<Variant> dropout_variants() {
  Variant off, on;
  off.text = "p=0";
  on.p = 0.2;
  on.text = "p=0.2";
  return {off, on};
}

// OP(dtype=bf16,route=native,n=7,d=48,resid=null,p=0.1): the dims named by `dims` ("n,d"), the
// route where there is one (empty `route`: none), then the variant's own text.
inline std::string case_name(const char* op, const char* dtype, const std::string& route,
                             const char* dims, const Shape& shape, const std::string& variant) {
  std::ostringstream out;
  out << op << "(dtype=" << dtype;
  if (!route.empty()) out << ",route=" << route;
  std::istringstream names(dims);
  std::string dim;
  for (size_t i = 0; std::getline(names, dim, ','); ++i) out << "," << dim << "=" << shape[i];
  if (!variant.empty()) out << "," << variant;
  out << ")";
  return out.str();
}

// One case as a test of its own, suite.name (names may hold any character but ':' and '-',
// which --gtest_filter reserves). The fixture is testing::Test, as TEST()'s.
class TableCase : public ::testing::Test {
 public:
  explicit TableCase(std::function<void()> body) : body_(std::move(body)) {}
  void TestBody() override { body_(); }

 private:
  std::function<void()> body_;
};
inline void register_case(const char* suite, const std::string& name, std::function<void()> body,
                          const char* file, int line) {
  ::testing::RegisterTest(suite, name.c_str(), nullptr, nullptr, file, line,
                          [body]() -> ::testing::Test* { return new TableCase(body); });
}

// The intra-op threads for one scope, then the process's count again. The op table's cases run
// on one: hundreds of tiny cases, whose parallel regions each wait for a thread that a busy
// 2-core machine has descheduled (measured there: 18 s on two threads, 1.5 s on one);
// KernelTableThreads holds the kernels to the same bits on one and two threads.
class IntraOpThreads {
 public:
  explicit IntraOpThreads(int n) : before_(at::get_num_threads()) { at::set_num_threads(n); }
  ~IntraOpThreads() { at::set_num_threads(before_); }
  IntraOpThreads(const IntraOpThreads&) = delete;
  IntraOpThreads& operator=(const IntraOpThreads&) = delete;

 private:
  int before_;
};

#define TB_TABLE_NEED_GPU()         \
  if (!torch::cuda::is_available()) \
  GTEST_SKIP() << "no GPU visible: the CUDA kernels compile but do not run here"

// Max |a - b| / (max |b| + tiny): a relative error over the whole tensor.
inline double rel_err(const torch::Tensor& a, const torch::Tensor& b) {
  const double scale = b.abs().max().item<double>() + 1e-12;
  return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>() / scale;
}

// The dropout factors the kernels apply to a [rows, cols] tensor under (p, key): 1 / (1 - p)
// where kept, 0 where dropped (kernels/fused_math.h's counter-based mask), as float32.
inline torch::Tensor dropout_factors(int64_t rows, int64_t cols, double p, uint64_t key) {
  const kernels::DropoutArgs d = kernels::math::dropout_args(p, key);
  torch::Tensor f = torch::empty({rows, cols});
  float* fs = f.data_ptr<float>();
  for (int64_t i = 0; i < rows * cols; ++i) {
    fs[i] = kernels::math::dropout_factor<float>(d, static_cast<uint64_t>(i));
  }
  return f;
}

// Every float a storage test cares about: ordinary values, rounding ties, subnormals,
// infinities, NaN.
inline torch::Tensor awkward_floats() {
  torch::manual_seed(3);
  const float inf = std::numeric_limits<float>::infinity();
  torch::Tensor special =
      torch::tensor({0.0f, -0.0f, 1.0f, -1.0f, 1.00390625f, 1.01171875f, 65504.0f, 65520.0f, 1e-8f,
                     1e-40f, -3e-39f, inf, -inf, std::nanf("")});
  return torch::cat({special, torch::randn({4096}) * 100, torch::randn({4096}) * 1e-5});
}

}  // namespace trainbench::testing
