// Micro-benchmarks of the fused kernels (Google Benchmark): each CPU kernel alone at the
// reference shapes (8 x 256 tokens, d_model 512, ff 2048, 8 heads), with the bytes it must move
// (bytes_per_second against BM_MemoryCopy, this machine's copy bandwidth), and each fused op
// (forward + backward, GEMMs included) against its eager LibTorch composition.
// Run: scripts/kernel_bench.sh (JSON with --benchmark_out).
#include <benchmark/benchmark.h>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "trainbench/kernels/fused_kernels.h"
#include "trainbench/kernels/fused_math.h"
#include "trainbench/model/fused_ops.h"
#include "trainbench/model/model.h"
#include "trainbench/train/fused_adam.h"
#include "trainbench/train/host_memory.h"

namespace {

using torch::Tensor;
namespace k = trainbench::kernels;

constexpr int64_t kRows = 8 * 256, kD = 512, kFF = 2048, kHeads = 8, kSeq = 256;

c10::ScalarType dtype_(const benchmark::State& s) {
  const c10::ScalarType types[] = {torch::kFloat, torch::kBFloat16, torch::kHalf};
  return types[s.range(0)];
}
int64_t bytes_(c10::ScalarType t) { return t == torch::kFloat ? 4 : 2; }
const char* dtype_name_(const benchmark::State& s) {
  const char* names[] = {"float32", "bfloat16", "float16"};
  return names[s.range(0)];
}
void label_(benchmark::State& s) { s.SetLabel(dtype_name_(s)); }
// The second argument of the kernels that round (kernel_args.h): the values float32 storage of
// dtype t holds (1 bfloat16, 2 float16: the float32 GEMM route), or 0: t's own.
c10::ScalarType values_(const benchmark::State& s, c10::ScalarType t) {
  const c10::ScalarType types[] = {t, torch::kBFloat16, torch::kHalf};
  return types[s.range(1)];
}
void round_label_(benchmark::State& s) {
  const char* names[] = {"", " rounded to bfloat16", " rounded to float16"};
  s.SetLabel(std::string(dtype_name_(s)) + names[s.range(1)]);
}
void rounding_args_(benchmark::internal::Benchmark* b) {
  for (const auto& a : std::vector<std::vector<int64_t>>{{0, 0}, {1, 0}, {2, 0}, {0, 1}, {0, 2}})
    b->Args(a);
}

// The copy bandwidth the kernels are measured against: 64 MiB read + 64 MiB written.
void BM_MemoryCopy(benchmark::State& s) {
  const Tensor a = torch::rand({16 << 20}), b = torch::empty_like(a);
  for (auto _ : s) b.copy_(a);
  s.SetBytesProcessed(s.iterations() * 2 * a.numel() * 4);
}
BENCHMARK(BM_MemoryCopy)->UseRealTime();

// A step's buffers without its math: for each of 8 layers an FF activation [2048, 2048] and a
// residual [2048, 512] kept (float32, 16 + 4 MiB), a qkv temporary [2048, 1536] written and
// freed; then all freed in reverse order (the backward). Each buffer is written once. 0:
// LibTorch's own CPU allocator (glibc gives blocks back to the kernel, and the next step
// faults their pages in again); 1: bench's caching one (--keep_memory, the same pages).
void BM_StepBuffers(benchmark::State& s) {
  trainbench::keep_freed_memory(s.range(0) == 1);
  auto step = [] {
    std::vector<Tensor> kept;
    for (int layer = 0; layer < 8; ++layer) {
      torch::empty({kRows, 3 * kD}).fill_(1.0f);
      kept.push_back(torch::empty({kRows, kFF}).fill_(1.0f));
      kept.push_back(torch::empty({kRows, kD}).fill_(1.0f));
    }
    while (!kept.empty()) kept.pop_back();
  };
  step();  // the first step faults in either case
  int64_t faults = trainbench::minor_page_faults();
  for (auto _ : s) step();
  faults = trainbench::minor_page_faults() - faults;
  trainbench::keep_freed_memory(false);
  s.SetBytesProcessed(s.iterations() * 8 * kRows * (3 * kD + kFF + kD) * 4);
  s.counters["faults"] = static_cast<double>(faults) / static_cast<double>(s.iterations());
  s.SetLabel(s.range(0) == 1 ? "--keep_memory 1" : "--keep_memory 0 (LibTorch's allocator)");
}
BENCHMARK(BM_StepBuffers)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_KernelDropAddLayerNorm(benchmark::State& s) {
  const auto t = dtype_(s);
  const Tensor r = torch::randn({kRows, kD}), b = torch::randn({kRows, kD}).to(t),
               g = torch::ones({kD}), be = torch::zeros({kD}), bias = torch::zeros({kD});
  Tensor ro = torch::empty_like(r), y = torch::empty({kRows, kD}, b.options()),
         mean = torch::empty({kRows}), rstd = torch::empty({kRows});
  const k::Format f = k::format_of(t, t);
  const auto a = k::drop_add_ln_args(r, b, bias, g, be, ro, y, mean, rstd, f, f,
                                     k::math::dropout_args(0.1, 1));
  for (auto _ : s) k::run(a, c10::DeviceType::CPU);
  s.SetBytesProcessed(s.iterations() * kRows * kD * (4 + 4 + 2 * bytes_(t)));
  label_(s);
}
BENCHMARK(BM_KernelDropAddLayerNorm)->Arg(0)->Arg(1)->Arg(2)->UseRealTime();

void BM_KernelBiasReluDropout(benchmark::State& s) {
  const auto t = dtype_(s);
  Tensor x = torch::randn({kRows, kFF}).to(t);
  const Tensor bias = torch::zeros({kFF});
  const auto a = k::bias_relu_dropout_args(x, bias, k::format_of(t, values_(s, t)),
                                           k::math::dropout_args(0.1, 2));
  for (auto _ : s) k::run(a, c10::DeviceType::CPU);
  s.SetBytesProcessed(s.iterations() * kRows * kFF * 2 * bytes_(t));
  round_label_(s);
}
BENCHMARK(BM_KernelBiasReluDropout)->Apply(rounding_args_)->UseRealTime();

void BM_KernelCausalSoftmax(benchmark::State& s) {
  const auto t = dtype_(s);
  const Tensor src = torch::randn({8 * kHeads * kSeq, kSeq}).to(t);
  Tensor x = src.clone();
  const auto a =
      k::causal_softmax_args(x, x.size(0), kSeq, 0, k::format_of(t, values_(s, t)), 0.125);
  for (auto _ : s)
    k::run(a, c10::DeviceType::CPU);  // rows become probabilities: same work every time
  s.SetBytesProcessed(s.iterations() * x.numel() * 2 * bytes_(t));
  round_label_(s);
}
BENCHMARK(BM_KernelCausalSoftmax)->Apply(rounding_args_)->UseRealTime();

// The attention's heads split (HeadsArgs): q, k, v [8*H, S, hd] from qkv rows [8*S, 3d], in the
// dtype (rows and heads alike), or float32 rows into float32 heads rounded to the second
// argument's type (the float32 route, as the model runs it); a third argument of 1 adds the qkv
// bias as the rows are read (float32 rows, as the model has it there).
void BM_KernelHeads(benchmark::State& s) {
  const auto t = dtype_(s);
  const Tensor rows = torch::randn({8 * kSeq, 3 * kD}).to(t), bias = torch::randn({3 * kD});
  std::vector<Tensor> heads;
  for (int p = 0; p < 3; ++p) heads.push_back(torch::empty({8 * kHeads, kSeq, kD / kHeads}, t));
  const auto a = k::heads_args(rows, heads, kSeq, kHeads, true, k::format_of(t, values_(s, t)), 0,
                               s.range(2) == 1 ? bias : Tensor());
  for (auto _ : s) k::run(a, c10::DeviceType::CPU);
  s.SetBytesProcessed(s.iterations() * rows.numel() * 2 * bytes_(t));
  const char* rounds[] = {"", " rounded to bfloat16", " rounded to float16"};
  s.SetLabel(std::string(dtype_name_(s)) + rounds[s.range(1)] + (s.range(2) == 1 ? " + bias" : ""));
}
BENCHMARK(BM_KernelHeads)
    ->Apply([](benchmark::internal::Benchmark* b) {
      for (const auto& a : std::vector<std::vector<int64_t>>{{0, 0, 0},
                                                             {1, 0, 0},
                                                             {2, 0, 0},
                                                             {0, 1, 0},
                                                             {0, 2, 0},
                                                             {0, 0, 1},
                                                             {0, 1, 1},
                                                             {0, 2, 1}})
        b->Args(a);
    })
    ->UseRealTime();

// The merge of dq, dk, dv [8*H, S, hd] float32 into qkv-gradient rows [8*S, 3d] float32 rounded
// to the first argument's type (0: none), as the float32 route's attention backward runs it; the
// second: 0 the merge alone, 1 with the bias gradient's column partials written as it goes, 2
// the merge and then the column-sum pass over the rows (before the partials moved into it).
void BM_KernelHeadsMerge(benchmark::State& s) {
  const Tensor rows = torch::empty({8 * kSeq, 3 * kD}), partials = torch::empty({64, 3 * kD});
  std::vector<Tensor> heads;
  for (int p = 0; p < 3; ++p) heads.push_back(torch::randn({8 * kHeads, kSeq, kD / kHeads}));
  const c10::ScalarType values[] = {torch::kFloat, torch::kBFloat16, torch::kHalf};
  const auto a = k::heads_args(rows, heads, kSeq, kHeads, false,
                               k::format_of(torch::kFloat, values[s.range(0)]), 0, {},
                               s.range(1) == 1 ? partials : Tensor());
  const auto sums = k::column_sums_args(rows, partials, k::format_of(torch::kFloat, torch::kFloat));
  for (auto _ : s) {
    k::run(a, c10::DeviceType::CPU);
    if (s.range(1) == 2) k::run(sums, c10::DeviceType::CPU);
  }
  s.SetBytesProcessed(s.iterations() * rows.numel() * 8);
  const char* ways[] = {"merge", "merge + column partials", "merge, then column sums"};
  s.SetLabel(std::string(ways[s.range(1)]) + (s.range(0) ? " (rounded)" : ""));
}
BENCHMARK(BM_KernelHeadsMerge)->ArgsProduct({{0, 1, 2}, {0, 1, 2}})->UseRealTime();

void BM_KernelHeadCrossEntropy(benchmark::State& s) {
  const auto t = dtype_(s);
  const Tensor src = torch::randn({kRows, 256}).to(t), bias = torch::zeros({256});
  const Tensor targets = torch::randint(0, 256, {kRows}, torch::kLong);
  Tensor z = src.clone(), partials = torch::empty({k::num_chunks(kRows)});
  const auto a = k::head_cross_entropy_args(z, bias, targets, partials, {}, k::format_of(t, t));
  for (auto _ : s) {
    s.PauseTiming();
    z.copy_(src);
    s.ResumeTiming();
    k::run(a, c10::DeviceType::CPU);
  }
  s.SetBytesProcessed(s.iterations() * z.numel() * 2 * bytes_(t));
  label_(s);
}
BENCHMARK(BM_KernelHeadCrossEntropy)->Arg(0)->Arg(1)->Arg(2)->UseRealTime();

// ---- ops, forward + backward: fused (range(1) == 1) against eager (0) ----------------------
void BM_OpResidualDropoutLayerNorm(benchmark::State& s) {
  const auto t = dtype_(s);
  const bool fused = s.range(1) == 1;
  const Tensor r = torch::randn({kRows, kD}).requires_grad_(),
               b = torch::randn({kRows, kD}).to(t).requires_grad_(),
               g = torch::ones({kD}).requires_grad_(), be = torch::zeros({kD}).requires_grad_();
  for (auto _ : s) {
    if (fused) {
      auto o = trainbench::drop_add_layer_norm(r, b, {}, g, be, {0.1, 3}, k::format_of(t));
      (o[0].sum() + o[1].sum()).backward();
    } else {
      const Tensor h = r + torch::dropout(b, 0.1, true);
      (h.sum() + torch::layer_norm(h, {kD}, g, be).to(t).sum()).backward();
    }
  }
  s.SetLabel(std::string(fused ? "fused " : "eager ") + dtype_name_(s));
}
BENCHMARK(BM_OpResidualDropoutLayerNorm)->ArgsProduct({{0, 1, 2}, {0, 1}})->UseRealTime();

// The LayerNorm into the qkv GEMMs on the float32 route (16-bit dtype from range(0)), forward +
// backward: y float32 storage of the dtype's values, the route's format (range(1) == 1), against
// y in the dtype, which the GEMM op converts to float32 and whose gradient it rounds (0).
void BM_OpLayerNormQkv(benchmark::State& s) {
  const auto t = dtype_(s);
  const bool stored32 = s.range(1) == 1;
  const auto route = k::run_format(t, trainbench::GemmRoute::kFloat32);
  const Tensor r = torch::randn({kRows, kD}).requires_grad_(),
               b = torch::randn({kRows, kD}).requires_grad_(),
               g = torch::ones({kD}).requires_grad_(), be = torch::zeros({kD}).requires_grad_();
  const Tensor w = (torch::randn({3 * kD, kD}) * 0.04).to(t).to(torch::kFloat).requires_grad_(),
               wb = torch::zeros({3 * kD}).requires_grad_();
  for (auto _ : s) {
    const auto h = trainbench::drop_add_layer_norm(r, b, {}, g, be, {0.1, 3},
                                                   stored32 ? route : k::format_of(t));
    const Tensor qkv = trainbench::fused_linear(h[1], w, wb, route, k::product_format(route));
    (h[0].sum() + qkv.sum()).backward();
  }
  s.SetLabel(std::string(dtype_name_(s)) + (stored32 ? ", y float32 storage" : ", y 16-bit"));
}
BENCHMARK(BM_OpLayerNormQkv)->ArgsProduct({{1, 2}, {0, 1}})->UseRealTime();

void BM_OpLinearReluDropout(benchmark::State& s) {
  const auto t = dtype_(s);
  const bool fused = s.range(1) == 1;
  const Tensor x = torch::randn({kRows, kD}).to(t).requires_grad_(),
               w = (torch::randn({kFF, kD}) * 0.04).to(t).requires_grad_(),
               b = torch::zeros({kFF}).requires_grad_();
  for (auto _ : s) {
    const Tensor y = fused ? trainbench::linear_relu_dropout(x, w, b, {0.1, 4}, k::format_of(t))
                           : torch::dropout(torch::relu(torch::linear(x, w, b.to(t))), 0.1, true);
    y.sum().backward();
  }
  s.SetLabel(std::string(fused ? "fused " : "eager ") + dtype_name_(s));
}
BENCHMARK(BM_OpLinearReluDropout)->ArgsProduct({{0, 1}, {0, 1}})->UseRealTime();

void BM_OpCausalAttention(benchmark::State& s) {
  const auto t = dtype_(s);
  const bool fused = s.range(1) >= 1;
  // The qkv linear's rows [B*S, 3d], as the models attend from them.
  const Tensor qkv = torch::randn({8 * kSeq, 3 * kD}).to(t).requires_grad_();
  const Tensor mask = trainbench::causal_mask(kSeq, torch::TensorOptions());
  for (auto _ : s) {
    Tensor o;
    if (fused) {
      // 1: the whole S x S products (block = S), 2: only the blocks at or below the diagonal
      // (16-bit GEMMs take the whole products either way: fused_ops.h).
      o = trainbench::causal_attention(qkv, kSeq, kHeads, k::format_of(t),
                                       s.range(1) == 1 ? kSeq : trainbench::kCausalBlock);
    } else {
      // The eager model's heads: views of the rows [B, S, 3, H, hd] → [B, H, S, hd].
      const auto parts = qkv.view({8, kSeq, 3, kHeads, kD / kHeads}).unbind(2);
      const Tensor q = parts[0].transpose(1, 2), kk = parts[1].transpose(1, 2),
                   v = parts[2].transpose(1, 2);
      const Tensor scores = torch::matmul(q, kk.transpose(-2, -1)) * 0.125;
      o = torch::matmul(torch::softmax(scores + mask, -1).to(t), v)
              .transpose(1, 2)
              .reshape({8 * kSeq, kD});
    }
    o.sum().backward();
  }
  s.SetLabel(std::string(s.range(1) == 0   ? "eager "
                         : s.range(1) == 1 ? "fused full-square "
                                           : "fused causal-blocks ") +
             dtype_name_(s));
}
BENCHMARK(BM_OpCausalAttention)->ArgsProduct({{0, 1}, {0, 1, 2}})->UseRealTime();

void BM_OpHeadCrossEntropy(benchmark::State& s) {
  const auto t = dtype_(s);
  const bool fused = s.range(1) == 1;
  const Tensor x = torch::randn({kRows, kD}).to(t).requires_grad_(),
               w = (torch::randn({256, kD}) * 0.04).to(t).requires_grad_(),
               b = torch::zeros({256}).requires_grad_();
  const Tensor targets = torch::randint(0, 256, {kRows}, torch::kLong);
  for (auto _ : s) {
    const Tensor loss =
        fused ? trainbench::head_cross_entropy(x, w, b, targets, k::format_of(t))
              : torch::cross_entropy_loss(torch::linear(x, w, b.to(t)).to(torch::kFloat), targets);
    loss.backward();
  }
  s.SetLabel(std::string(fused ? "fused " : "eager ") + dtype_name_(s));
}
BENCHMARK(BM_OpHeadCrossEntropy)->ArgsProduct({{0, 1}, {0, 1}})->UseRealTime();

// Adam over an 8-layer model's GEMM weights (8 x qkv, out, ff1, ff2: 25.2M parameters), one
// step: 0 LibTorch's fused Adam (at::_fused_adam_, float32 gradients); 1 bench's kernel, the
// same; 2 bench's kernel with bfloat16 gradients and weight copies; 3 LibTorch's fused Adam
// plus the per-step casts that 2 replaces (each weight to bfloat16, its gradient back to
// float32); 4 bench's kernel on the float32 route of float16 (float32 gradients and copies).
void BM_Adam(benchmark::State& s) {
  const int mode = static_cast<int>(s.range(0));
  std::vector<Tensor> params, grads, m, v, steps, copies;
  for (int layer = 0; layer < 8; ++layer) {
    for (const auto& shape :
         std::vector<std::vector<int64_t>>{{3 * kD, kD}, {kD, kD}, {kFF, kD}, {kD, kFF}}) {
      params.push_back(torch::randn(shape));
      const Tensor g = torch::randn(shape) * 1e-3;
      grads.push_back(mode == 2 ? g.to(torch::kBFloat16) : g);
      m.push_back(torch::zeros(shape));
      v.push_back(torch::zeros(shape));
      steps.push_back(torch::zeros({}));
      copies.push_back(mode == 2 ? params.back().to(torch::kBFloat16) : params.back().clone());
    }
  }
  int64_t n = 0;
  for (const Tensor& p : params) n += p.numel();
  for (auto _ : s) {
    at::_foreach_add_(steps, 1.0);
    if (mode == 0 || mode == 3) {
      std::vector<Tensor> g32 = grads;
      if (mode == 3) {
        for (size_t i = 0; i < params.size(); ++i) {
          copies[i] = params[i].to(torch::kBFloat16);
          g32[i] = grads[i].to(torch::kBFloat16).to(torch::kFloat);
        }
      }
      at::_fused_adam_(params, g32, m, v, {}, steps, 1e-3, 0.9, 0.999, 0.0, 1e-8, false, false);
      continue;
    }
    for (size_t i = 0; i < params.size(); ++i) {
      // Mode 2: bfloat16 copies; 4: float32 storage of float16 values; 1: none.
      const k::Format copy_format = mode == 2   ? k::format_of(torch::kBFloat16)
                                    : mode == 4 ? k::format_of(torch::kFloat, torch::kHalf)
                                                : k::Format{};
      k::run(k::adam_args(params[i], m[i], v[i], steps[i], grads[i],
                          mode >= 2 ? copies[i] : Tensor(), copy_format),
             c10::DeviceType::CPU);
    }
  }
  // Parameter, moments: read and written; gradient read; copy written.
  const int64_t per = 24 + (mode == 2 ? 2 : 4) + (mode == 2 ? 2 : mode == 4 ? 4 : 0);
  s.SetBytesProcessed(s.iterations() * n * per);
  const char* labels[] = {"libtorch fused adam", "bench adam", "bench adam, bfloat16 copies",
                          "libtorch fused adam + casts", "bench adam, float32-route copies"};
  s.SetLabel(labels[mode]);
}
BENCHMARK(BM_Adam)->DenseRange(0, 4)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  at::set_num_threads(2);  // the comparisons of docs/BENCHMARKS.md: 2 threads
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
