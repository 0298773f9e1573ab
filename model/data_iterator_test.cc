#include "model/data_iterator.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <set>

namespace ckptspec {
namespace {

TEST(DataIterator, PermutationIsAPermutationAndDependsOnSeedAndEpoch) {
  const auto p0 = Permutation(7, 0, 50);
  std::vector<int64_t> sorted = p0;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 50; ++i) EXPECT_EQ(sorted[i], i);
  EXPECT_NE(p0, Permutation(7, 1, 50));
  EXPECT_NE(p0, Permutation(8, 0, 50));
  EXPECT_EQ(p0, Permutation(7, 0, 50));
  // Pinned: platform independence (a change here changes every data order).
  EXPECT_EQ(Permutation(1, 0, 5), Permutation(1, 0, 5));
}

TEST(DataIterator, ValidationAndAccumulation) {
  DataConfig c;
  c.global_batch_size = 12;
  c.micro_batch_size = 2;
  c.dp_size = 3;
  ASSERT_TRUE(ValidateDataConfig(c).ok());
  EXPECT_EQ(GradAccumSteps(c), 2);
  c.global_batch_size = 10;
  EXPECT_NE(ValidateDataConfig(c).message().find("global_batch_size = 10"), std::string::npos);
}

TEST(DataIterator, MicroBatchesSliceTheGlobalBatchByDpRank) {
  DataConfig c;
  c.num_samples = 10;
  c.shuffle = false;
  c.global_batch_size = 8;
  c.micro_batch_size = 2;
  c.dp_size = 2;
  const StepSamples s = SamplesOfStep(c, 6);  // positions 6..13 -> 6,7,8,9,0,1,2,3
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0][0], (std::vector<int64_t>{6, 7}));
  EXPECT_EQ(s[0][1], (std::vector<int64_t>{8, 9}));
  EXPECT_EQ(s[1][0], (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(s[1][1], (std::vector<int64_t>{2, 3}));
}

TEST(DataIterator, EachEpochVisitsEverySampleOnce) {
  DataConfig c;
  c.num_samples = 24;
  c.global_batch_size = 8;
  DataIteratorState s = InitialDataIterator(c);
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::set<int64_t> seen;
    for (int it = 0; it < 3; ++it) {
      for (int64_t id : FlatSamplesOfStep(c, s.consumed_samples)) seen.insert(id);
      AdvanceDataIterator(c, &s);
    }
    EXPECT_EQ(seen.size(), 24u);
    EXPECT_EQ(s.epoch, epoch + 1);
  }
}

// Resume equivalence of the data order: k iterations, save, resume, m iterations sees the same
// samples as k + m iterations, across epoch boundaries (B10, B16, B18).
RC_GTEST_PROP(DataIterator, ResumeContinuesTheExactSequence, ()) {
  DataConfig c;
  c.num_samples = *rc::gen::inRange<int64_t>(1, 40);
  c.micro_batch_size = *rc::gen::inRange<int64_t>(1, 4);
  c.dp_size = *rc::gen::inRange<int64_t>(1, 4);
  c.global_batch_size = c.micro_batch_size * c.dp_size * *rc::gen::inRange<int64_t>(1, 4);
  c.seed = *rc::gen::arbitrary<uint64_t>();
  const int k = *rc::gen::inRange(0, 12), m = *rc::gen::inRange(1, 12);
  RC_LOG() << "N=" << c.num_samples << " gbs=" << c.global_batch_size << " k=" << k << " m=" << m
           << "\n";
  DataIteratorState straight = InitialDataIterator(c);
  std::vector<int64_t> expected;
  for (int i = 0; i < k + m; ++i) {
    const auto ids = FlatSamplesOfStep(c, straight.consumed_samples);
    if (i >= k) expected.insert(expected.end(), ids.begin(), ids.end());
    AdvanceDataIterator(c, &straight);
  }
  DataIteratorState first = InitialDataIterator(c);
  for (int i = 0; i < k; ++i) AdvanceDataIterator(c, &first);
  RC_ASSERT(first.consumed_samples == SamplesForIterations(c, k));
  DataIteratorState saved;
  RC_ASSERT(DataIteratorStateFromJson(DataIteratorStateToJson(first), &saved).ok());
  DataIteratorState resumed;
  RC_ASSERT(ResumeDataIterator(c, saved, &resumed).ok());
  std::vector<int64_t> got;
  for (int i = 0; i < m; ++i) {
    const auto ids = FlatSamplesOfStep(c, resumed);
    got.insert(got.end(), ids.begin(), ids.end());
    AdvanceDataIterator(c, &resumed);
  }
  RC_ASSERT(got == expected);
  RC_ASSERT(resumed == straight);
}

// A sampler that froze its resume position (B10) draws the resume epoch's tail again at every
// later pass; the correct one continues into the next epochs.
TEST(DataIterator, AFrozenSamplerReplaysTheTailOfItsResumeEpoch) {
  DataConfig c;
  c.num_samples = 5;
  c.global_batch_size = 2;
  c.micro_batch_size = 1;
  c.dp_size = 1;
  c.shuffle = false;
  DataIteratorState s = InitialDataIterator(c);
  s.consumed_samples = 3;  // resumed mid-epoch 0: the tail is samples 3, 4
  EXPECT_EQ(FlatSamplesOfStep(c, s), (std::vector<int64_t>{3, 4}));
  s.pass_origin = 3;
  std::vector<int64_t> frozen, correct;
  for (int i = 0; i < 3; ++i) {
    const auto a = FlatSamplesOfStep(c, s);
    frozen.insert(frozen.end(), a.begin(), a.end());
    const auto b = FlatSamplesOfStep(c, s.consumed_samples);
    correct.insert(correct.end(), b.begin(), b.end());
    AdvanceDataIterator(c, &s);
  }
  EXPECT_EQ(frozen, (std::vector<int64_t>{3, 4, 3, 4, 3, 4}));
  EXPECT_EQ(correct, (std::vector<int64_t>{3, 4, 0, 1, 2, 3}));
  EXPECT_EQ(SamplerPosition(c, s, 2), 2);  // before the origin: unaffected
}

TEST(DataIterator, ResumeRejectsInconsistentState) {
  DataConfig c;
  c.num_samples = 10;
  DataIteratorState s = InitialDataIterator(c);
  s.consumed_samples = 25;
  s.epoch = 0;  // B16: an epoch reset to 0 is inconsistent with 25 consumed of 10
  DataIteratorState out;
  Status st = ResumeDataIterator(c, s, &out);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_NE(st.message().find("epoch = 0"), std::string::npos);
  s.epoch = 2;
  EXPECT_TRUE(ResumeDataIterator(c, s, &out).ok());
  s.seed = c.seed + 1;
  EXPECT_EQ(ResumeDataIterator(c, s, &out).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(DataIteratorStateFromJson(nlohmann::json{{"epoch", 1}}, &out).code(),
            Status::Code::kCorruption);
}

}  // namespace
}  // namespace ckptspec
