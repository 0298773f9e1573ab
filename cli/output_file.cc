#include "cli/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ckptspec {

OutputFile::~OutputFile() {
  if (fd_ >= 0) close(fd_);
}

Status OutputFile::Error(const std::string& what, int error) const {
  return Status::IOError(flag_ + " '" + path_ + "': " + what + ": " + std::strerror(error));
}

Status OutputFile::Open(const std::string& flag, const std::string& path) {
  if (fd_ >= 0) close(fd_);
  flag_ = flag;
  path_ = path;
  // O_NONBLOCK: opening a FIFO for writing with no reader fails (ENXIO) instead of waiting.
  fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0666);
  if (fd_ < 0) {
    const int error = errno;
    // ENXIO: a FIFO no process reads (the non-blocking open refuses it instead of waiting).
    return Status::InvalidArgument(Error(error == ENXIO
                                             ? "cannot open for writing (a FIFO without a reader?)"
                                             : "cannot open for writing",
                                         error)
                                       .message());
  }
  const int flags = fcntl(fd_, F_GETFL);
  if (flags < 0 || fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK) < 0) {
    const int error = errno;
    close(fd_);
    fd_ = -1;
    return Status::InvalidArgument(Error("cannot open for writing", error).message());
  }
  return Status::OK();
}

Status OutputFile::WriteAndClose(const std::string& text) {
  if (fd_ < 0) return Status::OK();
  const int fd = fd_;
  fd_ = -1;
  // Emptied only now: a run that ends early leaves an earlier report as it was.
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ftruncate(fd, 0) != 0) {
    const int error = errno;
    close(fd);
    return Error("cannot write", error);
  }
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : EIO;
      close(fd);
      return Error("cannot write", error);
    }
    done += static_cast<size_t>(n);
  }
  if (close(fd) != 0) return Error("cannot write", errno);
  return Status::OK();
}

}  // namespace ckptspec
