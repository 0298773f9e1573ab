#include "base/posix_remove_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "base/env.h"

namespace ckptspec {
namespace {

Status Error(const std::string& path, const char* call, int err) {
  const std::string message = path + ": " + call + ": " + std::strerror(err);
  return err == ENOENT ? Status::NotFound(message) : Status::IOError(message);
}

// The names in the directory open at `fd` (no "." or ".."). Takes ownership of nothing: the
// listing uses a duplicate of `fd`.
Status ListNames(int fd, const std::string& path, std::vector<std::string>* names) {
  const int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) return Error(path, "fcntl", errno);
  DIR* dir = fdopendir(dup_fd);
  if (dir == nullptr) {
    const int err = errno;
    close(dup_fd);
    return Error(path, "fdopendir", err);
  }
  errno = 0;
  while (const dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names->push_back(name);
    errno = 0;
  }
  const int err = errno;
  closedir(dir);
  return err == 0 ? Status::OK() : Error(path, "readdir", err);
}

}  // namespace

Status PosixRemoveTreeAt(int parent_fd, const std::string& parent, const std::string& name) {
  const std::string path = JoinPath(parent, name);
  // A directory is opened without following a link; anything that is not one (a file, a link to
  // a directory, a FIFO) is unlinked where it stands.
  const int fd =
      openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno != ENOTDIR && errno != ELOOP) return Error(path, "open", errno);
    if (unlinkat(parent_fd, name.c_str(), 0) != 0) return Error(path, "unlink", errno);
    return Status::OK();
  }
  std::vector<std::string> names;
  Status status = ListNames(fd, path, &names);
  for (size_t i = 0; status.ok() && i < names.size(); ++i) {
    status = PosixRemoveTreeAt(fd, path, names[i]);
    if (status.code() == Status::Code::kNotFound) status = Status::OK();  // gone meanwhile
  }
  close(fd);
  if (!status.ok()) return status;
  if (unlinkat(parent_fd, name.c_str(), AT_REMOVEDIR) != 0) return Error(path, "rmdir", errno);
  return Status::OK();
}

Status PosixRemoveTree(const std::string& path) {
  std::string trimmed = path;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  if (trimmed.empty() || trimmed == "/" || trimmed == "." || trimmed == "..") {
    return Status::InvalidArgument("refusing to remove '" + path + "'");
  }
  const std::string parent = ParentDir(trimmed);
  const size_t slash = trimmed.rfind('/');
  const std::string name = slash == std::string::npos ? trimmed : trimmed.substr(slash + 1);
  if (name == "." || name == "..")
    return Status::InvalidArgument("refusing to remove '" + path + "'");
  const int parent_fd = open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (parent_fd < 0) return Error(parent, "open", errno);
  const Status status = PosixRemoveTreeAt(parent_fd, parent, name);
  close(parent_fd);
  return status;
}

}  // namespace ckptspec
