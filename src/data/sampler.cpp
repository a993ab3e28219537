// Epoch plans (offset, slices, shuffle), validation batches and the corpus split.
#include "trainbench/data/sampler.h"

#include <algorithm>
#include <random>

#include "trainbench/core/errors.h"

namespace trainbench {

int64_t EpochPlan::num_batches() const {
  return batch_size > 0 ? static_cast<int64_t>(starts.size()) / batch_size : 0;
}

EpochSampler::EpochSampler(const SamplerOptions& options) : options_(options) {
  current_ = plan(0);
}

EpochPlan EpochSampler::plan(int64_t epoch) const {
  const SamplerOptions& o = options_;
  // mt19937_64's sequence is fixed by the standard; ranges are mapped by hand (not with
  // std::uniform_int_distribution, whose output differs between standard libraries).
  std::seed_seq seq{static_cast<uint64_t>(o.seed), static_cast<uint64_t>(epoch), uint64_t{0x7b}};
  std::mt19937_64 rng(seq);
  EpochPlan p;
  p.batch_size = o.batch_size * o.world_size;
  p.offset = static_cast<int64_t>(rng() % static_cast<uint64_t>(o.seq_len));
  const int64_t first = p.offset;  // training bytes are [0, train_end)
  const int64_t count = (o.train_end - first) / o.seq_len;
  p.starts.resize(static_cast<size_t>(std::max<int64_t>(count, 0)));
  for (int64_t i = 0; i < count; ++i) p.starts[i] = first + i * o.seq_len;
  for (int64_t i = count - 1; i > 0; --i) {  // Fisher-Yates
    const int64_t j = static_cast<int64_t>(rng() % static_cast<uint64_t>(i + 1));
    std::swap(p.starts[i], p.starts[j]);
  }
  return p;
}

std::vector<int64_t> EpochSampler::next_batch() {
  while (batch_ >= current_.num_batches()) {
    ++epoch_;
    batch_ = 0;
    current_ = plan(epoch_);
  }
  const size_t first = static_cast<size_t>(batch_ * current_.batch_size + options_.rank);
  ++batch_;
  std::vector<int64_t> out(static_cast<size_t>(options_.batch_size));
  for (size_t j = 0; j < out.size(); ++j) {
    out[j] = current_.starts[first + j * static_cast<size_t>(options_.world_size)];
  }
  return out;
}

std::vector<std::vector<int64_t>> validation_batches(const DataSplit& split, int64_t seq_len,
                                                     int64_t batch_size, int64_t max_batches) {
  std::vector<std::vector<int64_t>> batches;
  std::vector<int64_t> batch;
  for (int64_t s = split.valid_begin; s + seq_len <= split.valid_end; s += seq_len) {
    batch.push_back(s);
    if (static_cast<int64_t>(batch.size()) == batch_size) {
      batches.push_back(std::move(batch));
      batch.clear();
      if (max_batches > 0 && static_cast<int64_t>(batches.size()) == max_batches) return batches;
    }
  }
  if (!batch.empty()) batches.push_back(std::move(batch));
  return batches;
}

std::vector<std::vector<int64_t>> rank_share(const std::vector<std::vector<int64_t>>& batches,
                                             int64_t rank, int64_t world_size) {
  std::vector<std::vector<int64_t>> out;
  for (const auto& b : batches) {
    std::vector<int64_t> share;
    for (size_t j = static_cast<size_t>(rank); j < b.size(); j += static_cast<size_t>(world_size)) {
      share.push_back(b[j]);
    }
    if (!share.empty()) out.push_back(std::move(share));
  }
  return out;
}

DataSplit split_corpus(int64_t corpus_bytes, int64_t valid_bytes, int64_t seq_len,
                       int64_t batch_size, const std::string& source) {
  // Any offset in [0, seq_len) must still leave batch_size whole slices.
  const int64_t train_needed = batch_size * seq_len + seq_len - 1;
  if (valid_bytes < seq_len) {
    throw ConfigError("--data: '" + source + "' leaves a validation range of " +
                      std::to_string(valid_bytes) + " bytes, shorter than one sequence (" +
                      std::to_string(seq_len) +
                      "); use a larger corpus or --valid_bytes >= " + std::to_string(seq_len));
  }
  if (corpus_bytes - valid_bytes < train_needed) {
    throw ConfigError("--data: '" + source + "' has " + std::to_string(corpus_bytes) +
                      " bytes; needs at least " + std::to_string(train_needed + valid_bytes) +
                      " (one batch of " + std::to_string(batch_size) + "x" +
                      std::to_string(seq_len) + " bytes plus " + std::to_string(seq_len - 1) +
                      " for the offset, plus " + std::to_string(valid_bytes) +
                      " held out); use a larger corpus or smaller --batch_size/--seq_len");
  }
  DataSplit split;
  split.train_end = corpus_bytes - valid_bytes;
  split.valid_begin = split.train_end;
  split.valid_end = corpus_bytes;
  return split;
}

}  // namespace trainbench
