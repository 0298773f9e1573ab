#include "targets/reference/tensor_destination.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace ckptspec {

Status CheckDestinationRange(uint64_t size, uint64_t offset, uint64_t n) {
  if (offset > size || n > size - offset) {
    return Status::InvalidArgument("write of " + std::to_string(n) + " bytes at offset " +
                                   std::to_string(offset) + " is outside a destination of " +
                                   std::to_string(size) + " bytes");
  }
  return Status::OK();
}

Status HostTensorDestination::Write(uint64_t offset, const void* src, uint64_t n) {
  CKPTSPEC_RETURN_IF_ERROR(CheckDestinationRange(bytes_->size(), offset, n));
  if (n > 0) std::memcpy(bytes_->data() + offset, src, n);
  return Status::OK();
}

Status HostTensorDestination::Zero() {
  std::fill(bytes_->begin(), bytes_->end(), 0);
  return Status::OK();
}

}  // namespace ckptspec
