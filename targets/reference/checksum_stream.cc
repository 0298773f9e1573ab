#include "targets/reference/checksum_stream.h"

#include <xxhash.h>

#include <algorithm>
#include <new>

namespace ckptspec {

struct ChecksumStream::State {
  State() : xxh3(XXH3_createState()) {
    if (xxh3 == nullptr) throw std::bad_alloc();  // as `new` would
  }
  ~State() { XXH3_freeState(xxh3); }
  XXH3_state_t* xxh3;
};

ChecksumStream::ChecksumStream() : state_(new State) { XXH3_64bits_reset(state_->xxh3); }
ChecksumStream::~ChecksumStream() = default;

void ChecksumStream::Update(const void* data, size_t size) {
  XXH3_64bits_update(state_->xxh3, data, size);
}

uint64_t ChecksumStream::Digest() const { return XXH3_64bits_digest(state_->xxh3); }

RangeStream::RangeStream(const RandomAccessFile& file, std::string path, uint64_t offset,
                         uint64_t size, std::vector<uint8_t>* buffer)
    : file_(file), path_(std::move(path)), offset_(offset), size_(size), buffer_(buffer) {
  buffer_->resize(kStreamBlockBytes);
}

Status RangeStream::Next(bool* more) {
  begin_ += block_size_;
  block_size_ = 0;
  *more = begin_ < size_;
  if (!*more) return Status::OK();
  const size_t n = static_cast<size_t>(std::min<uint64_t>(size_ - begin_, kStreamBlockBytes));
  CKPTSPEC_RETURN_IF_ERROR(ReadExactly(file_, path_, offset_ + begin_, n, buffer_->data()));
  block_size_ = n;
  checksum_.Update(buffer_->data(), n);
  return Status::OK();
}

Status ChecksumRange(const RandomAccessFile& file, const std::string& path, uint64_t offset,
                     uint64_t size, std::vector<uint8_t>* buffer, uint64_t* digest) {
  RangeStream stream(file, path, offset, size, buffer);
  for (bool more = true; more;) CKPTSPEC_RETURN_IF_ERROR(stream.Next(&more));
  *digest = stream.Digest();
  return Status::OK();
}

}  // namespace ckptspec
