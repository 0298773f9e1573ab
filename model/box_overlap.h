// Finding the intersecting pairs among many boxes of one rank without comparing every pair: a
// sweep along one axis whose active set shrinks as the sweep passes the boxes' ends, with the
// active boxes indexed by their interval on a second axis.
//
// Used by the P4 sweep over irregular chunks (validate_integrity.cc) and by the reference loader
// (two saved chunks of one tensor must not overlap).
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
// Precondition: the boxes are sorted by their lower bound on `sweep_axis` (ties in any order).
// The pairs visited, and their order, are exactly those of the plain sweep that keeps every box
// whose end on the sweep axis lies beyond the current box's start and compares it with the
// current box (the oracle in box_overlap_test.cc).
//
// Cost: O(N log N) to sort the second axis, then O(log N) per box and per candidate, where a
// candidate is an earlier box that is still active on the sweep axis and meets the current box on
// the second axis. With rank 1 or 2 every candidate intersects, so the total is O((N + V) log N)
// for V visited pairs. With more axes a candidate may still be separated on a third axis; it is
// then compared and skipped, and a layout built for it (boxes that all span the sweep axis and
// the second axis, separated only on a third) makes those comparisons quadratic in N. The second
// axis is the one (other than the sweep axis) with the most distinct lower bounds. Memory: O(N).
void ForEachOverlap(const BoxBounds& boxes, size_t sweep_axis,
                    const std::function<bool(size_t k, size_t i)>& visit);

// The axes a sweep should use: `sweep`, the axis with the most distinct lower bounds, and
// `index`, the next (the same axis when there is one). Ties go to the lower axis.
struct SweepAxes {
  size_t sweep = 0;
  size_t index = 0;
};
SweepAxes ChooseSweepAxes(const BoxBounds& boxes);

// ForEachOverlap with the second axis given (any axis; the pairs visited are the same).
void ForEachOverlap(const BoxBounds& boxes, SweepAxes axes,
                    const std::function<bool(size_t k, size_t i)>& visit);

}  // namespace ckptspec
