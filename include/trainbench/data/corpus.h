// The byte corpus: enwik9 as a memory-mapped raw file, read straight out of its .zip, or the
// embedded generated corpus used when no --data is given. Vocabulary: the 256 byte values.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace trainbench {

// Read-only bytes plus whatever keeps them alive (a mapping or a buffer). Cheap to copy.
class ByteCorpus {
 public:
  ByteCorpus() = default;
  ByteCorpus(std::shared_ptr<const void> owner, const uint8_t* data, int64_t size,
             std::string source);

  const uint8_t* data() const { return data_; }
  int64_t size() const { return size_; }
  // Where the bytes came from: a path, "path!member" for a zip, or "embedded".
  const std::string& source() const { return source_; }

 private:
  std::shared_ptr<const void> owner_;
  const uint8_t* data_ = nullptr;
  int64_t size_ = 0;
  std::string source_;
};

// Opens --data: a .zip (detected by its signature or its extension) with exactly one member is
// inflated into memory; any other regular file is memory-mapped. Missing, empty, directory,
// corrupt or multi-member zip: ConfigError naming the path and what is allowed.
ByteCorpus open_corpus(const std::string& path);

// The embedded default: deterministic pseudo-wiki text (XML-like pages, Zipf-distributed
// words with preferred successors), so a small model visibly learns. Same bytes on every run.
ByteCorpus embedded_corpus();
inline constexpr int64_t kEmbeddedCorpusBytes = 6'000'000;

// Writes the embedded corpus to `path` (temp file + rename). A path in a missing folder:
// ConfigError naming --export_corpus.
void export_embedded_corpus(const std::string& path);

// Inflates the single member of a zip archive held in memory. `name` is used in messages.
// Supports stored and deflate members, checks the CRC-32 and sizes. Throws ConfigError.
std::vector<uint8_t> unzip_single_member(const uint8_t* zip, int64_t zip_size,
                                         const std::string& name, std::string* member_name);

}  // namespace trainbench
