#include "model/box_overlap.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>
#include <utility>

namespace ckptspec {
namespace {

constexpr int64_t kEmpty = std::numeric_limits<int64_t>::min();

// The number of distinct lower bounds of the boxes on each axis.
std::vector<size_t> DistinctLowerBounds(const BoxBounds& boxes) {
  std::vector<size_t> counts(boxes.rank);
  std::vector<int64_t> values(boxes.size());
  for (size_t a = 0; a < boxes.rank; ++a) {
    for (size_t i = 0; i < values.size(); ++i) values[i] = boxes.Lo(i, a);
    std::sort(values.begin(), values.end());
    counts[a] = std::unique(values.begin(), values.end()) - values.begin();
  }
  return counts;
}

// The axis with the most distinct lower bounds among those not `skip` (the lowest on a tie), or
// `fallback` when there is none.
size_t MostDistinct(const std::vector<size_t>& counts, size_t skip, size_t fallback) {
  size_t best = fallback;
  for (size_t a = 0; a < counts.size(); ++a) {
    if (a != skip && (best == fallback || counts[a] > counts[best])) best = a;
  }
  return best;
}

// The active boxes, indexed by their interval on one axis: a max-tree over every box's slot,
// slots ordered by the box's lower bound on that axis. An active box's slot holds its upper
// bound, an inactive one kEmpty, so a subtree whose maximum does not exceed a query's lower bound
// holds no box meeting the query.
class ActiveIntervals {
 public:
  ActiveIntervals(const BoxBounds& boxes, size_t axis) : boxes_(boxes), axis_(axis) {
    const size_t n = boxes.size();
    std::vector<std::pair<int64_t, size_t>> order(n);  // (lower bound, box), sorted
    for (size_t i = 0; i < n; ++i) order[i] = {boxes.Lo(i, axis), i};
    std::sort(order.begin(), order.end());
    slot_of_.resize(n);
    box_at_.resize(n);
    sorted_lo_.resize(n);
    for (size_t s = 0; s < n; ++s) {
      slot_of_[order[s].second] = s;
      box_at_[s] = order[s].second;
      sorted_lo_[s] = order[s].first;
    }
    leaves_ = 1;
    while (leaves_ < n) leaves_ *= 2;
    max_.assign(2 * leaves_, kEmpty);
  }

  void Insert(size_t box) { Set(slot_of_[box], boxes_.Hi(box, axis_)); }
  void Remove(size_t box) { Set(slot_of_[box], kEmpty); }

  // Appends to *out every active box whose interval on the axis meets [lo, hi).
  void Meeting(int64_t lo, int64_t hi, std::vector<size_t>* out) const {
    // Slots [0, end) hold the boxes starting before hi.
    const size_t end =
        std::lower_bound(sorted_lo_.begin(), sorted_lo_.end(), hi) - sorted_lo_.begin();
    if (end == 0) return;
    // Depth-first, right child pushed first: at most one pending sibling per level.
    Node stack[2 * 64 + 2];
    size_t depth = 0;
    stack[depth++] = Node{1, 0, leaves_};
    while (depth > 0) {
      const Node node = stack[--depth];
      if (node.first >= end || max_[node.index] <= lo) continue;
      if (node.count == 1) {
        out->push_back(box_at_[node.first]);
        continue;
      }
      const size_t half = node.count / 2;
      stack[depth++] = Node{2 * node.index + 1, node.first + half, half};
      stack[depth++] = Node{2 * node.index, node.first, half};
    }
  }

 private:
  struct Node {
    size_t index, first, count;  // a tree node and the slots it spans
  };

  void Set(size_t slot, int64_t value) {
    size_t i = leaves_ + slot;
    max_[i] = value;
    for (i /= 2; i >= 1; i /= 2) {
      const int64_t m = std::max(max_[2 * i], max_[2 * i + 1]);
      if (max_[i] == m) break;  // the ancestors hold what they held
      max_[i] = m;
    }
  }

  const BoxBounds& boxes_;
  size_t axis_;
  std::vector<size_t> slot_of_;     // box -> slot
  std::vector<size_t> box_at_;      // slot -> box
  std::vector<int64_t> sorted_lo_;  // slot -> the box's lower bound on the axis
  size_t leaves_ = 1;
  std::vector<int64_t> max_;  // the tree, root at 1, leaves at [leaves_, 2 * leaves_)
};

// True when boxes k and i meet on every axis except `skip_a` and `skip_b` (already known to meet).
bool MeetElsewhere(const BoxBounds& boxes, size_t k, size_t i, size_t skip_a, size_t skip_b) {
  for (size_t a = 0; a < boxes.rank; ++a) {
    if (a == skip_a || a == skip_b) continue;
    if (std::max(boxes.Lo(k, a), boxes.Lo(i, a)) >= std::min(boxes.Hi(k, a), boxes.Hi(i, a))) {
      return false;
    }
  }
  return true;
}

}  // namespace

SweepAxes ChooseSweepAxes(const BoxBounds& boxes) {
  const std::vector<size_t> counts = DistinctLowerBounds(boxes);
  SweepAxes axes;
  axes.sweep = MostDistinct(counts, counts.size(), 0);
  axes.index = MostDistinct(counts, axes.sweep, axes.sweep);
  return axes;
}

void ForEachOverlap(const BoxBounds& boxes, size_t sweep_axis,
                    const std::function<bool(size_t k, size_t i)>& visit) {
  const std::vector<size_t> counts =
      boxes.size() < 2 ? std::vector<size_t>() : DistinctLowerBounds(boxes);
  ForEachOverlap(boxes, SweepAxes{sweep_axis, MostDistinct(counts, sweep_axis, sweep_axis)}, visit);
}

void ForEachOverlap(const BoxBounds& boxes, SweepAxes axes,
                    const std::function<bool(size_t k, size_t i)>& visit) {
  const size_t n = boxes.size();
  if (n < 2) return;
  const size_t sweep_axis = axes.sweep, index_axis = axes.index;
  ActiveIntervals active(boxes, index_axis);
  // Active boxes by their end on the sweep axis, the nearest end on top.
  using End = std::pair<int64_t, size_t>;
  std::priority_queue<End, std::vector<End>, std::greater<End>> ends;
  std::vector<size_t> candidates;
  for (size_t i = 0; i < n; ++i) {
    const int64_t start = boxes.Lo(i, sweep_axis);
    while (!ends.empty() && ends.top().first <= start) {
      active.Remove(ends.top().second);
      ends.pop();
    }
    // Every active box began at or before `start` and ends after it, so it meets box i on the
    // sweep axis; the index finds those meeting it on the second axis.
    candidates.clear();
    active.Meeting(boxes.Lo(i, index_axis), boxes.Hi(i, index_axis), &candidates);
    std::sort(candidates.begin(), candidates.end());
    for (size_t k : candidates) {
      if (!MeetElsewhere(boxes, k, i, sweep_axis, index_axis)) continue;
      if (!visit(k, i)) return;
    }
    active.Insert(i);
    ends.emplace(boxes.Hi(i, sweep_axis), i);
  }
}

void BoxBounds::Add(const int64_t* box_lo, const int64_t* box_hi) {
  lo.insert(lo.end(), box_lo, box_lo + rank);
  hi.insert(hi.end(), box_hi, box_hi + rank);
}

}  // namespace ckptspec
