// The epoch sampler's invariants and the fixed-order validation batches.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "trainbench/data/batch_loader.h"
#include "trainbench/data/sampler.h"

namespace trainbench {
namespace {

SamplerOptions small_options() {
  SamplerOptions o;
  o.train_end = 10'000;
  o.seq_len = 64;
  o.batch_size = 8;
  o.seed = 7;
  return o;
}

TEST(Sampler, EpochSlicesAreWholeDisjointAndCoverTheTrainingRange) {
  const SamplerOptions o = small_options();
  const EpochSampler sampler(o);
  for (int64_t epoch = 0; epoch < 20; ++epoch) {
    const EpochPlan p = sampler.plan(epoch);
    ASSERT_GE(p.offset, 0);
    ASSERT_LT(p.offset, o.seq_len);
    std::vector<int64_t> sorted = p.starts;
    std::sort(sorted.begin(), sorted.end());
    // Consecutive from the offset: disjoint, each of seq_len bytes, inside the training range.
    ASSERT_EQ(static_cast<int64_t>(sorted.size()), (o.train_end - p.offset) / o.seq_len);
    for (size_t i = 0; i < sorted.size(); ++i) {
      ASSERT_EQ(sorted[i], p.offset + static_cast<int64_t>(i) * o.seq_len);
      ASSERT_LE(sorted[i] + o.seq_len, o.train_end);
    }
    // What is left uncovered is only the offset head and a tail shorter than one slice.
    const int64_t tail = o.train_end - (sorted.back() + o.seq_len);
    ASSERT_LT(tail, o.seq_len);
    EXPECT_EQ(p.num_batches(), static_cast<int64_t>(sorted.size()) / o.batch_size);
  }
}

TEST(Sampler, OrderDiffersBetweenEpochsAndRepeatsForEqualSeeds) {
  const EpochSampler a(small_options()), b(small_options());
  SamplerOptions other = small_options();
  other.seed = 8;
  const EpochSampler c(other);
  EXPECT_EQ(a.plan(3).starts, b.plan(3).starts);
  EXPECT_NE(a.plan(0).starts, a.plan(1).starts);
  EXPECT_NE(a.plan(0).starts, c.plan(0).starts);
  std::set<int64_t> offsets;
  for (int e = 0; e < 50; ++e) offsets.insert(a.plan(e).offset);
  EXPECT_GT(offsets.size(), 10u);  // the offset really varies
}

TEST(Sampler, NextBatchServesFullBatchesAndMovesThroughEpochs) {
  EpochSampler s(small_options());
  const int64_t first_epoch_batches = s.plan(0).num_batches();
  std::set<int64_t> seen;
  for (int64_t i = 0; i < first_epoch_batches; ++i) {
    const auto batch = s.next_batch();
    ASSERT_EQ(batch.size(), 8u);
    for (int64_t start : batch) EXPECT_TRUE(seen.insert(start).second) << "slice served twice";
  }
  EXPECT_EQ(s.epoch(), 0);
  s.next_batch();
  EXPECT_EQ(s.epoch(), 1);
  EXPECT_EQ(s.batch_in_epoch(), 1);
}

TEST(Sampler, NoValidationByteEverReachesATrainingBatch) {
  const DataSplit split = split_corpus(20'000, 1'000, 64, 8, "x");
  SamplerOptions o = small_options();
  o.train_end = split.train_end;
  EpochSampler s(o);
  for (int i = 0; i < 500; ++i) {
    for (int64_t start : s.next_batch()) ASSERT_LE(start + o.seq_len, split.valid_begin);
  }
  const auto valid = validation_batches(split, 64, 8, 0);
  ASSERT_EQ(valid.size(), 2u);  // 15 slices: 8 + 7
  EXPECT_EQ(valid[0][0], split.valid_begin);
  EXPECT_EQ(valid[1].size(), 7u);
  EXPECT_LE(valid[1].back() + 64, split.valid_end);
  EXPECT_EQ(validation_batches(split, 64, 8, 1).size(), 1u);
}

TEST(Sampler, BatchTensorIsSeqByBatchInt64OfTheBytes) {
  std::vector<uint8_t> bytes(1000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i % 251);
  auto owner = std::make_shared<std::vector<uint8_t>>(bytes);
  const ByteCorpus corpus(owner, owner->data(), 1000, "test");
  const torch::Tensor t = make_batch(corpus, {0, 300, 900}, 50, false);
  ASSERT_EQ(t.sizes(), (std::vector<int64_t>{50, 3}));
  EXPECT_EQ(t.scalar_type(), torch::kInt64);
  EXPECT_EQ(t[0][1].item<int64_t>(), 300 % 251);
  EXPECT_EQ(t[49][2].item<int64_t>(), 949 % 251);
  EXPECT_THROW(make_batch(corpus, {960}, 50, false), c10::Error);  // runs past the end
}

TEST(Sampler, LoaderServesTheSamplersBatchesInOrder) {
  const ByteCorpus corpus = embedded_corpus();
  SamplerOptions o = small_options();
  EpochSampler reference(o);
  BatchLoader loader(corpus, EpochSampler(o), false, 3);
  for (int i = 0; i < 10; ++i) {
    const torch::Tensor expected = make_batch(corpus, reference.next_batch(), o.seq_len, false);
    EXPECT_TRUE(torch::equal(loader.next(), expected)) << "batch " << i;
  }
}

}  // namespace
}  // namespace trainbench
