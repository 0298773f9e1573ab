// The layout-independent checksum of a tensor's values: the device checks' checksum
// (device/ckptspec_device.h, "Checksums"): the sum mod 2^64 of Mix64(bits ^ (global index *
// salt)) over the elements, bits zero-extended. The checksums of disjoint chunks add up to the
// tensor's, so two checkpoints of one model saved under different layouts print the same value.
// Elements wider than 8 bytes (complex64 is 8; complex128 is 16) contribute Mix64 of their first
// 8 bytes XOR their last 8.
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/box.h"

namespace ckptspec {

// Accumulates the elements of one chunk, `box` of a tensor of `global_shape`, fed in row-major
// order in pieces of any size.
class ChunkChecksum {
 public:
  ChunkChecksum(const Dims& global_shape, const Box& box, size_t element_bytes);
  // The next `n` bytes of the chunk; `n` need not be a multiple of the element size.
  void Update(const void* data, size_t n);
  uint64_t value() const { return sum_; }

 private:
  void AddElement(const unsigned char* element);
  void AdvanceRow();

  Dims global_shape_;
  Box box_;
  size_t element_bytes_;
  uint64_t sum_ = 0;
  Dims coord_;                 // local coordinates of the current row's first element
  uint64_t row_global_ = 0;    // global index of the current row's first element
  int64_t in_row_ = 0;         // elements of the current row done
  int64_t row_length_ = 1;     // the box's last extent (1 for a scalar)
  unsigned char partial_[16];  // an element split across Update calls
  size_t partial_bytes_ = 0;
};

}  // namespace ckptspec
