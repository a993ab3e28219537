// The CPU's float32 FMA peak, part of kernel_bench: independent multiply-add chains held in
// registers on each of the intra-op threads, no memory traffic. bench's MFU is on the probe's
// GEMM rate (docs/RESULTS.md); this is the ceiling above that rate, the vector units' own, for
// reading how far the library's GEMM is from the hardware (docs/BENCHMARKS.md).
// Arg: the vector width in bits (256: AVX2 + FMA; 512: AVX-512F), skipped where the CPU lacks it.
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <ATen/Parallel.h>

#include <vector>

namespace {

// 12 chains: at least an FMA's latency (4-5 cycles) times the FMA ports (2), so no port waits
// on a result. Distinct starting values keep the compiler from merging chains into one.
constexpr int kChains = 12;

// Each function returns a sum of its chains, so no chain is dead code.
__attribute__((target("avx2,fma"))) float chains_256_(int64_t iters, float seed) {
  __m256 a[kChains];
  for (int i = 0; i < kChains; ++i) a[i] = _mm256_set1_ps(seed + 0.01f * static_cast<float>(i));
  const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) a[i] = _mm256_fmadd_ps(a[i], m, c);
  }
  __m256 s = a[0];
  for (int i = 1; i < kChains; ++i) s = _mm256_add_ps(s, a[i]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0];
}

__attribute__((target("avx512f"))) float chains_512_(int64_t iters, float seed) {
  __m512 a[kChains];
  for (int i = 0; i < kChains; ++i) a[i] = _mm512_set1_ps(seed + 0.01f * static_cast<float>(i));
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) a[i] = _mm512_fmadd_ps(a[i], m, c);
  }
  __m512 s = a[0];
  for (int i = 1; i < kChains; ++i) s = _mm512_add_ps(s, a[i]);
  float out[16];
  _mm512_storeu_ps(out, s);
  return out[0];
}

// FLOP/s of all intra-op threads together (at::get_num_threads(), as bench's --threads sets
// them): one chunk of chains per thread, timed from the first start to the last finish.
void BM_FmaPeak(benchmark::State& s) {
  const bool wide = s.range(0) == 512;
  __builtin_cpu_init();
  if (wide ? !__builtin_cpu_supports("avx512f")
           : !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
    s.SkipWithError(wide ? "no AVX-512F on this CPU" : "no AVX2 + FMA on this CPU");
    return;
  }
  const int threads = at::get_num_threads();
  const int64_t iters = 1 << 22;
  std::vector<float> sums(threads);
  for (auto _ : s) {
    at::parallel_for(0, threads, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const float seed = 1.0f + static_cast<float>(t);
        sums[t] = wide ? chains_512_(iters, seed) : chains_256_(iters, seed);
      }
    });
    benchmark::DoNotOptimize(sums.data());
  }
  const double flops = 2.0 * (wide ? 16 : 8) * kChains * static_cast<double>(iters) * threads;
  s.counters["FLOP/s"] =
      benchmark::Counter(flops * static_cast<double>(s.iterations()), benchmark::Counter::kIsRate);
  s.SetLabel(std::to_string(threads) + " threads");
}
BENCHMARK(BM_FmaPeak)->Arg(256)->Arg(512)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
