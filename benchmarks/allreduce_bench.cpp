// allreduce_bench: the all-reduce bandwidth of the process group bench uses (c10d Gloo on CPU,
// NCCL on CUDA), over message sizes from 4 KiB to --max_mb. Run one process per rank:
//   scripts/launch.sh 2 build/allreduce_bench [--max_mb 128] [--device cpu] [--seconds 1]
// Prints, on rank 0, the time per all-reduce, the algorithm bandwidth (bytes / time) and the
// bus bandwidth (algbw * 2(n-1)/n: what each link carries in a ring, comparable across n).
#include <chrono>
#include <cstdio>
#include <string>

#include <torch/cuda.h>
#include <cxxopts.hpp>

#include "trainbench/app/validate.h"
#include "trainbench/core/plan.h"
#include "trainbench/core/timing.h"
#include "trainbench/dist/dist.h"

int main(int argc, char** argv) {
  using namespace trainbench;
  cxxopts::Options options("allreduce_bench", "all-reduce bandwidth of the c10d process group");
  options.add_options()("max_mb", "largest message in MiB",
                        cxxopts::value<double>()->default_value("128"))(
      "device", "cpu | cuda", cxxopts::value<std::string>()->default_value("cpu"))(
      "seconds", "time per size", cxxopts::value<double>()->default_value("1"))(
      "dist_timeout", "seconds to wait for a rank", cxxopts::value<int64_t>()->default_value("60"))(
      "h,help", "help");
  try {
    const auto args = options.parse(argc, argv);
    if (args.count("help")) {
      std::printf("%s", options.help().c_str());
      return 0;
    }
    const DistEnv env = dist_env_from_environment();
    if (!env.distributed()) {
      throw ConfigError("WORLD_SIZE: unset or 1; start it with scripts/launch.sh N or torchrun");
    }
    RunConfig cfg;
    const std::string device_text = args["device"].as<std::string>();
    cfg.dist_timeout = args["dist_timeout"].as<int64_t>();
    const auto chosen = parse_choice<DeviceChoice>(device_text);
    if (!chosen || *chosen == DeviceChoice::kAuto) {
      throw ConfigError("--device: '" + device_text + "' is not allowed; use cpu|cuda");
    }
    cfg.device = *chosen;
    const RunPlan plan = make_plan(cfg, env);
    validate_dist(plan);
    const torch::Device device = plan.device;
    DistContext dist(plan);
    const double seconds = args["seconds"].as<double>();
    const double max_bytes = args["max_mb"].as<double>() * (1 << 20);
    const int n = dist.world_size();
    if (dist.rank() == 0) {
      std::printf(
          "# %d ranks, %s, float32 sum\n| bytes | ms per all-reduce | algbw GB/s | "
          "busbw GB/s |\n|---|---|---|---|\n",
          n, dist.backend().c_str());
    }
    for (double bytes = 4096; bytes <= max_bytes; bytes *= 4) {
      torch::Tensor t = torch::ones({static_cast<int64_t>(bytes / 4)},
                                    torch::TensorOptions().device(device).dtype(torch::kFloat));
      dist.allreduce({t});  // warm-up (connections, buffers)
      // Every rank runs the same count: rank 0 decides it from its first timed batch.
      torch::Tensor reps = torch::zeros({1}, torch::kFloat64);
      const double t0 = synchronized_now_s(device);
      for (int i = 0; i < 3; ++i) dist.allreduce({t});
      const double per = (synchronized_now_s(device) - t0) / 3;
      if (dist.rank() == 0) reps[0] = std::max(1.0, seconds / std::max(per, 1e-6));
      dist.allreduce({reps}, ReduceOp::kMax);
      const int count = static_cast<int>(reps[0].item<double>());
      const double t1 = synchronized_now_s(device);
      for (int i = 0; i < count; ++i) dist.allreduce({t});
      const double s = (synchronized_now_s(device) - t1) / count;
      const double algbw = bytes / s / 1e9;
      if (dist.rank() == 0) {
        std::printf("| %.0f | %.3f | %.3f | %.3f |\n", bytes, s * 1e3, algbw,
                    algbw * 2.0 * (n - 1) / n);
      }
    }
    return 0;
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "allreduce_bench: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "allreduce_bench: failed: %s\n", e.what());
    return 1;
  }
}
