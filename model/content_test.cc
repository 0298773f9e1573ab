#include "model/content.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <vector>

#include "model/content_fill.h"

namespace ckptspec {
namespace {

TEST(Content, PinnedValues) {
  // Golden checkpoints depend on these: a change here must bump kContentGeneratorVersion.
  static_assert(KeyHash("decoder.layers.self_attention.linear_qkv.weight") ==
                    KeyHash("decoder.layers.self_attention.linear_qkv.weight"),
                "constexpr");
  EXPECT_EQ(Mix64(0), 0u);
  EXPECT_EQ(ContentBits(1, KeyHash("a"), 0), ContentBits(1, KeyHash("a"), 0));
  EXPECT_NE(ContentBits(1, KeyHash("a"), 0), ContentBits(2, KeyHash("a"), 0));
  EXPECT_NE(ContentBits(1, KeyHash("a"), 0), ContentBits(1, KeyHash("b"), 0));
  EXPECT_NE(ContentBits(1, KeyHash("a"), 0), ContentBits(1, KeyHash("a"), 1));
}

TEST(Content, FloatsAreInUnitRangeAndExactInDtype) {
  for (DType dtype : kAllDTypes) {
    if (!IsFloatingDType(dtype)) continue;
    for (uint64_t i = 0; i < 4096; ++i) {
      const uint64_t bits = ContentElementBits(dtype, 7, KeyHash("w"), i);
      const double v = DecodeToDouble(dtype, bits);
      ASSERT_TRUE(std::isfinite(v)) << DTypeName(dtype);
      ASSERT_GE(v, -1.0);
      ASSERT_LE(v, 1.0);  // rounding into a narrow type may reach 1.0 exactly
      ASSERT_EQ(EncodeFloat(dtype, static_cast<float>(v)), bits) << DTypeName(dtype);
    }
  }
}

TEST(Content, ValuesAreWellSpread) {
  std::set<uint64_t> distinct;
  for (uint64_t i = 0; i < 1000; ++i) distinct.insert(ContentElementBits(DType::kFloat32, 3, 9, i));
  EXPECT_GT(distinct.size(), 990u);
}

// A shard filled on its own equals the matching slice of the whole tensor.
RC_GTEST_PROP(Content, ShardFillMatchesGlobalSlice, ()) {
  const DType dtype = *rc::gen::elementOf(std::vector<DType>(kAllDTypes, kAllDTypes + kNumDTypes));
  const int rank = *rc::gen::inRange(1, 4);
  Dims global(rank);
  for (auto& g : global) g = *rc::gen::inRange(1, 7);
  Box local;
  for (int a = 0; a < rank; ++a) {
    const int64_t off = *rc::gen::inRange<int64_t>(0, global[a]);
    local.offset.push_back(off);
    local.shape.push_back(*rc::gen::inRange<int64_t>(1, global[a] - off + 1));
  }
  const int elem = DTypeSize(dtype);
  std::vector<uint8_t> whole(Volume(global) * elem);
  FillContent(dtype, 11, KeyHash("k"), global, Box{Dims(rank, 0), global}, whole.data());
  std::vector<uint8_t> shard(Volume(local.shape) * elem);
  FillContent(dtype, 11, KeyHash("k"), global, local, shard.data());
  // Compare element by element through coordinates.
  Dims coord(rank, 0);
  for (int64_t i = 0; i < Volume(local.shape); ++i) {
    Dims g(rank);
    int64_t rem = i;
    for (int a = rank - 1; a >= 0; --a) {
      coord[a] = rem % local.shape[a];
      rem /= local.shape[a];
      g[a] = local.offset[a] + coord[a];
    }
    RC_ASSERT(memcmp(&shard[i * elem], &whole[LinearIndex(g, global) * elem], elem) == 0);
  }
}

}  // namespace
}  // namespace ckptspec
