// A driver for the libFuzzer targets where libFuzzer is not available (g++ builds, CI): runs
// LLVMFuzzerTestOneInput on every seed file, then on random mutations of the seeds (bit flips,
// byte overwrites, insertions, deletions, truncations; a fixed-seed generator, so a run can be
// repeated) until -max_total_time seconds have passed. Not coverage-guided: it keeps the targets
// building, linking and running on every build; scripts/fuzz.sh does the real fuzzing (clang,
// libFuzzer, sanitizers). Usage: fuzz_X [-max_total_time=SECONDS] [-seed=N] DIR_OR_FILE...
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<uint8_t> read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void mutate(std::vector<uint8_t>& b, std::mt19937_64& rng) {
  const int edits = 1 + static_cast<int>(rng() % 8);
  for (int e = 0; e < edits; ++e) {
    const size_t at = b.empty() ? 0 : rng() % b.size();
    switch (rng() % 5) {
      case 0:  // flip a bit
        if (!b.empty()) b[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
        break;
      case 1:  // overwrite a byte, often with an edge value
        if (!b.empty()) b[at] = (rng() % 2) ? static_cast<uint8_t>(rng()) : uint8_t{0xff};
        break;
      case 2:  // insert a byte
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), static_cast<uint8_t>(rng()));
        break;
      case 3:  // delete a byte
        if (!b.empty()) b.erase(b.begin() + static_cast<std::ptrdiff_t>(at));
        break;
      default:  // truncate
        b.resize(at);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 1;
  uint64_t seed = 1;
  std::vector<std::vector<uint8_t>> seeds;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("-max_total_time=", 0) == 0) {
      seconds = std::atof(a.c_str() + 16);
    } else if (a.rfind("-seed=", 0) == 0) {
      seed = std::strtoull(a.c_str() + 6, nullptr, 10);
    } else if (a.rfind("-", 0) == 0) {
      continue;  // other libFuzzer flags mean nothing here
    } else if (std::filesystem::is_directory(a)) {
      for (const auto& e : std::filesystem::directory_iterator(a)) {
        if (e.is_regular_file()) seeds.push_back(read_bytes(e.path()));
      }
    } else if (std::filesystem::is_regular_file(a)) {
      seeds.push_back(read_bytes(a));
    } else {
      std::fprintf(stderr, "%s: '%s' is neither a file nor a folder\n", argv[0], a.c_str());
      return 2;
    }
  }
  if (seeds.empty()) seeds.emplace_back();
  for (const auto& s : seeds) LLVMFuzzerTestOneInput(s.data(), s.size());
  std::mt19937_64 rng(seed);
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int64_t runs = static_cast<int64_t>(seeds.size());
  while (std::chrono::steady_clock::now() < end) {
    std::vector<uint8_t> input = seeds[rng() % seeds.size()];
    mutate(input, rng);
    LLVMFuzzerTestOneInput(input.data(), input.size());
    ++runs;
  }
  std::printf("%s: %lld inputs (%zu seeds, then mutations), no crash\n", argv[0],
              static_cast<long long>(runs), seeds.size());
  return 0;
}
