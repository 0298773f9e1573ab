// Finding the intersecting pairs among many boxes of one rank without comparing every pair: a
// sweep along one axis whose active set shrinks as the sweep passes the boxes' ends, with the
// active boxes indexed by their interval on a second axis (rank 2), or by their bounds on every
// other axis in a k-d tree (rank 3 and more).
//
// Used by the P4 sweep over irregular chunks (validate_integrity.cc), by the DCP tiling check
// (formats/dcp_checks.cc) and by the reference loader (two saved chunks of one tensor must not
// overlap).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace ckptspec {

// N boxes of `rank` axes as flat bounds: box i spans [lo[i * rank + a], hi[i * rank + a]) on axis
// a. Every box must be non-empty (lo < hi on every axis).
struct BoxBounds {
  size_t rank = 0;
  std::vector<int64_t> lo;
  std::vector<int64_t> hi;

  size_t size() const { return rank == 0 ? 0 : lo.size() / rank; }
  int64_t Lo(size_t box, size_t axis) const { return lo[box * rank + axis]; }
  int64_t Hi(size_t box, size_t axis) const { return hi[box * rank + axis]; }
  void Add(const int64_t* box_lo, const int64_t* box_hi);  // appends one box of `rank` axes
};

// Calls visit(k, i) for every pair k < i of intersecting boxes, ordered by i and then by k; stops
// as soon as visit returns false. `rank` must be at least 1.
//
// Precondition: the boxes are sorted by their lower bound on `sweep_axis` (ties in any order);
// unsorted, pairs are missed (a box leaves the active set once a later box starts past its end).
// The pairs visited, and their order, are exactly those of the plain sweep that keeps every box
// whose end on the sweep axis lies beyond the current box's start and compares it with the
// current box (the oracle in box_overlap_test.cc).
//
// Each box's partners (the earlier boxes it meets) are all found, then visited in order; the
// search stops at the box where visit returns false, so V below counts the pairs of the boxes up
// to that one (all of its partners included).
//
// Rank 1 or 2: the active boxes are indexed by their interval on the second axis (the one, other
// than the sweep axis, with the most distinct lower bounds). O(N log N) to sort it, then O(log N)
// per box and per partner: O((N + V) log N) for V pairs found.
//
// Rank 3 and more: the boxes are points of D = 2 (rank - 1) coordinates, their lower and upper
// bounds on every axis but the sweep axis, in a static balanced k-d tree (median splits, the
// coordinates in turn, leaves of up to 8 points) whose nodes keep their points' bounding box and
// how many of them are active. The active boxes meeting a box on those axes form an orthant of
// points; a query visits the O(D N^(1 - 1/D)) nodes whose box straddles one of its D faces (at a
// split on one coordinate, one child at most straddles that coordinate's face, whatever the equal
// coordinates) and O(log N) nodes per partner found inside. O(rank N log N) to build, O(log N)
// per box entering or leaving the active set: O(rank N^(2 - 1/D) + V log N) in all, below
// quadratic for every rank: N^1.75 for rank 3, N^1.83 for rank 4, N^1.875 for rank 5. That is
// the bound; on the staircases of bench/irregular_sweep_bench.cc the time grows like N log N.
//
// Memory: O(N rank), and the partners of one box (at most N).
void ForEachOverlap(const BoxBounds& boxes, size_t sweep_axis,
                    const std::function<bool(size_t k, size_t i)>& visit);

// The axes a sweep should use: `sweep`, the axis with the most distinct lower bounds, and
// `index`, the next (the same axis when there is one). Ties go to the lower axis.
struct SweepAxes {
  size_t sweep = 0;
  size_t index = 0;
};
SweepAxes ChooseSweepAxes(const BoxBounds& boxes);

// `boxes` sorted by their lower bound on `axis`, stably (ForEachOverlap's precondition). When
// `order` is given, (*order)[i] is the index in `boxes` of the result's box i.
BoxBounds SortedAlong(const BoxBounds& boxes, size_t axis, std::vector<size_t>* order = nullptr);

// ForEachOverlap with the second axis given (any axis; the pairs visited are the same; only the
// sweep of rank 2 uses it).
void ForEachOverlap(const BoxBounds& boxes, SweepAxes axes,
                    const std::function<bool(size_t k, size_t i)>& visit);

}  // namespace ckptspec
