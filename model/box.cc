#include "model/box.h"

#include <algorithm>
#include <limits>

namespace ckptspec {

std::string DimsToString(const Dims& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(dims[i]);
  }
  if (dims.size() == 1) s += ",";
  return s + ")";
}

std::string BoxToString(const Box& box) {
  std::string s = "[";
  for (size_t i = 0; i < box.shape.size(); ++i) {
    if (i) s += ", ";
    const int64_t begin = i < box.offset.size() ? box.offset[i] : 0;
    int64_t end;
    if (__builtin_add_overflow(begin, box.shape[i], &end)) {
      // Only malformed boxes get here; describe them rather than overflow.
      s += std::to_string(begin) + ":+" + std::to_string(box.shape[i]);
    } else {
      s += std::to_string(begin) + ":" + std::to_string(end);
    }
  }
  return s + "]";
}

bool CheckedVolume(const Dims& shape, int64_t* out) {
  int64_t v = 1;
  for (int64_t extent : shape) {
    if (extent < 0) return false;
    if (extent != 0 && v > std::numeric_limits<int64_t>::max() / extent) return false;
    v *= extent;
  }
  *out = v;
  return true;
}

int64_t Volume(const Dims& shape) {
  int64_t v = 1;
  for (int64_t extent : shape) v *= extent;
  return v;
}

bool Intersect(const Box& a, const Box& b, Box* out) {
  if (a.rank() != b.rank()) return false;
  Box result;
  result.offset.resize(a.rank());
  result.shape.resize(a.rank());
  for (int i = 0; i < a.rank(); ++i) {
    const int64_t begin = std::max(a.offset[i], b.offset[i]);
    const int64_t end = std::min(a.offset[i] + a.shape[i], b.offset[i] + b.shape[i]);
    if (end <= begin) return false;
    result.offset[i] = begin;
    result.shape[i] = end - begin;
  }
  if (out) *out = std::move(result);
  return true;
}

bool Contains(const Box& outer, const Box& inner) {
  if (outer.rank() != inner.rank()) return false;
  for (int i = 0; i < inner.rank(); ++i) {
    if (inner.shape[i] == 0) return true;
  }
  for (int i = 0; i < inner.rank(); ++i) {
    if (inner.offset[i] < outer.offset[i]) return false;
    if (inner.offset[i] + inner.shape[i] > outer.offset[i] + outer.shape[i]) return false;
  }
  return true;
}

bool IsWithin(const Box& box, const Dims& global_shape) {
  if (box.offset.size() != global_shape.size() || box.shape.size() != global_shape.size()) {
    return false;
  }
  for (size_t i = 0; i < global_shape.size(); ++i) {
    if (box.offset[i] < 0 || box.shape[i] < 0 || global_shape[i] < 0) return false;
    if (box.offset[i] > global_shape[i] || box.shape[i] > global_shape[i] - box.offset[i]) {
      return false;
    }
  }
  return true;
}

int64_t LinearIndex(const Dims& coord, const Dims& shape) {
  int64_t index = 0;
  for (size_t i = 0; i < shape.size(); ++i) index = index * shape[i] + coord[i];
  return index;
}

bool RegularGrid::Make(const Dims& global_shape, const Dims& fragmentations, RegularGrid* out) {
  if (global_shape.size() != fragmentations.size()) return false;
  RegularGrid grid;
  grid.global_shape_ = global_shape;
  grid.fragmentations_ = fragmentations;
  grid.cell_shape_.resize(global_shape.size());
  for (size_t i = 0; i < global_shape.size(); ++i) {
    if (fragmentations[i] < 1 || global_shape[i] < 0) return false;
    if (global_shape[i] % fragmentations[i] != 0) return false;
    grid.cell_shape_[i] = global_shape[i] / fragmentations[i];
  }
  if (!CheckedVolume(fragmentations, &grid.num_cells_)) return false;
  *out = std::move(grid);
  return true;
}

bool RegularGrid::CellIndexOf(const Box& box, int64_t* cell_index) const {
  if (box.shape != cell_shape_ || box.offset.size() != cell_shape_.size()) return false;
  int64_t index = 0;
  for (size_t i = 0; i < cell_shape_.size(); ++i) {
    const int64_t extent = cell_shape_[i];
    int64_t cell = 0;
    if (extent == 0) {
      if (box.offset[i] != 0) return false;
    } else {
      if (box.offset[i] < 0 || box.offset[i] % extent != 0) return false;
      cell = box.offset[i] / extent;
      if (cell >= fragmentations_[i]) return false;
    }
    index = index * fragmentations_[i] + cell;
  }
  *cell_index = index;
  return true;
}

Box RegularGrid::CellBox(int64_t cell_index) const {
  Box box;
  const size_t rank = cell_shape_.size();
  box.offset.assign(rank, 0);
  box.shape = cell_shape_;
  for (size_t i = rank; i-- > 0;) {
    const int64_t cell = cell_index % fragmentations_[i];
    cell_index /= fragmentations_[i];
    box.offset[i] = cell * cell_shape_[i];
  }
  return box;
}

}  // namespace ckptspec
