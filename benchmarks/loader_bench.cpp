// loader_bench: how fast the data path serves training batches (open/inflate time, batches/s
// assembled in the foreground and through the background BatchLoader).
// Usage: loader_bench [--data PATH] [--batch_size 100] [--seq_len 256] [--seconds 3]
#include <chrono>
#include <cstdio>
#include <string>

#include <cxxopts.hpp>

#include "trainbench/core/config.h"
#include "trainbench/data/batch_loader.h"
#include "trainbench/data/corpus.h"
#include "trainbench/data/sampler.h"

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace trainbench;
  cxxopts::Options options("loader_bench", "batches/s of the trainbench data path");
  options.add_options()("data", "raw file or .zip (empty: embedded corpus)",
                        cxxopts::value<std::string>()->default_value(""))(
      "batch_size", "sequences per batch", cxxopts::value<int64_t>()->default_value("100"))(
      "seq_len", "bytes per sequence", cxxopts::value<int64_t>()->default_value("256"))(
      "seconds", "time per measurement", cxxopts::value<double>()->default_value("3"))("h,help",
                                                                                       "help");
  try {
    const auto args = options.parse(argc, argv);
    if (args.count("help")) {
      std::printf("%s", options.help().c_str());
      return 0;
    }
    const std::string path = args["data"].as<std::string>();
    const int64_t B = args["batch_size"].as<int64_t>(), S = args["seq_len"].as<int64_t>();
    const double seconds = args["seconds"].as<double>();
    const double t_open = now_s();
    const ByteCorpus corpus = path.empty() ? embedded_corpus() : open_corpus(path);
    const double open_s = now_s() - t_open;
    const DataSplit split = split_corpus(
        corpus.size(), std::min<int64_t>(5'000'000, corpus.size() / 20), S, B, corpus.source());
    SamplerOptions o;
    o.train_end = split.train_end;
    o.seq_len = S;
    o.batch_size = B;
    EpochSampler sampler(o);
    int64_t n = 0;
    const double t0 = now_s();
    while (now_s() - t0 < seconds) {
      make_batch(corpus, sampler.next_batch(), S, false);
      ++n;
    }
    const double direct = n / (now_s() - t0);
    BatchLoader loader(corpus, EpochSampler(o), false);
    n = 0;
    const double t1 = now_s();
    while (now_s() - t1 < seconds) {
      loader.next();
      ++n;
    }
    const double threaded = n / (now_s() - t1);
    std::printf(
        "| source | bytes | open s | batch | batches/s (make_batch) | batches/s (loader) |\n"
        "|---|---|---|---|---|---|\n| %s | %lld | %.2f | %lldx%lld | %.0f | %.0f |\n",
        corpus.source().c_str(), static_cast<long long>(corpus.size()), open_s,
        static_cast<long long>(B), static_cast<long long>(S), direct, threaded);
    return 0;
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "loader_bench: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loader_bench: error: %s\n", e.what());
    return 2;
  }
}
