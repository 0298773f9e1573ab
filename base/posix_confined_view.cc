#include "base/posix_confined_view.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

#include "base/confined_view.h"
#include "base/posix_file.h"

namespace ckptspec {
namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;

// An owned descriptor.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.Release()) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) Reset(other.Release());
    return *this;
  }
  ~Fd() { Reset(-1); }
  int get() const { return fd_; }
  int Release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void Reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

// Lexically resolves `target` (a link's text) from the directory `dir` (components below the
// root); true when the result stays below the root. `real_root` is the root's canonical path,
// for absolute targets.
bool TargetStaysInside(std::vector<std::string> dir, const std::string& target,
                       const std::string& real_root) {
  std::string rest = target;
  if (!target.empty() && target[0] == '/') {
    const std::string prefix = real_root == "/" ? real_root : real_root + "/";
    if (real_root.empty() || target.compare(0, prefix.size(), prefix) != 0) return false;
    rest = target.substr(prefix.size());
    dir.clear();
  }
  size_t begin = 0;
  while (begin <= rest.size()) {
    size_t end = rest.find('/', begin);
    if (end == std::string::npos) end = rest.size();
    const std::string name = rest.substr(begin, end - begin);
    if (name == "..") {
      if (dir.empty()) return false;
      dir.pop_back();
    } else if (!name.empty() && name != ".") {
      dir.push_back(name);
    }
    begin = end + 1;
  }
  return true;
}

// A path being resolved: its components below the root, and how to name a prefix of it.
struct Walk {
  const std::string& root;
  std::vector<std::string> components;

  // The path down to component i (included), for messages.
  std::string Named(size_t i) const {
    std::string path = root;
    for (size_t k = 0; k <= i && k < components.size(); ++k) path = JoinPath(path, components[k]);
    return path;
  }
};

class PosixConfinedView : public ConfinedView {
 public:
  using ConfinedView::ConfinedView;

  Status NewRandomAccessFile(const std::string& path,
                             std::unique_ptr<RandomAccessFile>* out) override {
    Fd dir;
    Walk walk{root(), {}};
    struct stat before;
    CKPTSPEC_RETURN_IF_ERROR(StatRegularFile(path, &walk, &dir, &before));
    const std::string& name = walk.components.back();
    Fd file(::openat(dir.get(), name.c_str(),
                     O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (file.get() < 0) return Refusal(dir.get(), walk, walk.components.size() - 1, errno);
    struct stat now;
    if (::fstat(file.get(), &now) != 0) return PosixError(path, errno);
    if (!S_ISREG(now.st_mode)) return NotRegularFile(path, now.st_mode);
    if (now.st_ino != before.st_ino || now.st_dev != before.st_dev) {
      return Status::Corruption(path + " was replaced while it was being opened");
    }
    *out = AdoptPosixReadableFile(path, file.Release());
    return Status::OK();
  }

  Status GetFileSize(const std::string& path, uint64_t* size) override {
    struct stat st;
    CKPTSPEC_RETURN_IF_ERROR(StatRegularFile(path, &st));
    *size = static_cast<uint64_t>(st.st_size);
    return Status::OK();
  }

  Status GetFileStoredSize(const std::string& path, uint64_t* size) override {
    struct stat st;
    CKPTSPEC_RETURN_IF_ERROR(StatRegularFile(path, &st));
    *size = static_cast<uint64_t>(st.st_blocks) * 512;
    return Status::OK();
  }

  Status FileExists(const std::string& path) override {
    Fd dir;
    Walk walk{root(), {}};
    CKPTSPEC_RETURN_IF_ERROR(OpenParent(path, &walk, &dir));
    if (walk.components.empty()) return Status::OK();  // the root, open
    struct stat st;
    if (::fstatat(dir.get(), walk.components.back().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return PosixError(path, errno);
    }
    return Status::OK();  // a link exists too; reading through it is refused
  }

  Status IsDirectory(const std::string& path, bool* is_dir) override {
    Walk walk{root(), {}};
    CKPTSPEC_RETURN_IF_ERROR(SplitBelowRoot(root(), path, &walk.components));
    struct stat st;
    if (walk.components.empty()) {  // the root: the caller's, looked at as given
      if (::stat(root().c_str(), &st) != 0) return PosixError(root(), errno);
      *is_dir = S_ISDIR(st.st_mode);
      return Status::OK();
    }
    Fd dir;
    CKPTSPEC_RETURN_IF_ERROR(OpenParent(path, &walk, &dir));
    const size_t last = walk.components.size() - 1;
    if (::fstatat(dir.get(), walk.components[last].c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return PosixError(path, errno);
    }
    if (S_ISLNK(st.st_mode)) return Refusal(dir.get(), walk, last, ELOOP);
    *is_dir = S_ISDIR(st.st_mode);
    return Status::OK();
  }

  Status GetChildren(const std::string& path, std::vector<std::string>* names) override {
    names->clear();
    Fd dir;
    Walk walk{root(), {}};
    CKPTSPEC_RETURN_IF_ERROR(OpenParent(path, &walk, &dir));
    if (!walk.components.empty()) {
      const size_t last = walk.components.size() - 1;
      Fd inner(::openat(dir.get(), walk.components[last].c_str(), kDirFlags));
      if (inner.get() < 0) return Refusal(dir.get(), walk, last, errno);
      dir = std::move(inner);
    }
    DIR* d = ::fdopendir(dir.get());
    if (d == nullptr) return PosixError(path, errno);
    dir.Release();  // closedir closes it
    ReadDirectoryNames(d, names);
    return Status::OK();
  }

 private:
  // Opens the directory holding the path's last component (the root itself for a path of one
  // component, or for the root). *walk receives the components.
  Status OpenParent(const std::string& path, Walk* walk, Fd* dir) {
    CKPTSPEC_RETURN_IF_ERROR(SplitBelowRoot(root(), path, &walk->components));
    Fd fd(::open(root().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK));
    if (fd.get() < 0) return PosixError(root(), errno);
    for (size_t i = 0; i + 1 < walk->components.size(); ++i) {
      Fd next(::openat(fd.get(), walk->components[i].c_str(), kDirFlags));
      if (next.get() < 0) return Refusal(fd.get(), *walk, i, errno);
      fd = std::move(next);
    }
    *dir = std::move(fd);
    return Status::OK();
  }

  Status StatRegularFile(const std::string& path, struct stat* st) {
    Fd dir;
    Walk walk{root(), {}};
    return StatRegularFile(path, &walk, &dir, st);
  }

  // Looks at the path's last component without following it; OK only for a regular file.
  Status StatRegularFile(const std::string& path, Walk* walk, Fd* dir, struct stat* st) {
    CKPTSPEC_RETURN_IF_ERROR(OpenParent(path, walk, dir));
    if (walk->components.empty()) return NotRegularFile(path, S_IFDIR);
    const size_t last = walk->components.size() - 1;
    if (::fstatat(dir->get(), walk->components[last].c_str(), st, AT_SYMLINK_NOFOLLOW) != 0) {
      return PosixError(path, errno);
    }
    if (S_ISLNK(st->st_mode)) return Refusal(dir->get(), *walk, last, ELOOP);
    if (!S_ISREG(st->st_mode)) return NotRegularFile(path, st->st_mode);
    return Status::OK();
  }

  // Why component i (in the directory open at `dir`) could not be opened (`err`): a link is
  // refused as such, anything else is the system's error.
  Status Refusal(int dir, const Walk& walk, size_t i, int err) {
    const std::string& name = walk.components[i];
    const std::string named = walk.Named(i);
    struct stat st;
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      return PosixError(named, errno);
    if (!S_ISLNK(st.st_mode)) {
      if (err == ENOTDIR || (err == ELOOP && !S_ISDIR(st.st_mode))) {
        return Status::IOError(named + " is " + FileKindName(st.st_mode) + ", not a directory");
      }
      return PosixError(named, err);
    }
    std::vector<char> target(PATH_MAX + 1);
    const ssize_t n = ::readlinkat(dir, name.c_str(), target.data(), target.size());
    bool inside = false;
    if (n >= 0 && static_cast<size_t>(n) < target.size()) {
      char* real = ::realpath(root().c_str(), nullptr);
      const std::string real_root = real != nullptr ? real : "";
      std::free(real);
      const std::vector<std::string> parent(walk.components.begin(), walk.components.begin() + i);
      inside =
          TargetStaysInside(parent, std::string(target.data(), static_cast<size_t>(n)), real_root);
    }
    return LinkRefused(named, !inside);
  }
};

}  // namespace

Status NewPosixConfinedView(Env* base, const std::string& root, std::unique_ptr<Env>* out) {
  out->reset(new PosixConfinedView(base, root));
  return Status::OK();
}

}  // namespace ckptspec
