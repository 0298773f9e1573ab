#include "model/box_overlap.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace ckptspec {
namespace {

using Pair = std::pair<size_t, size_t>;

// The plain sweep ForEachOverlap must reproduce: every earlier box whose end on the sweep axis
// lies beyond the current box's start stays active and is compared with it, in order.
std::vector<Pair> OracleOverlaps(const BoxBounds& boxes, size_t sweep_axis, size_t limit) {
  std::vector<Pair> out;
  for (size_t i = 0; i < boxes.size(); ++i) {
    for (size_t k = 0; k < i; ++k) {
      if (boxes.Hi(k, sweep_axis) <= boxes.Lo(i, sweep_axis)) continue;  // left behind
      bool meet = true;
      for (size_t a = 0; a < boxes.rank; ++a) {
        meet = meet &&
               std::max(boxes.Lo(k, a), boxes.Lo(i, a)) < std::min(boxes.Hi(k, a), boxes.Hi(i, a));
      }
      if (!meet) continue;
      if (out.size() == limit) return out;
      out.emplace_back(k, i);
    }
  }
  return out;
}

std::vector<Pair> SweptOverlaps(const BoxBounds& boxes, size_t sweep_axis, size_t limit) {
  std::vector<Pair> out;
  ForEachOverlap(boxes, sweep_axis, [&](size_t k, size_t i) {
    if (out.size() == limit) return false;
    out.emplace_back(k, i);
    return true;
  });
  return out;
}

// `n` random non-empty boxes of `rank` axes in a small space (so that many meet), sorted by
// their lower bound on `sweep_axis`.
BoxBounds GenBoxes(size_t n, size_t rank, size_t sweep_axis) {
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> list;
  for (size_t i = 0; i < n; ++i) {
    std::vector<int64_t> lo(rank), hi(rank);
    for (size_t a = 0; a < rank; ++a) {
      lo[a] = *rc::gen::inRange<int64_t>(0, 12);
      hi[a] = lo[a] + *rc::gen::inRange<int64_t>(1, 6);
    }
    list.emplace_back(std::move(lo), std::move(hi));
  }
  std::stable_sort(list.begin(), list.end(), [&](const auto& x, const auto& y) {
    return x.first[sweep_axis] < y.first[sweep_axis];
  });
  BoxBounds boxes;
  boxes.rank = rank;
  for (const auto& [lo, hi] : list) boxes.Add(lo.data(), hi.data());
  return boxes;
}

RC_GTEST_PROP(BoxOverlap, VisitsExactlyThePairsOfThePlainSweepInItsOrder, ()) {
  const size_t rank = *rc::gen::inRange<size_t>(1, 5);
  const size_t sweep_axis = *rc::gen::inRange<size_t>(0, rank);
  const size_t n = *rc::gen::inRange<size_t>(0, 40);
  const BoxBounds boxes = GenBoxes(n, rank, sweep_axis);
  const size_t limit = *rc::gen::element<size_t>(0, 1, 3, 1000000);
  const std::vector<Pair> expected = OracleOverlaps(boxes, sweep_axis, limit);
  RC_CLASSIFY(expected.empty(), "disjoint");
  RC_ASSERT(SweptOverlaps(boxes, sweep_axis, limit) == expected);
  // Whichever axis indexes the active boxes, the pairs are the same.
  const SweepAxes axes{sweep_axis, *rc::gen::inRange<size_t>(0, rank)};
  std::vector<Pair> indexed;
  ForEachOverlap(boxes, axes, [&](size_t k, size_t i) {
    if (indexed.size() == limit) return false;
    indexed.emplace_back(k, i);
    return true;
  });
  RC_ASSERT(indexed == expected);
}

// Disjoint boxes long on the sweep axis: a sweep that never shrinks its active set compares every
// pair; this one finds nothing to compare (the regression it guards is one of speed, measured in
// bench/irregular_sweep_bench.cc; here only the answer is checked).
TEST(BoxOverlap, StaircaseOfDisjointColumnsHasNoOverlap) {
  BoxBounds boxes;
  boxes.rank = 2;
  const int64_t n = 1000;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t lo[] = {i, i}, hi[] = {n, i + 1};
    boxes.Add(lo, hi);
  }
  size_t visited = 0;
  ForEachOverlap(boxes, 0, [&](size_t, size_t) { return ++visited, true; });
  EXPECT_EQ(visited, 0u);
}

TEST(BoxOverlap, StopsWhenTheVisitorSaysSo) {
  BoxBounds boxes;
  boxes.rank = 1;
  for (int i = 0; i < 100; ++i) {
    const int64_t lo[] = {0}, hi[] = {10};
    boxes.Add(lo, hi);
  }
  size_t visited = 0;
  ForEachOverlap(boxes, 0, [&](size_t k, size_t i) {
    EXPECT_LT(k, i);
    return ++visited < 5;
  });
  EXPECT_EQ(visited, 5u);
}

}  // namespace
}  // namespace ckptspec
