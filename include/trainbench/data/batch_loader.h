// Turns slice offsets into [seq, batch] int64 tensors, and prepares the next training batches
// on a background thread so the trainer never waits for data.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include <torch/types.h>

#include "trainbench/data/corpus.h"
#include "trainbench/data/sampler.h"

namespace trainbench {

// bytes[starts[b] + t] → out[t][b] as int64; pinned host memory when pin_memory (for CUDA).
torch::Tensor make_batch(const ByteCorpus& corpus, const std::vector<int64_t>& starts,
                         int64_t seq_len, bool pin_memory);

class BatchLoader {
 public:
  // Starts the producer thread; `depth` batches are kept ready.
  BatchLoader(ByteCorpus corpus, EpochSampler sampler, bool pin_memory, int depth = 2);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // The next training batch [seq, batch] (blocks only if the producer is behind). Rethrows
  // an error raised on the producer thread.
  torch::Tensor next();

 private:
  void produce_();

  ByteCorpus corpus_;
  EpochSampler sampler_;
  bool pin_memory_;
  size_t depth_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<torch::Tensor> ready_;
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace trainbench
