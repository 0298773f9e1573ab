// Box arithmetic over n-dimensional index spaces: the regions of global tensors that shards hold.
//
// A Box is a half-open hyper-rectangle [offset, offset + shape) per axis. Shapes and offsets are
// int64. Functions that could overflow report it instead of wrapping.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/small_vector.h"

namespace ckptspec {

// Up to 6 axes inline (model/small_vector.h): no allocation for the shapes of real tensors.
using Dims = SmallVector<int64_t, 6>;

struct Box {
  Dims offset;
  Dims shape;

  int rank() const { return static_cast<int>(shape.size()); }
  bool operator==(const Box& other) const { return offset == other.offset && shape == other.shape; }
  bool operator!=(const Box& other) const { return !(*this == other); }
};

// "[0:4, 8:16]": the box as per-axis half-open ranges.
std::string BoxToString(const Box& box);
// "(2, 3)".
std::string DimsToString(const Dims& dims);

// Product of the extents. Returns false (and leaves *out alone) if an extent is negative or the
// product overflows int64. The empty product is 1.
bool CheckedVolume(const Dims& shape, int64_t* out);

// Volume of a box already known to be valid (e.g. inside a validated global shape).
int64_t Volume(const Dims& shape);

// True when a and b have equal rank and a non-empty intersection; writes it to *out if non-null.
bool Intersect(const Box& a, const Box& b, Box* out);

// True when `inner` lies entirely inside `outer` (equal ranks). An empty inner box is contained.
bool Contains(const Box& outer, const Box& inner);

// True when every offset is >= 0, every extent >= 0 and offset + extent <= global_shape per axis,
// with no overflow.
bool IsWithin(const Box& box, const Dims& global_shape);

// Row-major linear index of `coord` in `shape` (no bounds check beyond the caller's contract).
int64_t LinearIndex(const Dims& coord, const Dims& shape);

// A regular grid: the global shape split into `fragmentations[a]` equal cells along each axis a.
// Megatron's ShardedTensor with axis_fragmentations lives on such a grid.
class RegularGrid {
 public:
  // Returns false if ranks differ, a fragmentation is < 1, or it does not divide its axis.
  static bool Make(const Dims& global_shape, const Dims& fragmentations, RegularGrid* out);

  const Dims& global_shape() const { return global_shape_; }
  const Dims& fragmentations() const { return fragmentations_; }
  const Dims& cell_shape() const { return cell_shape_; }
  int64_t num_cells() const { return num_cells_; }

  // If `box` is exactly one cell, writes that cell's row-major index in the grid and returns true.
  bool CellIndexOf(const Box& box, int64_t* cell_index) const;
  // The box of the cell with this row-major index.
  Box CellBox(int64_t cell_index) const;

 private:
  Dims global_shape_;
  Dims fragmentations_;
  Dims cell_shape_;
  int64_t num_cells_ = 0;
};

}  // namespace ckptspec
