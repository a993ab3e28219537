// The reference epoch sampler and the fixed-order validation batches. Works on byte offsets;
// batch_loader.h turns offsets into tensors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainbench {

// The corpus split: [0, train_end) trains, [valid_begin, valid_end) evaluates.
struct DataSplit {
  int64_t train_end = 0;
  int64_t valid_begin = 0;
  int64_t valid_end = 0;
};

struct SamplerOptions {
  int64_t train_end = 0;  // one past the last training byte
  int64_t seq_len = 256;
  int64_t batch_size = 100;  // per rank
  uint64_t seed = 0;
  // Data parallelism: every rank draws the same epoch plan and takes the elements rank,
  // rank + world_size, ... of each global batch of batch_size * world_size slices.
  int64_t world_size = 1;
  int64_t rank = 0;
};

// One epoch: a random offset in [0, seq_len), then consecutive non-overlapping slices of
// seq_len bytes from there, shuffled. Only full batches are served; the short tail is dropped.
struct EpochPlan {
  int64_t offset = 0;
  std::vector<int64_t> starts;  // slice start offsets in shuffled order
  int64_t num_batches() const;
  int64_t batch_size = 0;  // global: per-rank batch_size * world_size
};

class EpochSampler {
 public:
  explicit EpochSampler(const SamplerOptions& options);

  // The plan of a given epoch; a pure function of (seed, epoch).
  EpochPlan plan(int64_t epoch) const;
  // Start offsets of this rank's share of the next global batch (batch_size of them), moving
  // to the next epoch as needed.
  std::vector<int64_t> next_batch();

  int64_t epoch() const { return epoch_; }
  int64_t batch_in_epoch() const { return batch_; }
  const SamplerOptions& options() const { return options_; }

 private:
  SamplerOptions options_;
  int64_t epoch_ = 0;
  int64_t batch_ = 0;
  EpochPlan current_;
};

// Validation batches in fixed order: consecutive slices from valid_begin, grouped by
// batch_size (the last batch may be short). max_batches 0 keeps them all.
std::vector<std::vector<int64_t>> validation_batches(const DataSplit& split, int64_t seq_len,
                                                     int64_t batch_size, int64_t max_batches);

// A rank's share of each batch: elements rank, rank + world_size, ... (empty shares dropped).
std::vector<std::vector<int64_t>> rank_share(const std::vector<std::vector<int64_t>>& batches,
                                             int64_t rank, int64_t world_size);

// Splits a corpus of corpus_bytes, checking it can serve one training batch for any offset and
// at least one validation slice. Throws ConfigError naming `source` and the sizes needed.
DataSplit split_corpus(int64_t corpus_bytes, int64_t valid_bytes, int64_t seq_len,
                       int64_t batch_size, const std::string& source);

}  // namespace trainbench
