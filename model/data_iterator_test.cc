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
// Both samplers; the per-DP-rank loaders travel as the checkpoint stores them, one object per DP
// rank (DataIteratorRankToJson), and are reassembled by DP rank.
RC_GTEST_PROP(DataIterator, ResumeContinuesTheExactSequence, ()) {
  DataConfig c;
  c.sampler = *rc::gen::element(DataSampler::kGlobal, DataSampler::kPerRank);
  c.micro_batch_size = *rc::gen::inRange<int64_t>(1, 4);
  c.dp_size = *rc::gen::inRange<int64_t>(1, 4);
  c.num_samples = *rc::gen::inRange<int64_t>(c.dp_size, 40);
  c.global_batch_size = c.micro_batch_size * c.dp_size * *rc::gen::inRange<int64_t>(1, 4);
  c.seed = *rc::gen::arbitrary<uint64_t>();
  c.shuffle = *rc::gen::arbitrary<bool>();
  const int k = *rc::gen::inRange(0, 12), m = *rc::gen::inRange(1, 12);
  RC_LOG() << DataSamplerName(c.sampler) << " N=" << c.num_samples << " gbs=" << c.global_batch_size
           << " mbs=" << c.micro_batch_size << " dp=" << c.dp_size << " k=" << k << " m=" << m
           << "\n";
  DataIteratorState straight = InitialDataIterator(c);
  std::vector<int64_t> expected;
  for (int i = 0; i < k + m; ++i) {
    const auto ids = FlatSamplesOfStep(c, straight);
    if (i >= k) expected.insert(expected.end(), ids.begin(), ids.end());
    AdvanceDataIterator(c, &straight);
  }
  DataIteratorState first = InitialDataIterator(c);
  for (int i = 0; i < k; ++i) AdvanceDataIterator(c, &first);
  RC_ASSERT(first.consumed_samples == SamplesForIterations(c, k));
  DataIteratorState saved;
  RC_ASSERT(DataIteratorStateFromJson(DataIteratorStateToJson(first), &saved).ok());
  RC_ASSERT(saved == first);
  DataIteratorState from_objects;
  for (int64_t r = 0; r < c.dp_size; ++r) {
    int64_t dp_size = 0;
    RankLoaderState loader;
    RC_ASSERT(
        DataIteratorRankFromJson(DataIteratorRankToJson(first, r), &from_objects, &dp_size, &loader)
            .ok());
    RC_ASSERT(dp_size == static_cast<int64_t>(first.loaders.size()));
    if (dp_size > 0) saved.loaders[static_cast<size_t>(r)] = loader;
  }
  from_objects.loaders = saved.loaders;
  RC_ASSERT(from_objects == first);
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
  const Status missing = DataIteratorStateFromJson(nlohmann::json{{"epoch", 1}}, &out);
  EXPECT_EQ(missing.code(), Status::Code::kCorruption);
  EXPECT_EQ(missing.message(), "data_iterator: missing required member \"consumed_samples\"");
}

// Per-DP-rank loaders: rank r reads only shard r (ids = r mod dp), each shard pass draws every id
// of the shard once, and the loaders' epochs differ where the shard sizes do.
TEST(DataIterator, PerRankLoadersReadTheirOwnShardOncePerShardEpoch) {
  DataConfig c;
  c.sampler = DataSampler::kPerRank;
  c.num_samples = 10;  // shards of 4, 3, 3
  c.dp_size = 3;
  c.micro_batch_size = 1;
  c.global_batch_size = 3;  // one sample per rank and iteration
  ASSERT_TRUE(ValidateDataConfig(c).ok());
  EXPECT_EQ(ShardSize(10, 0, 3), 4);
  EXPECT_EQ(ShardSize(10, 2, 3), 3);
  DataIteratorState s = InitialDataIterator(c);
  ASSERT_EQ(s.loaders.size(), 3u);
  std::vector<std::vector<int64_t>> per_rank(3);
  for (int it = 0; it < 12; ++it) {
    const std::vector<int64_t> step = FlatSamplesOfStep(c, s);
    ASSERT_EQ(step.size(), 3u);
    for (size_t r = 0; r < 3; ++r) per_rank[r].push_back(step[r]);
    AdvanceDataIterator(c, &s);
  }
  for (int64_t r = 0; r < 3; ++r) {
    const int64_t n = ShardSize(10, r, 3);
    for (int64_t pass = 0; pass * n + n <= 12; ++pass) {
      std::set<int64_t> seen(per_rank[r].begin() + pass * n, per_rank[r].begin() + pass * n + n);
      EXPECT_EQ(static_cast<int64_t>(seen.size()), n) << "rank " << r << " pass " << pass;
      for (int64_t id : seen) EXPECT_EQ(id % 3, r);
    }
  }
  EXPECT_EQ(s.consumed_samples, 36);
  EXPECT_EQ(s.loaders[0].epoch, 3);  // 12 of a shard of 4
  EXPECT_EQ(s.loaders[1].epoch, 4);  // 12 of a shard of 3
  EXPECT_NE(DataIteratorRankToJson(s, 0), DataIteratorRankToJson(s, 1));
  c.num_samples = 2;
  EXPECT_NE(ValidateDataConfig(c).message().find("shard empty"), std::string::npos);
}

// L9 for per-DP-rank loaders: only the saved DP size resumes (the refusal names both sizes); the
// sampler kinds must agree; a loader that is not its rank's own, or out of step, is corruption.
TEST(DataIterator, PerRankResumeNeedsTheSavedDpSizeAndEachRanksOwnLoader) {
  DataConfig c;
  c.sampler = DataSampler::kPerRank;
  c.num_samples = 12;
  c.dp_size = 4;
  c.micro_batch_size = 1;
  c.global_batch_size = 4;
  DataIteratorState s = InitialDataIterator(c);
  for (int i = 0; i < 5; ++i) AdvanceDataIterator(c, &s);
  DataIteratorState out;
  ASSERT_TRUE(ResumeDataIterator(c, s, &out).ok());
  EXPECT_EQ(out, s);

  DataConfig smaller = c;
  smaller.dp_size = 2;
  smaller.global_batch_size = 2;
  Status st = ResumeDataIterator(smaller, s, &out);
  EXPECT_EQ(st.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(st.message().find("DP size 4; this run has DP size 2"), std::string::npos)
      << st.ToString();

  DataConfig global = c;
  global.sampler = DataSampler::kGlobal;
  st = ResumeDataIterator(global, s, &out);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("per_rank sampler's state"), std::string::npos) << st.ToString();
  EXPECT_EQ(ResumeDataIterator(c, InitialDataIterator(global), &out).code(),
            Status::Code::kInvalidArgument);

  DataIteratorState wrong = s;
  wrong.loaders[1] = wrong.loaders[0];  // rank 0's loader restored on rank 1
  st = ResumeDataIterator(c, wrong, &out);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_NE(st.message().find("DP rank 1's loader reads shard 0 of 4"), std::string::npos)
      << st.ToString();
  wrong = s;
  wrong.loaders[2].position += 1;
  EXPECT_EQ(ResumeDataIterator(c, wrong, &out).code(), Status::Code::kCorruption);
  wrong = s;
  wrong.loaders[3].epoch += 1;
  EXPECT_EQ(ResumeDataIterator(c, wrong, &out).code(), Status::Code::kCorruption);

  // A state that cannot draw is named before anything draws from it.
  EXPECT_TRUE(CheckDataIterator(c, s).ok());
  EXPECT_EQ(CheckDataIterator(smaller, s).code(), Status::Code::kFailedPrecondition);
  wrong = s;
  wrong.loaders[1].num_shards = 0;
  EXPECT_NE(CheckDataIterator(c, wrong).message().find("DP rank 1's loader"), std::string::npos);
  wrong.loaders[1] = s.loaders[1];
  wrong.loaders[1].position = -3;
  EXPECT_EQ(CheckDataIterator(c, wrong).code(), Status::Code::kFailedPrecondition);

  int64_t dp_size = 0;
  RankLoaderState loader;
  nlohmann::json object = DataIteratorRankToJson(s, 2);
  object.erase("loader");
  st = DataIteratorRankFromJson(object, &out, &dp_size, &loader);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_EQ(st.message(),
            "data_iterator: \"dp_size\" and \"loader\" come together, got only \"dp_size\"");
  object = DataIteratorRankToJson(s, 2);
  object["loader"]["shard"] = 7;  // not a shard of 4
  st = DataIteratorRankFromJson(object, &out, &dp_size, &loader);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_EQ(st.message(), "data_iterator.loader: shard 7 of 4 is not a shard");
  object = DataIteratorRankToJson(s, 2);
  object["dp_size"] = 0;
  EXPECT_EQ(DataIteratorRankFromJson(object, &out, &dp_size, &loader).message(),
            "data_iterator.dp_size: expected a positive integer, got 0");
  nlohmann::json whole = DataIteratorStateToJson(s);
  whole["loaders"][1]["epoch"] = "1";
  EXPECT_EQ(DataIteratorStateFromJson(whole, &out).message(),
            "data_iterator.loaders[1].epoch: expected an integer, got \"1\"");
  whole["loaders"] = nlohmann::json::array();
  EXPECT_EQ(DataIteratorStateFromJson(whole, &out).message(),
            "data_iterator.loaders: expected a non-empty array, got []");
}

}  // namespace
}  // namespace ckptspec
