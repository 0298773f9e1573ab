#include "targets/process/scratch_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "base/confined_view.h"
#include "base/env.h"
#include "base/posix_remove_tree.h"

namespace ckptspec {
namespace {

std::string Errno(const std::string& path, const char* call) {
  return path + ": " + call + ": " + std::strerror(errno);
}

std::string RandomHex16() {
  static thread_local std::mt19937_64 bits{std::random_device{}()};
  static const char kHex[] = "0123456789abcdef";
  uint64_t value = bits();
  std::string out(16, '0');
  for (char& c : out) {
    c = kHex[value & 15];
    value >>= 4;
  }
  return out;
}

// Entry names are plain names of the call directory: openat would resolve an absolute name, or
// one with a '/', outside it.
bool IsPlainName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

}  // namespace

ScratchDir::ScratchDir(int parent_fd, std::string parent_path, std::string name, int fd)
    : parent_fd_(parent_fd),
      parent_path_(std::move(parent_path)),
      name_(std::move(name)),
      fd_(fd) {}

// A destructor has nowhere to report: a directory it cannot remove stays under the scratch root
// (scratch_dir.h), and the cleanup registry removes what is left at a fatal signal.
ScratchDir::~ScratchDir() {
  close(fd_);
  (void)PosixRemoveTreeAt(parent_fd_, parent_path_, name_);
}

std::string ScratchDir::PathOf(const std::string& name) const {
  return JoinPath(JoinPath(parent_path_, name_), name);
}

Status ScratchDir::Write(const std::string& name, const void* data, size_t size) {
  if (!IsPlainName(name))
    return Status::InvalidArgument("scratch entry name '" + name + "' is not a plain name");
  const int fd =
      openat(fd_, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IOError(Errno(PathOf(name), "open"));
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const Status s = Status::IOError(Errno(PathOf(name), "write"));
      close(fd);
      return s;
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  if (close(fd) != 0) return Status::IOError(Errno(PathOf(name), "close"));
  return Status::OK();
}

ScratchDir::ReadResult ScratchDir::Read(const std::string& name, uint64_t max_size,
                                        std::string* out, std::string* what) const {
  out->clear();
  if (!IsPlainName(name)) {
    *what = "scratch entry name '" + name + "' is not a plain name";
    return ReadResult::kError;
  }
  const int fd = openat(fd_, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return ReadResult::kMissing;
    if (errno == ELOOP) {
      *what = "a symbolic link";
      return ReadResult::kUnsafe;
    }
    *what = Errno(PathOf(name), "open");
    return ReadResult::kError;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    *what = Errno(PathOf(name), "fstat");
    close(fd);
    return ReadResult::kError;
  }
  if (!S_ISREG(st.st_mode)) {
    *what = FileKindName(st.st_mode);
    close(fd);
    return ReadResult::kUnsafe;
  }
  if (static_cast<uint64_t>(st.st_size) > max_size) {
    *what = std::to_string(st.st_size) + " bytes";
    close(fd);
    return ReadResult::kTooLarge;
  }
  out->resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < out->size()) {
    const ssize_t n = read(fd, out->data() + done, out->size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *what = Errno(PathOf(name), "read");
      close(fd);
      return ReadResult::kError;
    }
    if (n == 0) break;  // the file shrank meanwhile: what was read is what it holds
    done += static_cast<size_t>(n);
  }
  close(fd);
  out->resize(done);
  return ReadResult::kOk;
}

Status ScratchSpace::Open(const std::string& work_dir, std::unique_ptr<ScratchSpace>* out) {
  const int fd = open(work_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Status::IOError(Errno(work_dir, "open"));
  out->reset(new ScratchSpace(work_dir, fd));
  return Status::OK();
}

ScratchSpace::~ScratchSpace() { close(fd_); }

Status ScratchSpace::NewCallDir(std::unique_ptr<ScratchDir>* out) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    const std::string name = "call-" + RandomHex16();
    if (mkdirat(fd_, name.c_str(), 0700) != 0) {
      if (errno == EEXIST) continue;  // taken (planted, or by chance): another name
      return Status::IOError(Errno(JoinPath(path_, name), "mkdir"));
    }
    const int fd = openat(fd_, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return Status::IOError(Errno(JoinPath(path_, name), "open"));
    out->reset(new ScratchDir(fd_, path_, name, fd));
    return Status::OK();
  }
  return Status::IOError(path_ + ": no fresh scratch directory name after 16 attempts");
}

}  // namespace ckptspec
