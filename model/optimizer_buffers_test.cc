#include "model/optimizer_buffers.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace ckptspec {
namespace {

// Buckets are padded to lcm(dp, 2 * param_alignment): lcm(4, 8) = 8 here.
TEST(OptimizerBuffers, ReverseOrderAlignedBucketsPaddedToDp) {
  BufferConfig c;
  c.bucket_size = 8;
  c.param_alignment = 4;
  const BufferLayout l = LayoutBuffer({5, 3, 10}, c, 4);
  ASSERT_EQ(l.buckets.size(), 2u);
  EXPECT_EQ(l.buckets[0].start, 0);
  EXPECT_EQ(l.buckets[0].numel_unpadded, 10);
  EXPECT_EQ(l.buckets[0].numel_padded, 16);
  EXPECT_EQ(l.buckets[1].start, 16);
  EXPECT_EQ(l.buckets[1].numel_unpadded, 9);  // param 1 at 0, gap [3, 4), param 0 at 4
  EXPECT_EQ(l.buckets[1].numel_padded, 16);
  ASSERT_EQ(l.params.size(), 3u);
  EXPECT_EQ(l.params[0].input_index, 2);
  EXPECT_EQ(l.params[1].input_index, 1);
  EXPECT_EQ(l.params[1].start_in_bucket, 0);
  EXPECT_EQ(l.params[2].input_index, 0);
  EXPECT_EQ(l.params[2].start_in_bucket, 4);
  int64_t b = 0, e = 0;
  l.Slice(1, 2, &b, &e);
  EXPECT_EQ(b, 8);
  EXPECT_EQ(e, 9);
  l.Slice(1, 3, &b, &e);  // all padding: nothing to write
  EXPECT_EQ(b, e);
  EXPECT_FALSE(ValidateBufferConfig(BufferConfig{0, 1}).ok());
}

// The DP slices of every bucket tile [0, numel_unpadded) exactly, and every parameter lies inside
// its bucket without overlapping another.
RC_GTEST_PROP(OptimizerBuffers, SlicesTileBucketsAndParamsDoNotOverlap, ()) {
  const auto numels = *rc::gen::container<std::vector<int64_t>>(rc::gen::inRange<int64_t>(1, 50));
  BufferConfig c;
  c.bucket_size = *rc::gen::inRange<int64_t>(1, 120);
  c.param_alignment = *rc::gen::element<int64_t>(1, 2, 8, 64);
  const int64_t dp = *rc::gen::inRange<int64_t>(1, 9);
  const BufferLayout l = LayoutBuffer(numels, c, dp);
  RC_ASSERT(l.params.size() == numels.size());
  int64_t next = 0;
  for (size_t b = 0; b < l.buckets.size(); ++b) {
    RC_ASSERT(l.buckets[b].start == next);
    RC_ASSERT(l.buckets[b].numel_padded % dp == 0);
    RC_ASSERT(l.buckets[b].numel_padded >= l.buckets[b].numel_unpadded);
    next += l.buckets[b].numel_padded;
    int64_t covered = 0;
    for (int64_t r = 0; r < dp; ++r) {
      int64_t s = 0, e = 0;
      l.Slice(static_cast<int>(b), r, &s, &e);
      RC_ASSERT(s == covered || e == s);
      covered = std::max(covered, e);
    }
    RC_ASSERT(covered == l.buckets[b].numel_unpadded);
  }
  for (size_t i = 0; i < l.params.size(); ++i) {
    const BufferParam& p = l.params[i];
    RC_ASSERT(p.start_in_bucket + p.numel <= l.buckets[p.bucket].numel_unpadded);
    if (i > 0 && l.params[i - 1].bucket == p.bucket) {
      RC_ASSERT(l.params[i - 1].start_in_bucket + l.params[i - 1].numel <= p.start_in_bucket);
    }
  }
}

// What lets a dp_reshardable checkpoint load under a DP change: the buckets, their numel_unpadded
// and every parameter's place inside its bucket are the same for any two DP sizes.
RC_GTEST_PROP(OptimizerBuffers, BucketContentsDoNotDependOnTheDpSize, ()) {
  const auto numels = *rc::gen::container<std::vector<int64_t>>(rc::gen::inRange<int64_t>(1, 50));
  BufferConfig c;
  c.bucket_size = *rc::gen::inRange<int64_t>(1, 120);
  c.param_alignment = *rc::gen::element<int64_t>(1, 3, 4, 64);
  const int64_t dp1 = *rc::gen::inRange<int64_t>(1, 9);
  const int64_t dp2 = *rc::gen::inRange<int64_t>(1, 9);
  const BufferLayout a = LayoutBuffer(numels, c, dp1);
  const BufferLayout b = LayoutBuffer(numels, c, dp2);
  RC_ASSERT(a.buckets.size() == b.buckets.size());
  for (size_t i = 0; i < a.buckets.size(); ++i) {
    RC_ASSERT(a.buckets[i].numel_unpadded == b.buckets[i].numel_unpadded);
  }
  RC_ASSERT(a.params.size() == b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) {
    RC_ASSERT(a.params[i].bucket == b.params[i].bucket);
    RC_ASSERT(a.params[i].start_in_bucket == b.params[i].start_in_bucket);
  }
}

}  // namespace
}  // namespace ckptspec
