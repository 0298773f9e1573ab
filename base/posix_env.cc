// The POSIX Env: open/write/fsync/rename on the local file system.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/env.h"
#include "base/posix_confined_view.h"
#include "base/posix_file.h"
#include "base/posix_remove_tree.h"

namespace ckptspec {

Status PosixError(const std::string& context, int err) {
  const std::string msg = context + ": " + std::strerror(err);
  if (err == ENOENT) return Status::NotFound(msg);
  return Status::IOError(msg);
}

void ReadDirectoryNames(DIR* dir, std::vector<std::string>* names) {
  while (struct dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names->push_back(name);
  }
  ::closedir(dir);
  std::sort(names->begin(), names->end());
}

namespace {

class PosixWritableFile : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  // A destructor has nowhere to report: a caller that needs the result calls Close() first.
  ~PosixWritableFile() override { Close().IgnoreError(); }

  Status Append(const void* data, size_t size) override {
    if (fd_ < 0) return Status::FailedPrecondition(path_ + ": append after close");
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
      const ssize_t n = ::write(fd_, p, size);
      if (n < 0) {
        if (errno == EINTR) continue;
        return PosixError(path_, errno);
      }
      p += n;
      size -= static_cast<size_t>(n);
    }
    return Status::OK();
  }
  Status Sync() override {
    if (fd_ < 0) return Status::FailedPrecondition(path_ + ": sync after close");
    if (::fdatasync(fd_) != 0) return PosixError(path_, errno);
    return Status::OK();
  }
  Status Close() override {
    if (fd_ < 0) return Status::OK();
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) return PosixError(path_, errno);
    return Status::OK();
  }

 private:
  std::string path_;
  int fd_;
};

class PosixRandomAccessFile : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixRandomAccessFile() override { ::close(fd_); }

  Status Read(uint64_t offset, size_t size, void* out, size_t* bytes_read) const override {
    char* p = static_cast<char*>(out);
    size_t done = 0;
    while (done < size) {
      const ssize_t n = ::pread(fd_, p + done, size - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return PosixError(path_, errno);
      }
      if (n == 0) break;
      done += static_cast<size_t>(n);
    }
    *bytes_read = done;
    return Status::OK();
  }

 private:
  std::string path_;
  int fd_;
};

class PosixEnv : public Env {
 public:
  Status NewWritableFile(const std::string& path, std::unique_ptr<WritableFile>* out) override {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return PosixError(path, errno);
    out->reset(new PosixWritableFile(path, fd));
    return Status::OK();
  }
  Status NewRandomAccessFile(const std::string& path,
                             std::unique_ptr<RandomAccessFile>* out) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return PosixError(path, errno);
    out->reset(new PosixRandomAccessFile(path, fd));
    return Status::OK();
  }
  Status GetFileSize(const std::string& path, uint64_t* size) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return PosixError(path, errno);
    if (!S_ISREG(st.st_mode)) return Status::IOError(path + ": not a regular file");
    *size = static_cast<uint64_t>(st.st_size);
    return Status::OK();
  }
  Status FileExists(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return PosixError(path, errno);
    return Status::OK();
  }
  Status IsDirectory(const std::string& path, bool* is_dir) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return PosixError(path, errno);
    *is_dir = S_ISDIR(st.st_mode);
    return Status::OK();
  }
  Status GetChildren(const std::string& dir, std::vector<std::string>* names) override {
    names->clear();
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return PosixError(dir, errno);
    ReadDirectoryNames(d, names);
    return Status::OK();
  }
  Status CreateDir(const std::string& dir) override {
    if (::mkdir(dir.c_str(), 0755) != 0) {
      if (errno == EEXIST) {
        bool is_dir = false;
        CKPTSPEC_RETURN_IF_ERROR(IsDirectory(dir, &is_dir));
        if (is_dir) return Status::OK();
      }
      return PosixError(dir, errno);
    }
    return Status::OK();
  }
  Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return PosixError(path, errno);
    return Status::OK();
  }
  Status RemoveDir(const std::string& dir) override {
    if (::rmdir(dir.c_str()) != 0) return PosixError(dir, errno);
    return Status::OK();
  }
  Status RenameFile(const std::string& src, const std::string& dst) override {
    if (::rename(src.c_str(), dst.c_str()) != 0) return PosixError(src + " -> " + dst, errno);
    return Status::OK();
  }
  Status SyncDir(const std::string& dir) override {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return PosixError(dir, errno);
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0) return PosixError(dir, err);
    return Status::OK();
  }
  Status RemoveTree(const std::string& path) override { return PosixRemoveTree(path); }
  Status GetFileStoredSize(const std::string& path, uint64_t* size) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return PosixError(path, errno);
    if (!S_ISREG(st.st_mode)) return Status::IOError(path + ": not a regular file");
    *size = static_cast<uint64_t>(st.st_blocks) * 512;
    return Status::OK();
  }
  Status NewConfinedView(const std::string& root, std::unique_ptr<Env>* out) override {
    return NewPosixConfinedView(this, root, out);
  }
};

}  // namespace

std::unique_ptr<RandomAccessFile> AdoptPosixReadableFile(std::string path, int fd) {
  return std::make_unique<PosixRandomAccessFile>(std::move(path), fd);
}

Env* Env::Posix() {
  static PosixEnv* env = new PosixEnv();
  return env;
}

}  // namespace ckptspec
