#include "model/box.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <limits>

namespace ckptspec {
namespace {

TEST(Box, IntersectAndContain) {
  const Box a{{0, 0}, {4, 8}};
  const Box b{{2, 4}, {4, 8}};
  Box c;
  ASSERT_TRUE(Intersect(a, b, &c));
  EXPECT_EQ(c, (Box{{2, 4}, {2, 4}}));
  EXPECT_TRUE(Contains(a, c));
  EXPECT_TRUE(Contains(b, c));
  EXPECT_FALSE(Contains(c, a));
  EXPECT_FALSE(Intersect(Box{{0}, {4}}, Box{{4}, {4}}, nullptr));  // touching is not overlapping
  EXPECT_FALSE(Intersect(Box{{0}, {4}}, Box{{0, 0}, {4, 4}}, nullptr));  // rank mismatch
  EXPECT_EQ(BoxToString(c), "[2:4, 4:8]");
  const int64_t max = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(BoxToString(Box{{max}, {1}}), "[" + std::to_string(max) + ":+1]");  // no overflow
}

TEST(Box, CheckedVolumeDetectsOverflowAndNegatives) {
  int64_t v = 0;
  EXPECT_TRUE(CheckedVolume({}, &v));
  EXPECT_EQ(v, 1);
  EXPECT_TRUE(CheckedVolume({3, 0, 5}, &v));
  EXPECT_EQ(v, 0);
  EXPECT_FALSE(CheckedVolume({-1, 4}, &v));
  EXPECT_FALSE(CheckedVolume({int64_t{1} << 32, int64_t{1} << 32}, &v));
  EXPECT_TRUE(CheckedVolume({int64_t{1} << 31, int64_t{1} << 31}, &v));
}

TEST(Box, IsWithinRejectsOutOfBoundsAndOverflow) {
  EXPECT_TRUE(IsWithin(Box{{2, 0}, {2, 8}}, {4, 8}));
  EXPECT_FALSE(IsWithin(Box{{3, 0}, {2, 8}}, {4, 8}));
  EXPECT_FALSE(IsWithin(Box{{-1, 0}, {1, 8}}, {4, 8}));
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_FALSE(IsWithin(Box{{2}, {big}}, {4}));
  EXPECT_FALSE(IsWithin(Box{{0}, {4}}, {4, 4}));
}

TEST(RegularGrid, CellsRoundTrip) {
  RegularGrid grid;
  ASSERT_TRUE(RegularGrid::Make({6, 8}, {3, 2}, &grid));
  EXPECT_EQ(grid.num_cells(), 6);
  EXPECT_EQ(grid.cell_shape(), (Dims{2, 4}));
  for (int64_t i = 0; i < grid.num_cells(); ++i) {
    int64_t back = -1;
    ASSERT_TRUE(grid.CellIndexOf(grid.CellBox(i), &back));
    EXPECT_EQ(back, i);
  }
  int64_t cell;
  EXPECT_FALSE(grid.CellIndexOf(Box{{1, 0}, {2, 4}}, &cell));  // misaligned
  EXPECT_FALSE(grid.CellIndexOf(Box{{0, 0}, {2, 8}}, &cell));  // wrong shape
  EXPECT_FALSE(grid.CellIndexOf(Box{{6, 0}, {2, 4}}, &cell));  // past the end
  EXPECT_FALSE(RegularGrid::Make({7}, {2}, &grid));            // does not divide
}

// Intersection is commutative and contained in both operands.
RC_GTEST_PROP(Box, IntersectionIsContainedInBoth, ()) {
  const int rank = *rc::gen::inRange(1, 4);
  auto gen_box = [&] {
    Box box;
    for (int i = 0; i < rank; ++i) {
      box.offset.push_back(*rc::gen::inRange(0, 20));
      box.shape.push_back(*rc::gen::inRange(1, 20));
    }
    return box;
  };
  const Box a = gen_box();
  const Box b = gen_box();
  Box ab, ba;
  const bool hit = Intersect(a, b, &ab);
  RC_ASSERT(hit == Intersect(b, a, &ba));
  if (hit) {
    RC_ASSERT(ab == ba);
    RC_ASSERT(Contains(a, ab));
    RC_ASSERT(Contains(b, ab));
  }
}

}  // namespace
}  // namespace ckptspec
