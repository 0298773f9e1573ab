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

// The active boxes of rank 3 or more, as points in a static balanced k-d tree: a box's point has
// 2 (rank - 1) coordinates, its lower and upper bound on every axis but the sweep axis (lower at
// even coordinates, upper at the odd one after it). Box k meets box q on those axes exactly when
// k's lower bounds lie below q's upper bounds and k's upper bounds above q's lower bounds: an
// orthant of points. Each node splits its points at their median on one coordinate, the
// coordinates taken in turn by depth, and keeps its points' bounding box and how many of them
// are active. Memory: O(N rank).
class ActiveBoxTree {
 public:
  ActiveBoxTree(const BoxBounds& boxes, size_t sweep_axis)
      : dims_(2 * (boxes.rank - 1)), active_(boxes.size(), 0) {
    const size_t n = boxes.size();
    std::vector<size_t> axis_of;  // coordinate / 2 -> axis
    for (size_t a = 0; a < boxes.rank; ++a) {
      if (a != sweep_axis) axis_of.push_back(a);
    }
    std::vector<int64_t> by_box(n * dims_);  // every box's point, by box
    for (size_t b = 0; b < n; ++b) {
      for (size_t d = 0; d < dims_; ++d) {
        by_box[b * dims_ + d] =
            d % 2 == 0 ? boxes.Lo(b, axis_of[d / 2]) : boxes.Hi(b, axis_of[d / 2]);
      }
    }
    size_t levels = 0;  // below the root; the larger half of a node has ceil(count / 2) points
    for (size_t count = n; count > kLeafSize; count -= count / 2) ++levels;
    const size_t nodes = size_t{2} << levels;  // heap order: node x has children 2x and 2x + 1
    node_min_.assign(nodes * dims_, 0);
    node_max_.assign(nodes * dims_, 0);
    active_count_.assign(nodes, 0);
    box_at_.resize(n);
    for (size_t b = 0; b < n; ++b) box_at_[b] = b;
    leaf_of_.resize(n);
    Build(by_box, 1, 0, n, 0);
    slot_of_.resize(n);
    point_.resize(n * dims_);
    for (size_t s = 0; s < n; ++s) {
      slot_of_[box_at_[s]] = s;
      std::copy_n(&by_box[box_at_[s] * dims_], dims_, &point_[s * dims_]);
    }
  }

  void Insert(size_t box) {
    const size_t s = slot_of_[box];
    active_[s] = 1;
    for (size_t node = leaf_of_[s]; node >= 1; node /= 2) ++active_count_[node];
  }
  void Remove(size_t box) {
    const size_t s = slot_of_[box];
    active_[s] = 0;
    for (size_t node = leaf_of_[s]; node >= 1; node /= 2) --active_count_[node];
  }

  // Appends to *out every active box meeting box `query` on every axis but the sweep axis.
  void Meeting(size_t query, std::vector<size_t>* out) const {
    const int64_t* q = &point_[slot_of_[query] * dims_];
    // Depth-first, right child pushed first: at most one pending sibling per level. A node
    // found inside the orthant passes that on: its active points all meet the query.
    Node stack[2 * 64 + 2];
    size_t depth = 0;
    stack[depth++] = Node{1, 0, box_at_.size(), false};
    while (depth > 0) {
      const Node node = stack[--depth];
      if (active_count_[node.index] == 0) continue;
      bool inside = node.inside;
      if (!inside) {
        const Placement p =
            Place(&node_min_[node.index * dims_], &node_max_[node.index * dims_], q);
        if (p == Placement::kOutside) continue;
        inside = p == Placement::kInside;
      }
      if (node.count <= kLeafSize) {
        for (size_t s = node.first; s < node.first + node.count; ++s) {
          const int64_t* x = &point_[s * dims_];
          if (active_[s] && (inside || Place(x, x, q) == Placement::kInside)) {
            out->push_back(box_at_[s]);
          }
        }
        continue;
      }
      const size_t half = node.count / 2;
      stack[depth++] = Node{2 * node.index + 1, node.first + half, node.count - half, inside};
      stack[depth++] = Node{2 * node.index, node.first, half, inside};
    }
  }

 private:
  static constexpr size_t kLeafSize = 8;

  struct Node {
    size_t index, first, count;  // a tree node and the slots it spans
    bool inside;                 // an ancestor lies inside the query's orthant
  };

  enum class Placement { kOutside, kCrossing, kInside };

  // Where the box [min, max] of points lies against the orthant of the points meeting the box
  // whose point is q: lower bounds below q's upper bounds, upper bounds above q's lower bounds.
  Placement Place(const int64_t* min, const int64_t* max, const int64_t* q) const {
    bool inside = true;
    for (size_t d = 0; d < dims_; d += 2) {
      if (min[d] >= q[d + 1] || max[d + 1] <= q[d]) return Placement::kOutside;
      inside = inside && max[d] < q[d + 1] && min[d + 1] > q[d];
    }
    return inside ? Placement::kInside : Placement::kCrossing;
  }

  // Arranges box_at_[first, first + count) into the subtree of `node`, split on coordinate
  // `depth` mod dims_, and sets its bounding boxes and leaves.
  void Build(const std::vector<int64_t>& by_box, size_t node, size_t first, size_t count,
             size_t depth) {
    int64_t* min = &node_min_[node * dims_];
    int64_t* max = &node_max_[node * dims_];
    if (count <= kLeafSize) {
      std::copy_n(&by_box[box_at_[first] * dims_], dims_, min);
      std::copy_n(&by_box[box_at_[first] * dims_], dims_, max);
      for (size_t s = first; s < first + count; ++s) {
        leaf_of_[s] = node;
        for (size_t d = 0; d < dims_; ++d) {
          min[d] = std::min(min[d], by_box[box_at_[s] * dims_ + d]);
          max[d] = std::max(max[d], by_box[box_at_[s] * dims_ + d]);
        }
      }
      return;
    }
    const size_t d = depth % dims_, half = count / 2;
    const auto begin = box_at_.begin() + static_cast<std::ptrdiff_t>(first);
    std::nth_element(begin, begin + static_cast<std::ptrdiff_t>(half),
                     begin + static_cast<std::ptrdiff_t>(count), [&](size_t x, size_t y) {
                       return by_box[x * dims_ + d] < by_box[y * dims_ + d];
                     });
    Build(by_box, 2 * node, first, half, depth + 1);
    Build(by_box, 2 * node + 1, first + half, count - half, depth + 1);
    for (size_t c = 0; c < dims_; ++c) {
      min[c] = std::min(node_min_[2 * node * dims_ + c], node_min_[(2 * node + 1) * dims_ + c]);
      max[c] = std::max(node_max_[2 * node * dims_ + c], node_max_[(2 * node + 1) * dims_ + c]);
    }
  }

  size_t dims_;
  std::vector<size_t> box_at_;                // slot -> box; a node's points take consecutive slots
  std::vector<size_t> slot_of_;               // box -> slot
  std::vector<size_t> leaf_of_;               // slot -> the leaf node holding it
  std::vector<int64_t> point_;                // slot -> the box's point (dims_ coordinates)
  std::vector<uint8_t> active_;               // slot -> 1 when active
  std::vector<int64_t> node_min_, node_max_;  // node -> its points' bounding box
  std::vector<size_t> active_count_;          // node -> its active points
};

// The sweep: box i's partners are the boxes active when it starts (kept by `index`: Insert,
// Remove) that meet it on the other axes, which `find(i, &partners)` appends; visited in order.
template <typename Index, typename Find>
void Sweep(const BoxBounds& boxes, size_t sweep_axis, Index* index, const Find& find,
           const std::function<bool(size_t k, size_t i)>& visit) {
  // Active boxes by their end on the sweep axis, the nearest end on top.
  using End = std::pair<int64_t, size_t>;
  std::priority_queue<End, std::vector<End>, std::greater<End>> ends;
  std::vector<size_t> partners;
  for (size_t i = 0; i < boxes.size(); ++i) {
    const int64_t start = boxes.Lo(i, sweep_axis);
    while (!ends.empty() && ends.top().first <= start) {
      index->Remove(ends.top().second);
      ends.pop();
    }
    // Every active box began at or before `start` and ends after it, so it meets box i on the
    // sweep axis.
    partners.clear();
    find(i, &partners);
    std::sort(partners.begin(), partners.end());
    for (size_t k : partners) {
      if (!visit(k, i)) return;
    }
    index->Insert(i);
    ends.emplace(boxes.Hi(i, sweep_axis), i);
  }
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
  // The second axis matters only to the sweep of rank 2 (rank 1 has none, rank 3 and more a tree).
  const std::vector<size_t> counts =
      boxes.size() < 2 || boxes.rank != 2 ? std::vector<size_t>() : DistinctLowerBounds(boxes);
  ForEachOverlap(boxes, SweepAxes{sweep_axis, MostDistinct(counts, sweep_axis, sweep_axis)}, visit);
}

void ForEachOverlap(const BoxBounds& boxes, SweepAxes axes,
                    const std::function<bool(size_t k, size_t i)>& visit) {
  if (boxes.size() < 2) return;
  const size_t sweep_axis = axes.sweep;
  if (boxes.rank >= 3) {
    ActiveBoxTree active(boxes, sweep_axis);
    Sweep(
        boxes, sweep_axis, &active,
        [&](size_t i, std::vector<size_t>* out) { active.Meeting(i, out); }, visit);
    return;
  }
  const size_t index_axis = axes.index;
  ActiveIntervals active(boxes, index_axis);
  Sweep(
      boxes, sweep_axis, &active,
      [&](size_t i, std::vector<size_t>* out) {
        active.Meeting(boxes.Lo(i, index_axis), boxes.Hi(i, index_axis), out);
        out->erase(std::remove_if(out->begin(), out->end(),
                                  [&](size_t k) {
                                    return !MeetElsewhere(boxes, k, i, sweep_axis, index_axis);
                                  }),
                   out->end());
      },
      visit);
}

void BoxBounds::Add(const int64_t* box_lo, const int64_t* box_hi) {
  lo.insert(lo.end(), box_lo, box_lo + rank);
  hi.insert(hi.end(), box_hi, box_hi + rank);
}

BoxBounds SortedAlong(const BoxBounds& boxes, size_t axis, std::vector<size_t>* order) {
  std::vector<size_t> by_lo(boxes.size());
  for (size_t i = 0; i < by_lo.size(); ++i) by_lo[i] = i;
  std::stable_sort(by_lo.begin(), by_lo.end(),
                   [&](size_t x, size_t y) { return boxes.Lo(x, axis) < boxes.Lo(y, axis); });
  BoxBounds sorted;
  sorted.rank = boxes.rank;
  sorted.lo.reserve(boxes.lo.size());
  sorted.hi.reserve(boxes.hi.size());
  for (size_t i : by_lo) sorted.Add(&boxes.lo[i * boxes.rank], &boxes.hi[i * boxes.rank]);
  if (order != nullptr) *order = std::move(by_lo);
  return sorted;
}

}  // namespace ckptspec
