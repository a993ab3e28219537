// Batch assembly and the one-producer prefetch queue.
#include "trainbench/data/batch_loader.h"

namespace trainbench {

torch::Tensor make_batch(const ByteCorpus& corpus, const std::vector<int64_t>& starts,
                         int64_t seq_len, bool pin_memory) {
  const int64_t B = static_cast<int64_t>(starts.size());
  auto opts = torch::TensorOptions().dtype(torch::kInt64).pinned_memory(pin_memory);
  torch::Tensor out = torch::empty({seq_len, B}, opts);  // [S, B]
  int64_t* o = out.data_ptr<int64_t>();
  const uint8_t* bytes = corpus.data();
  for (int64_t b = 0; b < B; ++b) {
    TORCH_CHECK(starts[b] >= 0 && starts[b] + seq_len <= corpus.size(), "slice at ", starts[b],
                " runs past the corpus end (", corpus.size(), " bytes)");
    const uint8_t* src = bytes + starts[b];
    for (int64_t t = 0; t < seq_len; ++t) o[t * B + b] = src[t];
  }
  return out;
}

BatchLoader::BatchLoader(ByteCorpus corpus, EpochSampler sampler, bool pin_memory, int depth)
    : corpus_(std::move(corpus)),
      sampler_(std::move(sampler)),
      pin_memory_(pin_memory),
      depth_(static_cast<size_t>(std::max(depth, 1))) {
  thread_ = std::thread([this] { produce_(); });
}

BatchLoader::~BatchLoader() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void BatchLoader::produce_() {
  try {
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [this] { return stop_ || ready_.size() < depth_; });
        if (stop_) return;
      }
      torch::Tensor batch =
          make_batch(corpus_, sampler_.next_batch(), sampler_.options().seq_len, pin_memory_);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ready_.push_back(std::move(batch));
      }
      cv_.notify_all();
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = std::current_exception();
    cv_.notify_all();
  }
}

torch::Tensor BatchLoader::next() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [this] { return !ready_.empty() || error_; });
  if (ready_.empty()) std::rethrow_exception(error_);
  torch::Tensor batch = std::move(ready_.front());
  ready_.pop_front();
  lock.unlock();
  cv_.notify_all();
  return batch;
}

}  // namespace trainbench
