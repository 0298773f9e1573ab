// Checksums of byte ranges too large to hold in memory: XXH3-64 (seed 0) fed block by block,
// equal to Checksum() (format.h) of the whole range.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/status.h"
#include "base/env.h"

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

// [offset, offset + size) of a file, read in order one block at a time through one buffer and
// checksummed on the way. A short read is Corruption naming `path` (ReadExactly's message).
class RangeStream {
 public:
  RangeStream(const RandomAccessFile& file, std::string path, uint64_t offset, uint64_t size,
              std::vector<uint8_t>* buffer);

  // Reads the next block into the buffer; *more is false (and nothing is read) at the end.
  Status Next(bool* more);
  // The current block: where it starts in the range, its bytes.
  uint64_t block_begin() const { return begin_; }
  const uint8_t* block() const { return buffer_->data(); }
  size_t block_size() const { return block_size_; }
  // The range's checksum, once Next has said there is no more.
  uint64_t Digest() const { return checksum_.Digest(); }

 private:
  const RandomAccessFile& file_;
  std::string path_;
  uint64_t offset_, size_;
  std::vector<uint8_t>* buffer_;
  uint64_t begin_ = 0;
  size_t block_size_ = 0;
  ChecksumStream checksum_;
};

// Reads the whole range and sets *digest to its checksum.
Status ChecksumRange(const RandomAccessFile& file, const std::string& path, uint64_t offset,
                     uint64_t size, std::vector<uint8_t>* buffer, uint64_t* digest);

}  // namespace ckptspec
