#include "ondisk/file_byte_source.h"

namespace ckptspec {

Status FileByteSource::Open(Env* env, const std::string& path,
                            std::unique_ptr<FileByteSource>* out) {
  std::unique_ptr<FileByteSource> source(new FileByteSource());
  source->path_ = path;
  CKPTSPEC_RETURN_IF_ERROR(env->GetFileSize(path, &source->size_));
  CKPTSPEC_RETURN_IF_ERROR(env->NewRandomAccessFile(path, &source->file_));
  *out = std::move(source);
  return Status::OK();
}

Status FileByteSource::Read(uint64_t offset, size_t n, void* out) const {
  CKPTSPEC_RETURN_IF_ERROR(CheckRange(path_, size_, offset, n));
  return ReadExactly(*file_, path_, offset, n, out);
}

Status ReadIndexFile(Env* env, const std::string& path, const ResourceLimits& limits,
                     std::string* out) {
  uint64_t size = 0;
  CKPTSPEC_RETURN_IF_ERROR(env->GetFileSize(path, &size));
  if (size > limits.max_metadata_bytes) {
    return LimitExceeded(path, size, "bytes", &ResourceLimits::max_metadata_bytes, limits);
  }
  return ReadFileToString(env, path, limits.max_metadata_bytes, out);
}

}  // namespace ckptspec
