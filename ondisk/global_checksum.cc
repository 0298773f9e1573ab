#include "ondisk/global_checksum.h"

#include <cstring>

#include "device/element_compare.h"

namespace ckptspec {

ChunkChecksum::ChunkChecksum(const Dims& global_shape, const Box& box, size_t element_bytes)
    : global_shape_(global_shape),
      box_(box),
      element_bytes_(element_bytes),
      coord_(box.shape.size(), 0) {
  if (!box_.shape.empty()) row_length_ = box_.shape.back();
  row_global_ = static_cast<uint64_t>(LinearIndex(box_.offset, global_shape_));
}

void ChunkChecksum::AdvanceRow() {
  in_row_ = 0;
  // Next row: increment the local coordinates except the last axis, like an odometer.
  for (size_t axis = box_.shape.size() - 1; axis-- > 0;) {
    if (++coord_[axis] < box_.shape[axis]) break;
    coord_[axis] = 0;
  }
  Dims global = box_.offset;
  for (size_t axis = 0; axis + 1 < box_.shape.size(); ++axis) global[axis] += coord_[axis];
  row_global_ = static_cast<uint64_t>(LinearIndex(global, global_shape_));
}

void ChunkChecksum::AddElement(const unsigned char* element) {
  uint64_t bits = 0;
  if (element_bytes_ <= 8) {
    std::memcpy(&bits, element, element_bytes_);  // little-endian, zero-extended
  } else {
    uint64_t first = 0, last = 0;
    std::memcpy(&first, element, 8);
    std::memcpy(&last, element + element_bytes_ - 8, 8);
    bits = Mix64(first) ^ last;
  }
  sum_ += device::ChecksumTerm(bits, row_global_ + static_cast<uint64_t>(in_row_));
  if (++in_row_ == row_length_ && !box_.shape.empty()) AdvanceRow();
}

void ChunkChecksum::Update(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  if (partial_bytes_ > 0) {
    const size_t take = std::min(n, element_bytes_ - partial_bytes_);
    std::memcpy(partial_ + partial_bytes_, p, take);
    partial_bytes_ += take;
    p += take;
    n -= take;
    if (partial_bytes_ < element_bytes_) return;
    AddElement(partial_);
    partial_bytes_ = 0;
  }
  for (; n >= element_bytes_; p += element_bytes_, n -= element_bytes_) AddElement(p);
  std::memcpy(partial_, p, n);
  partial_bytes_ = n;
}

}  // namespace ckptspec
