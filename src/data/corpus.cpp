// Corpus sources: mmap for raw files, in-memory inflate for zips, and the generated default.
#include "trainbench/data/corpus.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <random>

#include "trainbench/core/atomic_file.h"
#include "trainbench/core/errors.h"

namespace trainbench {

ByteCorpus::ByteCorpus(std::shared_ptr<const void> owner, const uint8_t* data, int64_t size,
                       std::string source)
    : owner_(std::move(owner)), data_(data), size_(size), source_(std::move(source)) {}

namespace {

// Owns one read-only mapping of a whole file.
struct Mapping {
  void* addr = MAP_FAILED;
  size_t length = 0;
  ~Mapping() {
    if (addr != MAP_FAILED) munmap(addr, length);
  }
};

std::shared_ptr<Mapping> map_file_(const std::string& path, int64_t size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw ConfigError("--data: cannot open '" + path + "': " + std::strerror(errno) +
                      "; allowed: a readable raw file or .zip");
  }
  auto mapping = std::make_shared<Mapping>();
  mapping->length = static_cast<size_t>(size);
  mapping->addr = mmap(nullptr, mapping->length, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  ::close(fd);
  if (mapping->addr == MAP_FAILED) {
    throw ConfigError("--data: cannot map '" + path + "': " + std::strerror(map_errno));
  }
  // The sampler reads all over the file; tell the kernel not to expect sequential access.
  madvise(mapping->addr, mapping->length, MADV_RANDOM);
  return mapping;
}

bool ends_with_(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

ByteCorpus open_corpus(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw ConfigError("--data: '" + path + "' does not exist (" + std::strerror(errno) +
                      "); give a raw file or a .zip, or run scripts/get_enwik9.sh");
  }
  if (S_ISDIR(st.st_mode)) {
    throw ConfigError("--data: '" + path +
                      "' is a directory; allowed: a raw file (e.g. data/enwik9) or a .zip");
  }
  if (!S_ISREG(st.st_mode)) {
    throw ConfigError("--data: '" + path + "' is not a regular file; allowed: a raw file or .zip");
  }
  if (st.st_size == 0) {
    throw ConfigError("--data: '" + path + "' is empty (0 bytes); allowed: a non-empty corpus");
  }
  auto mapping = map_file_(path, st.st_size);
  const auto* bytes = static_cast<const uint8_t*>(mapping->addr);
  const bool zip_magic = st.st_size >= 4 && std::memcmp(bytes, "PK\x03\x04", 4) == 0;
  if (!zip_magic && !ends_with_(path, ".zip")) {
    return ByteCorpus(mapping, bytes, st.st_size, path);
  }
  std::string member;
  auto buffer =
      std::make_shared<std::vector<uint8_t>>(unzip_single_member(bytes, st.st_size, path, &member));
  if (buffer->empty()) {
    throw ConfigError("--data: the member '" + member + "' of '" + path +
                      "' is empty; allowed: a zip with one non-empty member");
  }
  return ByteCorpus(buffer, buffer->data(), static_cast<int64_t>(buffer->size()),
                    path + "!" + member);
}

namespace {

// Deterministic generator state: std::mt19937_64's output sequence is fixed by the standard,
// unlike the standard distributions, so all mapping to ranges is done here.
struct TextGen {
  std::mt19937_64 rng{20260101};
  uint64_t below(uint64_t n) { return rng() % n; }
  // Zipf-like rank in [0, n): small ranks are much more frequent.
  uint64_t zipf(uint64_t n) {
    const double u = (rng() >> 11) * (1.0 / 9007199254740992.0);
    return static_cast<uint64_t>(static_cast<double>(n) * u * u * u) % n;
  }
};

std::vector<std::string> make_words_(TextGen& g, int count) {
  static const std::array<const char*, 24> syllables = {
      "the", "an", "in", "er", "on", "re", "at", "en", "ti", "es",  "or", "te",
      "al",  "de", "ra", "co", "ma", "li", "st", "ve", "ne", "pro", "ic", "ly"};
  std::vector<std::string> words;
  for (int i = 0; i < count; ++i) {
    std::string w;
    const int n = 1 + static_cast<int>(g.below(3)) + (i > 200 ? 1 : 0);
    for (int s = 0; s < n; ++s) w += syllables[g.below(syllables.size())];
    words.push_back(w);
  }
  return words;
}

}  // namespace

ByteCorpus embedded_corpus() {
  static const std::shared_ptr<const std::vector<uint8_t>> bytes = [] {
    TextGen g;
    const int kWords = 3000;
    const std::vector<std::string> words = make_words_(g, kWords);
    // Each word prefers a few successors; this gives the model bigram structure to learn.
    std::vector<std::array<int, 4>> next(kWords);
    for (auto& n : next)
      for (int& w : n) w = static_cast<int>(g.zipf(kWords));
    auto out = std::make_shared<std::vector<uint8_t>>();
    out->reserve(kEmbeddedCorpusBytes + 4096);
    auto put = [&](const std::string& s) { out->insert(out->end(), s.begin(), s.end()); };
    int64_t page = 0;
    while (static_cast<int64_t>(out->size()) < kEmbeddedCorpusBytes) {
      const int t1 = static_cast<int>(g.zipf(kWords)), t2 = next[t1][0];
      put("  <page>\n    <title>" + words[t1] + " " + words[t2] + "</title>\n    <id>" +
          std::to_string(++page) + "</id>\n    <text>");
      const int sentences = 3 + static_cast<int>(g.below(8));
      for (int s = 0; s < sentences; ++s) {
        int w = static_cast<int>(g.zipf(kWords));
        const int len = 4 + static_cast<int>(g.below(12));
        for (int k = 0; k < len; ++k) {
          std::string word = words[w];
          if (k == 0) word[0] = static_cast<char>(word[0] - 'a' + 'A');
          if (g.below(17) == 0) word = "[[" + word + "]]";
          put(word);
          put(k + 1 == len ? ". " : (g.below(11) == 0 ? ", " : " "));
          w = g.below(4) == 0 ? static_cast<int>(g.zipf(kWords)) : next[w][g.below(4)];
        }
      }
      put("</text>\n  </page>\n");
    }
    out->resize(kEmbeddedCorpusBytes);
    return out;
  }();
  return ByteCorpus(bytes, bytes->data(), static_cast<int64_t>(bytes->size()), "embedded");
}

void export_embedded_corpus(const std::string& path) {
  const ByteCorpus c = embedded_corpus();
  const std::string_view bytes(reinterpret_cast<const char*>(c.data()),
                               static_cast<size_t>(c.size()));
  try {
    write_file_atomic(path, [&](const std::string& tmp) { return write_bytes(tmp, bytes); });
  } catch (const RunError& e) {
    throw ConfigError("--export_corpus: " + std::string(e.what()) +
                      "; allowed: a file path in an existing, writable folder");
  }
}

}  // namespace trainbench
