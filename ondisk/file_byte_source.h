// A ByteSource (formats/byte_source.h) over a file opened through an Env: the readers of formats/
// see a checkpoint's files only through it.
#pragma once

#include <memory>
#include <string>

#include "formats/byte_source.h"
#include "base/env.h"
#include "base/resource_limits.h"

namespace ckptspec {

class FileByteSource final : public ByteSource {
 public:
  // Opens `path` through `env` (a confined view for untrusted checkpoints) and records its size.
  static Status Open(Env* env, const std::string& path, std::unique_ptr<FileByteSource>* out);

  uint64_t size() const override { return size_; }
  // Corruption naming the file when the range lies outside it, or when the file is shorter than
  // its size at opening (it shrank).
  Status Read(uint64_t offset, size_t n, void* out) const override;
  std::string name() const override { return path_; }

 private:
  FileByteSource() = default;
  std::string path_;
  uint64_t size_ = 0;
  std::unique_ptr<RandomAccessFile> file_;
};

// Reads the whole file `path` into `*out` when its size is within `limits.max_metadata_bytes`
// (checked before reading: LimitExceeded's message otherwise).
Status ReadIndexFile(Env* env, const std::string& path, const ResourceLimits& limits,
                     std::string* out);

}  // namespace ckptspec
