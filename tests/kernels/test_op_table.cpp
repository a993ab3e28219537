// The fused ops (model/fused_ops.h) as rows of the kernel table (kernel_table.h). Each case runs
// one op forward and backward and checks every output and input gradient, and their dtypes,
// against the op's LibTorch reference composition over the same input values: the reference
// computes in float32 and rounds to the case's dtype where the op stores a tensor in it (a
// GEMM's output, attention's scores and probabilities), so the tolerance measures the op's own
// arithmetic. Suite KernelTable runs the cases on the CPU, KernelTableCuda on CUDA (there the
// float32 cases also hold the CUDA op to the CPU op; skipped without a GPU). A new op is one
// row of kOpRows.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "kernels/kernel_table.h"
#include "trainbench/model/fused_ops.h"
#include "trainbench/model/model.h"

namespace trainbench {
namespace {

using testing::attention_of;
using testing::DtypeRow;
using testing::Shape;
using testing::Variant;
using torch::Tensor;

constexpr uint64_t kTableDropKey = 17;

// One case of an op row.
struct OpCase {
  const DtypeRow* dtype;
  GemmRoute route;
  Shape shape;
  Variant v;
  c10::ScalarType dt() const { return dtype->type; }
};

struct OpRow {
  const char* name;
  const char* dims;  // the shape's dims in case names
  std::vector<Shape> shapes;
  std::vector<Variant> variants;
  // Float32 on CUDA against the op on the CPU: allclose with rtol = atol = this.
  double cuda_vs_cpu_f32_tol;
  std::vector<const char*> input_names, output_names;
  // The inputs on the CPU (undefined where the variant leaves one out), in their dtypes.
  std::vector<Tensor> (*inputs)(const OpCase&);
  std::vector<Tensor> (*fused)(const OpCase&, const std::vector<Tensor>&);
  std::vector<Tensor> (*reference)(const OpCase&, const std::vector<Tensor>&);
};

// x rounded to dtype and read back in float32: where the op stores a tensor in its dtype.
Tensor stored(const Tensor& x, c10::ScalarType dtype) { return x.to(dtype).to(torch::kFloat); }
Tensor f32(const Tensor& x) { return x.to(torch::kFloat); }
// A GEMM op's x in the case's dtype, or with x_float32 float32 storage of its values (both held
// by the run's format on the float32 route, fused_ops.h).
Tensor gemm_input(const OpCase& c, const Tensor& x) {
  return c.v.x_float32 ? x.to(c.dt()).to(torch::kFloat) : x.to(c.dt());
}
// The run's format of the case (kernels::run_format).
kernels::Format format(const OpCase& c) { return testing::run_format(c.dt(), c.route); }
// The float32 route of a 16-bit dtype: what it stores in float32 holds the dtype's values.
bool route32(const OpCase& c) {
  return c.route == GemmRoute::kFloat32 && testing::is_16bit(c.dt());
}

// ---- LINEAR: fused_linear(x [n, in], w [out, in], b [out] or null, format, out format) ----
std::vector<Tensor> linear_inputs(const OpCase& c) {
  const auto [n, in, out, unused] = c.shape;
  const Tensor x = gemm_input(c, torch::randn({n, in}));
  const Tensor w = (torch::randn({out, in}) * 0.2).to(c.dt());
  return {x, w, c.v.bias ? torch::randn({out}) : Tensor()};
}
std::vector<Tensor> linear_fused(const OpCase& c, const std::vector<Tensor>& in) {
  const auto f = format(c);
  return {fused_linear(in[0], in[1], in[2], f,
                       c.v.store_f32 ? kernels::product_format(f) : kernels::values_format(f))};
}
std::vector<Tensor> linear_reference(const OpCase& c, const std::vector<Tensor>& in) {
  Tensor y = torch::mm(f32(in[0]), f32(in[1]).t());
  if (in[2].defined()) y = y + in[2];
  // store_f32: the GEMM's product, unrounded on the float32 route (fused_ops.h).
  return {y.to(c.v.store_f32 && route32(c) ? torch::kFloat : c.dt())};
}

// ---- DROP_ADD_LN: drop_add_layer_norm(resid, branch, bias, gamma, beta, drop, format) ----
std::vector<Tensor> drop_add_ln_inputs(const OpCase& c) {
  const auto [n, d, u1, u2] = c.shape;
  const Tensor resid = c.v.resid ? torch::randn({n, d}) : Tensor();
  const Tensor branch = torch::randn({n, d}).to(c.dt());
  const Tensor bias = c.v.bias ? torch::randn({d}) : Tensor();
  const Tensor gamma = c.v.ln ? torch::rand({d}) + 0.5 : Tensor();
  return {resid, branch, bias, gamma, c.v.ln ? torch::randn({d}) : Tensor()};
}
std::vector<Tensor> drop_add_ln_fused(const OpCase& c, const std::vector<Tensor>& in) {
  return drop_add_layer_norm(in[0], in[1], in[2], in[3], in[4], {c.v.p, kTableDropKey}, format(c));
}
std::vector<Tensor> drop_add_ln_reference(const OpCase& c, const std::vector<Tensor>& in) {
  const int64_t n = in[1].size(0), d = in[1].size(1);
  Tensor h = f32(in[1]);
  if (in[2].defined()) h = h + in[2];
  if (c.v.p > 0) h = h * testing::dropout_factors(n, d, c.v.p, kTableDropKey).to(h.device());
  if (in[0].defined()) h = in[0] + h;
  const Tensor y = c.v.ln ? torch::layer_norm(h, {d}, in[3], in[4], 1e-5) : h;
  // The float32 route's y: float32 storage of the dtype's values (fused_ops.h).
  return {h, route32(c) ? stored(y, c.dt()) : y.to(c.dt())};
}

// ---- LINEAR_RELU_DROPOUT: dropout(relu(x w^T + b)), x [n, in], w [f, in], b [f] ------------
std::vector<Tensor> lrd_inputs(const OpCase& c) {
  const auto [n, in, f, unused] = c.shape;
  const Tensor x = gemm_input(c, torch::randn({n, in}));
  const Tensor w = (torch::randn({f, in}) * 0.2).to(c.dt());
  return {x, w, torch::randn({f}) * 0.1};
}
std::vector<Tensor> lrd_fused(const OpCase& c, const std::vector<Tensor>& in) {
  return {linear_relu_dropout(in[0], in[1], in[2], {c.v.p, kTableDropKey}, format(c))};
}
std::vector<Tensor> lrd_reference(const OpCase& c, const std::vector<Tensor>& in) {
  const Tensor a = stored(torch::mm(f32(in[0]), f32(in[1]).t()), c.dt());  // [n, f]
  Tensor out = torch::relu(a + in[2]);
  if (c.v.p > 0) {
    out = out * testing::dropout_factors(a.size(0), a.size(1), c.v.p, kTableDropKey).to(a.device());
  }
  // The float32 route keeps the hidden in float32 storage of the dtype's values (fused_ops.h).
  return {route32(c) ? stored(out, c.dt()) : out.to(c.dt())};
}

// ---- CAUSAL_ATTENTION: softmax(q k^T / sqrt(hd) + causal mask) v, q, k, v [b, h, s, hd] ----
std::vector<Tensor> attention_inputs(const OpCase& c) {
  const auto [b, h, s, hd] = c.shape;
  return {torch::randn({b, h, s, hd}).to(c.dt()), torch::randn({b, h, s, hd}).to(c.dt()),
          torch::randn({b, h, s, hd}).to(c.dt())};
}
std::vector<Tensor> attention_fused(const OpCase& c, const std::vector<Tensor>& in) {
  return {attention_of(in[0], in[1], in[2], c.route, c.v.block)};
}
std::vector<Tensor> attention_reference(const OpCase& c, const std::vector<Tensor>& in) {
  const int64_t s = in[0].size(2), hd = in[0].size(3);
  const Tensor scores = stored(torch::matmul(f32(in[0]), f32(in[1]).transpose(-2, -1)), c.dt());
  const Tensor mask = causal_mask(s, scores.options());
  const Tensor p = stored(torch::softmax(scores / std::sqrt(double(hd)) + mask, -1), c.dt());
  // The float32 route returns float32 rows of the dtype's values (fused_ops.h).
  const Tensor out = torch::matmul(p, f32(in[2]));
  return {route32(c) ? stored(out, c.dt()) : out.to(c.dt())};
}

// ---- HEAD_CROSS_ENTROPY: mean cross-entropy of x w^T + b, x [n, d], w [v, d], b [v] --------
std::vector<Tensor> head_ce_inputs(const OpCase& c) {
  const auto [n, d, v, unused] = c.shape;
  const Tensor x = gemm_input(c, torch::randn({n, d}));
  const Tensor w = (torch::randn({v, d}) * 0.3).to(c.dt());
  return {x, w, torch::randn({v}) * 0.1, torch::randint(0, v, {n}, torch::kLong)};
}
std::vector<Tensor> head_ce_fused(const OpCase& c, const std::vector<Tensor>& in) {
  return {head_cross_entropy(in[0], in[1], in[2], in[3], format(c))};
}
std::vector<Tensor> head_ce_reference(const OpCase& c, const std::vector<Tensor>& in) {
  const Tensor logits = stored(torch::mm(f32(in[0]), f32(in[1]).t()), c.dt()) + in[2];
  return {torch::cross_entropy_loss(logits, in[3])};
}

// ---- variants ---------------------------------------------------------------------------------
// Each of `variants`, and each again with x as float32 storage (x_float32; its name ends
// ",x=f32").
std::vector<Variant> with_x_float32(std::vector<Variant> variants) {
  const size_t n = variants.size();
  for (size_t i = 0; i < n; ++i) {
    Variant v = variants[i];
    v.x_float32 = true;
    v.text += v.text.empty() ? "x=f32" : ",x=f32";
    variants.push_back(v);
  }
  return variants;
}
std::vector<Variant> linear_variants() {
  std::vector<Variant> out;
  for (bool bias : {true, false}) {
    for (bool keep : {false, true}) {
      Variant v;
      v.bias = bias;
      v.store_f32 = keep;
      v.text =
          std::string("bias=") + testing::yes_null(bias) + ",out=" + (keep ? "product" : "values");
      out.push_back(v);
    }
  }
  return with_x_float32(out);
}
std::vector<Variant> block_variants() {
  Variant own, two;
  own.text = "block=auto";
  two.block = 2;
  two.text = "block=2";
  return {own, two};
}

// The rows. Every op's shapes have one row, odd widths (a remainder after the CPU rows' vector
// loops of 8 and 16 floats) and row counts that leave a partial last chunk of kChunkRows (257 =
// 8 x 32 + 1).
const std::vector<OpRow>& op_rows() {
  static const std::vector<OpRow> rows = {
      {.name = "LINEAR",
       .dims = "n,in,out",
       .shapes = {{1, 3, 5}, {37, 33, 20}, {64, 96, 130}},
       .variants = linear_variants(),
       .cuda_vs_cpu_f32_tol = 1e-5,
       .input_names = {"x", "w", "b"},
       .output_names = {"y"},
       .inputs = linear_inputs,
       .fused = linear_fused,
       .reference = linear_reference},
      {.name = "DROP_ADD_LN",
       .dims = "n,d",
       .shapes = {{1, 3}, {3, 7}, {67, 129}, {257, 33}, {64, 512}},
       .variants = testing::drop_add_ln_variants("resid", true),
       .cuda_vs_cpu_f32_tol = 1e-5,
       .input_names = {"resid", "branch", "bias", "gamma", "beta"},
       .output_names = {"resid_out", "y"},
       .inputs = drop_add_ln_inputs,
       .fused = drop_add_ln_fused,
       .reference = drop_add_ln_reference},
      {.name = "LINEAR_RELU_DROPOUT",
       .dims = "n,in,f",
       .shapes = {{1, 16, 3}, {3, 16, 7}, {70, 24, 50}, {257, 16, 33}, {64, 16, 512}},
       .variants = with_x_float32(testing::dropout_variants()),
       .cuda_vs_cpu_f32_tol = 1e-4,
       .input_names = {"x", "w", "b"},
       .output_names = {"out"},
       .inputs = lrd_inputs,
       .fused = lrd_fused,
       .reference = lrd_reference},
      {.name = "CAUSAL_ATTENTION",
       .dims = "b,h,s,hd",
       .shapes = {{2, 3, 1, 8}, {2, 3, 3, 8}, {2, 3, 33, 8}, {2, 3, 257, 8}, {1, 2, 7, 5}},
       .variants = block_variants(),
       .cuda_vs_cpu_f32_tol = 1e-4,
       .input_names = {"q", "k", "v"},
       .output_names = {"out"},
       .inputs = attention_inputs,
       .fused = attention_fused,
       .reference = attention_reference},
      {.name = "HEAD_CROSS_ENTROPY",
       .dims = "n,d,v",
       .shapes = {{1, 20, 256}, {3, 20, 256}, {45, 16, 256}, {257, 20, 256}, {7, 9, 255}},
       .variants = with_x_float32({Variant{}}),
       .cuda_vs_cpu_f32_tol = 1e-5,
       .input_names = {"x", "w", "b", "targets"},
       .output_names = {"loss"},
       .inputs = head_ce_inputs,
       .fused = head_ce_fused,
       .reference = head_ce_reference},
  };
  return rows;
}

// A case's run on one device: leaves copied from `inputs`, the outputs, and after a backward
// pass with the upstream gradients `ups` (float32, cast to each output's dtype), the leaves'
// gradients.
struct Run {
  std::vector<Tensor> outputs, grads;
};
Run run_case(const std::vector<Tensor>& inputs, const std::vector<Tensor>& ups,
             const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& op,
             torch::Device device) {
  std::vector<Tensor> leaves;
  for (const Tensor& t : inputs) {
    leaves.push_back(t.defined()
                         ? t.to(device).detach().clone().requires_grad_(t.is_floating_point())
                         : Tensor());
  }
  Run r;
  r.outputs = op(leaves);
  std::vector<Tensor> typed_ups;
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    typed_ups.push_back(ups[i].to(device, r.outputs[i].scalar_type()));
  }
  torch::autograd::backward(r.outputs, typed_ups);
  for (auto& o : r.outputs) o = o.detach();
  for (const Tensor& l : leaves) r.grads.push_back(l.defined() ? l.grad() : Tensor());
  return r;
}

// got against want, tensor by tensor: the same dtype and shape, rel_err within tol.
void expect_near(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                 const std::vector<const char*>& names, const char* what, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (!want[i].defined()) {
      EXPECT_FALSE(got[i].defined()) << what << names[i] << " should have none";
      continue;
    }
    ASSERT_TRUE(got[i].defined()) << what << names[i] << " is missing";
    EXPECT_EQ(got[i].scalar_type(), want[i].scalar_type()) << what << names[i];
    ASSERT_EQ(got[i].sizes(), want[i].sizes()) << what << names[i];
    const double err = testing::rel_err(got[i], want[i]);
    EXPECT_LE(err, tol) << what << names[i] << ": max |fused - reference| / max |reference|";
  }
}

void check_case(const OpRow& row, const OpCase& c, torch::Device device) {
  const testing::IntraOpThreads one_thread(1);
  torch::manual_seed(1);
  const std::vector<Tensor> inputs = row.inputs(c);
  auto fused = [&](const std::vector<Tensor>& in) { return row.fused(c, in); };
  auto reference = [&](const std::vector<Tensor>& in) { return row.reference(c, in); };
  // The upstream gradients: float32 values of the reference outputs' shapes.
  std::vector<Tensor> ups;
  {
    torch::NoGradGuard no_grad;
    torch::manual_seed(11);
    for (const Tensor& o : row.reference(c, inputs)) ups.push_back(torch::randn(o.sizes()));
  }
  const Run got = run_case(inputs, ups, fused, device);
  const Run want = run_case(inputs, ups, reference, device);
  expect_near(got.outputs, want.outputs, row.output_names, "output ", c.dtype->forward_tol);
  expect_near(got.grads, want.grads, row.input_names, "gradient of ", c.dtype->backward_tol);
  if (device.is_cuda() && c.dt() == torch::kFloat) {  // and the CUDA op against the CPU op
    const Run cpu = run_case(inputs, ups, fused, torch::kCPU);
    const double tol = row.cuda_vs_cpu_f32_tol;
    for (size_t i = 0; i < cpu.outputs.size(); ++i) {
      EXPECT_TRUE(torch::allclose(got.outputs[i].cpu(), cpu.outputs[i], tol, tol))
          << "output " << row.output_names[i] << " on CUDA against the CPU";
    }
    for (size_t i = 0; i < cpu.grads.size(); ++i) {
      if (!cpu.grads[i].defined()) continue;
      EXPECT_TRUE(torch::allclose(got.grads[i].cpu(), cpu.grads[i], tol, tol))
          << "gradient of " << row.input_names[i] << " on CUDA against the CPU";
    }
  }
}

// Every row x dtype x route (both in a 16-bit dtype) x shape x variant (x_float32 on the float32
// route only), once in KernelTable (CPU) and once in KernelTableCuda.
std::vector<std::string> register_op_table() {
  std::vector<std::string> names;
  for (const OpRow& row : op_rows()) {
    for (const DtypeRow* dtype : testing::kTableDtypes) {
      std::vector<GemmRoute> routes = {GemmRoute::kNative};
      if (testing::is_16bit(dtype->type)) routes.push_back(GemmRoute::kFloat32);
      for (GemmRoute route : routes) {
        const std::string route_text = !testing::is_16bit(dtype->type) ? ""
                                       : route == GemmRoute::kNative   ? "native"
                                                                       : "f32";
        for (const Shape& shape : row.shapes) {
          for (const Variant& v : row.variants) {
            const OpCase c{dtype, route, shape, v};
            if (v.x_float32 && !route32(c)) continue;  // float32 x: the float32 route's own
            const std::string name =
                testing::case_name(row.name, dtype->name, route_text, row.dims, shape, v.text);
            testing::register_case(
                "KernelTable", name, [&row, c] { check_case(row, c, torch::kCPU); }, __FILE__,
                __LINE__);
            testing::register_case(
                "KernelTableCuda", name,
                [&row, c] {
                  TB_TABLE_NEED_GPU();
                  check_case(row, c, torch::kCUDA);
                },
                __FILE__, __LINE__);
            names.push_back(name);
          }
        }
      }
    }
  }
  return names;
}
const std::vector<std::string> kOpCaseNames = register_op_table();

// The table covers every public op of fused_ops.h in every dtype, and no two cases share a name.
TEST(KernelTable, EveryFusedOpHasCasesInEveryDtypeUnderNamesOfTheirOwn) {
  const std::set<std::string> unique(kOpCaseNames.begin(), kOpCaseNames.end());
  EXPECT_EQ(unique.size(), kOpCaseNames.size());
  for (const char* op :
       {"LINEAR", "DROP_ADD_LN", "LINEAR_RELU_DROPOUT", "CAUSAL_ATTENTION", "HEAD_CROSS_ENTROPY"}) {
    for (const DtypeRow* dtype : testing::kTableDtypes) {
      const std::string prefix = std::string(op) + "(dtype=" + dtype->name + ",";
      size_t cases = 0;
      for (const std::string& name : kOpCaseNames) cases += name.rfind(prefix, 0) == 0;
      EXPECT_GT(cases, 0u) << prefix;
    }
  }
}

}  // namespace
}  // namespace trainbench
