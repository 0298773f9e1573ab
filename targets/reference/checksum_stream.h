// Checksums of byte ranges too large to hold in memory: XXH3-64 (seed 0) fed block by block,
// equal to Checksum() (format.h) of the whole range.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/status.h"
#include "targets/env/env.h"

namespace ckptspec {

// The size of one read while a range is streamed; the only memory a streamed range costs.
inline constexpr size_t kStreamBlockBytes = size_t{1} << 20;

class ChecksumStream {
 public:
  ChecksumStream();
  ~ChecksumStream();
  ChecksumStream(const ChecksumStream&) = delete;
  ChecksumStream& operator=(const ChecksumStream&) = delete;

  void Update(const void* data, size_t size);
  uint64_t Digest() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Reads [offset, offset + size) of `file` in blocks of at most kStreamBlockBytes through
// *buffer (resized to one block), calling on_block(range_offset, data, n) for each block in order
// (range_offset counts from `offset`), and sets *digest to the range's checksum. A short read is
// Corruption naming `path` (ReadExactly's message). on_block returning a non-OK Status stops the
// read and is returned.
template <typename OnBlock>
Status StreamRange(const RandomAccessFile& file, const std::string& path, uint64_t offset,
                   uint64_t size, std::vector<uint8_t>* buffer, OnBlock on_block,
                   uint64_t* digest) {
  buffer->resize(kStreamBlockBytes);
  ChecksumStream stream;
  for (uint64_t done = 0; done < size;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(size - done, kStreamBlockBytes));
    CKPTSPEC_RETURN_IF_ERROR(ReadExactly(file, path, offset + done, n, buffer->data()));
    stream.Update(buffer->data(), n);
    CKPTSPEC_RETURN_IF_ERROR(on_block(done, buffer->data(), n));
    done += n;
  }
  *digest = stream.Digest();
  return Status::OK();
}

}  // namespace ckptspec
