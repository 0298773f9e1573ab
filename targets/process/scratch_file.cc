#include "targets/process/scratch_file.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace ckptspec {
namespace {

Status Fail(const std::string& path, const char* call) {
  const std::string message = path + ": " + call + ": " + strerror(errno);
  return errno == ENOENT ? Status::NotFound(message) : Status::IOError(message);
}

}  // namespace

Status WriteScratchFile(const std::string& path, const void* data, size_t size) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Fail(path, "open");
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const Status s = Fail(path, "write");
      close(fd);
      return s;
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  if (close(fd) != 0) return Fail(path, "close");
  return Status::OK();
}

Status ReadScratchFile(const std::string& path, uint64_t max_size, std::string* out) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Fail(path, "open");
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const Status s = Fail(path, "fstat");
    close(fd);
    return s;
  }
  if (static_cast<uint64_t>(st.st_size) > max_size) {
    close(fd);
    return Status::Corruption(path + ": " + std::to_string(st.st_size) + " bytes, more than " +
                              std::to_string(max_size));
  }
  out->assign(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < out->size()) {
    const ssize_t n = read(fd, out->data() + done, out->size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const Status s = Fail(path, "read");
      close(fd);
      return s;
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  close(fd);
  out->resize(done);
  return Status::OK();
}

Status EntryReader::Read(const std::string& file, const std::optional<FileRange>& range,
                         std::string* out) {
  if (!range) return ReadScratchFile(file, max_size_, out);
  if (path_ != file) {
    path_.reset();
    CKPTSPEC_RETURN_IF_ERROR(ReadScratchFile(file, max_size_, &bytes_));
    path_ = file;
  }
  if (range->end() > bytes_.size()) {
    return Status::InvalidArgument(file + ": bytes [" + std::to_string(range->offset) + ", " +
                                   std::to_string(range->end()) + ") asked of a file of " +
                                   std::to_string(bytes_.size()) + " bytes");
  }
  out->assign(bytes_, static_cast<size_t>(range->offset), static_cast<size_t>(range->length));
  return Status::OK();
}

Status EntryWriter::Write(const std::string& file, const std::optional<FileRange>& range,
                          const void* data, size_t size) {
  if (!range) return WriteScratchFile(file, data, size);
  if (path_ && *path_ != file) {
    return Status::InvalidArgument(
        file + ": a second packed file in one request (the first: " + *path_ + ")");
  }
  if (range->offset > max_size_ || size > max_size_ - range->offset) {
    return Status::InvalidArgument(file + ": " + std::to_string(size) + " bytes at offset " +
                                   std::to_string(range->offset) + " end past " +
                                   std::to_string(max_size_));
  }
  path_ = file;
  const uint64_t end = range->offset + size;
  if (end > bytes_.size()) bytes_.resize(static_cast<size_t>(end), '\0');
  std::copy_n(static_cast<const char*>(data), size,
              bytes_.begin() + static_cast<ptrdiff_t>(range->offset));
  return Status::OK();
}

Status EntryWriter::Finish() {
  if (!path_) return Status::OK();
  return WriteScratchFile(*path_, bytes_.data(), bytes_.size());
}

}  // namespace ckptspec
