#include "formats/byte_source.h"

#include <cstring>

namespace ckptspec {

Status CheckRange(const std::string& name, uint64_t size, uint64_t offset, uint64_t n) {
  if (offset <= size && n <= size - offset) return Status::OK();
  return Status::Corruption(name + ": bytes [" + std::to_string(offset) + ", " +
                            std::to_string(offset) + " + " + std::to_string(n) +
                            ") lie outside its " + std::to_string(size) + " bytes");
}

Status MemoryByteSource::Read(uint64_t offset, size_t n, void* out) const {
  CKPTSPEC_RETURN_IF_ERROR(CheckRange(name_, bytes_.size(), offset, n));
  if (n > 0) std::memcpy(out, bytes_.data() + offset, n);
  return Status::OK();
}

Status WindowByteSource::Make(const ByteSource& base, uint64_t offset, uint64_t size,
                              WindowByteSource* out) {
  CKPTSPEC_RETURN_IF_ERROR(CheckRange(base.name(), base.size(), offset, size));
  out->base_ = &base;
  out->offset_ = offset;
  out->size_ = size;
  return Status::OK();
}

Status WindowByteSource::Read(uint64_t offset, size_t n, void* out) const {
  CKPTSPEC_RETURN_IF_ERROR(CheckRange(name(), size_, offset, n));
  return base_->Read(offset_ + offset, n, out);
}

std::string WindowByteSource::name() const {
  if (base_ == nullptr) return "(empty window)";
  return base_->name() + "[" + std::to_string(offset_) + ", +" + std::to_string(size_) + ")";
}

}  // namespace ckptspec
