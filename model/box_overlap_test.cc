#include "model/box_overlap.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
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

// The pairs ForEachOverlap visits when visit returns false at its `stop_after`-th call (0: never),
// every call recorded: a call after that stop shows as one pair too many.
std::vector<Pair> VisitedPairs(const BoxBounds& boxes, SweepAxes axes, size_t stop_after) {
  std::vector<Pair> out;
  ForEachOverlap(boxes, axes, [&](size_t k, size_t i) {
    out.emplace_back(k, i);
    return out.size() != stop_after;
  });
  return out;
}

// How the boxes lie on one axis; box j (of n, in the order generated) spans there:
enum class AxisLayout {
  kRandom,     // a random interval in a small space, so that many meet
  kFullSpan,   // [0, 10): every box meets every other, all bounds equal
  kStair,      // [j, j + 1), now and then a step or two longer: apart from most others
  kLongStair,  // [j, n + a little): every box meets every other, all lower bounds distinct
  kCoarse,     // [0, 5), [5, 10) or their union: many equal bounds
};

const char* AxisLayoutName(AxisLayout layout) {
  switch (layout) {
    case AxisLayout::kRandom:
      return "random";
    case AxisLayout::kFullSpan:
      return "full-span";
    case AxisLayout::kStair:
      return "stair";
    case AxisLayout::kLongStair:
      return "long-stair";
    case AxisLayout::kCoarse:
      return "coarse";
  }
  return "?";
}

std::pair<int64_t, int64_t> GenInterval(AxisLayout layout, int64_t j, int64_t n) {
  switch (layout) {
    case AxisLayout::kRandom: {
      const int64_t lo = *rc::gen::inRange<int64_t>(0, 12);
      return {lo, lo + *rc::gen::inRange<int64_t>(1, 6)};
    }
    case AxisLayout::kFullSpan:
      return {0, 10};
    case AxisLayout::kStair:
      return {j, j + *rc::gen::weightedElement<int64_t>({{8, 1}, {1, 2}, {1, 3}})};
    case AxisLayout::kLongStair:
      return {j, n + *rc::gen::inRange<int64_t>(0, 3)};
    case AxisLayout::kCoarse:
      using Interval = std::pair<int64_t, int64_t>;
      return *rc::gen::element(Interval{0, 5}, Interval{5, 10}, Interval{0, 10});
  }
  return {0, 1};
}

// `n` non-empty boxes laid out on each axis as `layouts` says (one per axis), then moved, some
// of them repeated (a box meets its copies), sorted by their lower bound on `sweep_axis` (ties in the
// order generated).
BoxBounds GenLayout(size_t n, const std::vector<AxisLayout>& layouts, size_t sweep_axis) {
  const size_t rank = layouts.size();
  // Each axis moved by one amount, so that bounds are also negative or large.
  const auto shifts = *rc::gen::container<std::vector<int64_t>>(
      rank, rc::gen::element<int64_t>(0, 0, -7, int64_t{1} << 40, -(int64_t{1} << 40)));
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> list;
  while (list.size() < n) {
    std::vector<int64_t> lo(rank), hi(rank);
    for (size_t a = 0; a < rank; ++a) {
      std::tie(lo[a], hi[a]) =
          GenInterval(layouts[a], static_cast<int64_t>(list.size()), static_cast<int64_t>(n));
      lo[a] += shifts[a];
      hi[a] += shifts[a];
    }
    const size_t copies = *rc::gen::weightedElement<size_t>({{6, 1}, {1, 2}, {1, 4}});
    for (size_t c = 0; c < copies && list.size() < n; ++c) list.emplace_back(lo, hi);
  }
  std::stable_sort(list.begin(), list.end(), [&](const auto& x, const auto& y) {
    return x.first[sweep_axis] < y.first[sweep_axis];
  });
  BoxBounds boxes;
  boxes.rank = rank;
  for (const auto& [lo, hi] : list) boxes.Add(lo.data(), hi.data());
  return boxes;
}

std::string Describe(const BoxBounds& boxes) {
  std::string out;
  for (size_t i = 0; i < boxes.size(); ++i) {
    out += "  box " + std::to_string(i) + ":";
    for (size_t a = 0; a < boxes.rank; ++a) {
      out += std::string(a == 0 ? " " : " x ") + "[" + std::to_string(boxes.Lo(i, a)) + ", " +
             std::to_string(boxes.Hi(i, a)) + ")";
    }
    out += "\n";
  }
  return out;
}

// Boxes of rank 1 to 5 laid out per axis (random, staircases, boxes spanning some axes and apart
// on another, many equal bounds, repeated boxes), visit stopping at the first pair, at a random
// one or never: the pairs and their order are the plain sweep's, whichever axis is the second.
void CheckAgainstThePlainSweep(size_t min_boxes, size_t max_boxes) {
  const size_t rank = *rc::gen::weightedElement<size_t>({{1, 1}, {2, 2}, {3, 3}, {2, 4}, {2, 5}});
  const auto layouts = *rc::gen::container<std::vector<AxisLayout>>(
      rank, rc::gen::element(AxisLayout::kRandom, AxisLayout::kFullSpan, AxisLayout::kStair,
                             AxisLayout::kLongStair, AxisLayout::kCoarse));
  const size_t sweep_axis = *rc::gen::inRange<size_t>(0, rank);
  const size_t n = *rc::gen::inRange<size_t>(min_boxes, max_boxes);
  const BoxBounds boxes = GenLayout(n, layouts, sweep_axis);
  const std::vector<Pair> all = OracleOverlaps(boxes, sweep_axis, SIZE_MAX);
  const size_t stop_after = *rc::gen::oneOf(rc::gen::just<size_t>(0), rc::gen::just<size_t>(1),
                                            rc::gen::inRange<size_t>(1, all.size() + 2));
  const size_t expected_size = stop_after == 0 ? all.size() : std::min(stop_after, all.size());
  const std::vector<Pair> expected(all.begin(),
                                   all.begin() + static_cast<std::ptrdiff_t>(expected_size));
  std::string layout_names;
  for (AxisLayout layout : layouts) layout_names += std::string(" ") + AxisLayoutName(layout);
  RC_LOG() << n << " boxes, sweep axis " << sweep_axis << ", axes laid out:" << layout_names
           << "; visit stops at call " << stop_after << " (0: never) of " << all.size()
           << " pairs\n"
           << Describe(boxes);
  RC_CLASSIFY(all.empty(), "disjoint");
  RC_CLASSIFY(rank >= 3, "rank 3 or more");
  RC_CLASSIFY(stop_after != 0 && stop_after <= all.size(), "stopped early");
  // The axes a caller would pick, with the sweep axis kept; and any other second axis.
  const SweepAxes chosen{sweep_axis, ChooseSweepAxes(boxes).index};
  const SweepAxes any{sweep_axis, *rc::gen::inRange<size_t>(0, rank)};
  for (const SweepAxes& axes : {chosen, any}) {
    RC_LOG() << "second axis " << axes.index << "\n";
    RC_ASSERT(VisitedPairs(boxes, axes, stop_after) == expected);
  }
  std::vector<Pair> by_sweep_axis;
  ForEachOverlap(boxes, sweep_axis, [&](size_t k, size_t i) {
    by_sweep_axis.emplace_back(k, i);
    return by_sweep_axis.size() != stop_after;
  });
  RC_ASSERT(by_sweep_axis == expected);
}

RC_GTEST_PROP(BoxOverlap, VisitsExactlyThePairsOfThePlainSweepInItsOrder, ()) {
  CheckAgainstThePlainSweep(0, 40);
}

// Enough boxes for a deep index (a tree of many levels for rank 3 and more).
RC_GTEST_PROP(BoxOverlap, VisitsExactlyThePairsOfThePlainSweepAmongManyBoxes, ()) {
  CheckAgainstThePlainSweep(40, 1000);
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
