#include "cli/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/confined_view.h"

namespace ckptspec {
namespace {

Status NotRegular(const std::string& flag, const std::string& path, mode_t mode) {
  return Status::InvalidArgument(flag + " '" + path + "': " + FileKindName(mode) +
                                 ", not a regular file");
}

Status Failed(const std::string& flag, const std::string& path, const char* what, int error) {
  return Status::InvalidArgument(flag + " '" + path + "': " + what + ": " + std::strerror(error));
}

}  // namespace

Status CheckRegularFile(const std::string& flag, const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return Failed(flag, path, "cannot read", errno);
  if (!S_ISREG(st.st_mode)) return NotRegular(flag, path, st.st_mode);
  return Status::OK();
}

Status ReadRegularFile(const std::string& flag, const std::string& path, uint64_t max_bytes,
                       std::string* out) {
  CKPTSPEC_RETURN_IF_ERROR(CheckRegularFile(flag, path));
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Failed(flag, path, "cannot open", errno);
  struct stat st;
  Status s;
  if (fstat(fd, &st) != 0) {
    s = Failed(flag, path, "cannot read", errno);
  } else if (!S_ISREG(st.st_mode)) {
    s = NotRegular(flag, path, st.st_mode);
  } else if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    s = Status::InvalidArgument(flag + " '" + path + "': " + std::to_string(st.st_size) +
                                " bytes; at most " + std::to_string(max_bytes) + " are accepted");
  }
  if (s.ok()) {
    out->assign(static_cast<size_t>(st.st_size), '\0');
    size_t done = 0;
    while (done < out->size()) {
      const ssize_t n = read(fd, out->data() + done, out->size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        s = Failed(flag, path, "cannot read", errno);
        break;
      }
      if (n == 0) break;  // shrank while being read: what is there
      done += static_cast<size_t>(n);
    }
    out->resize(done);
  }
  close(fd);
  return s;
}

}  // namespace ckptspec
