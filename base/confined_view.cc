#include "base/confined_view.h"

#include <sys/stat.h>

namespace ckptspec {
namespace {

// The default view: paths checked lexically, reads passed on. Sound for an Env whose files can
// be neither links nor special files (MemEnv).
class LexicalConfinedView : public ConfinedView {
 public:
  using ConfinedView::ConfinedView;

  Status NewRandomAccessFile(const std::string& path,
                             std::unique_ptr<RandomAccessFile>* out) override {
    CKPTSPEC_RETURN_IF_ERROR(Check(path));
    return base()->NewRandomAccessFile(path, out);
  }
  Status GetFileSize(const std::string& path, uint64_t* size) override {
    CKPTSPEC_RETURN_IF_ERROR(Check(path));
    return base()->GetFileSize(path, size);
  }
  Status GetFileStoredSize(const std::string& path, uint64_t* size) override {
    CKPTSPEC_RETURN_IF_ERROR(Check(path));
    return base()->GetFileStoredSize(path, size);
  }
  Status FileExists(const std::string& path) override {
    CKPTSPEC_RETURN_IF_ERROR(Check(path));
    return base()->FileExists(path);
  }
  Status IsDirectory(const std::string& path, bool* is_dir) override {
    CKPTSPEC_RETURN_IF_ERROR(Check(path));
    return base()->IsDirectory(path, is_dir);
  }
  Status GetChildren(const std::string& dir, std::vector<std::string>* names) override {
    CKPTSPEC_RETURN_IF_ERROR(Check(dir));
    return base()->GetChildren(dir, names);
  }

 private:
  Status Check(const std::string& path) const {
    std::vector<std::string> components;
    return SplitBelowRoot(root(), path, &components);
  }
};

std::string WithoutTrailingSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

}  // namespace

Status SplitBelowRoot(const std::string& root, const std::string& path,
                      std::vector<std::string>* components) {
  components->clear();
  const std::string base = WithoutTrailingSlashes(root);
  const std::string prefix = base == "/" ? base : base + "/";
  auto outside = [&] {
    return Status::InvalidArgument(path + " is outside the checkpoint root " + root);
  };
  if (base.empty()) return outside();
  std::string rest;
  if (WithoutTrailingSlashes(path) == base) {
    return Status::OK();
  } else if (path.compare(0, prefix.size(), prefix) == 0) {
    rest = path.substr(prefix.size());
  } else {
    return outside();
  }
  size_t begin = 0;
  while (begin <= rest.size()) {
    size_t end = rest.find('/', begin);
    if (end == std::string::npos) end = rest.size();
    const std::string name = rest.substr(begin, end - begin);
    if (name == "..") return outside();
    if (!name.empty() && name != ".") components->push_back(name);
    begin = end + 1;
  }
  return Status::OK();
}

const char* FileKindName(unsigned mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "a special file";
}

Status LinkRefused(const std::string& path, bool leaves_root) {
  return Status::Corruption(path + " is a symbolic link " + (leaves_root ? "leaving" : "inside") +
                            " the checkpoint root; links are not followed");
}

Status NotRegularFile(const std::string& path, unsigned mode) {
  return Status::Corruption(path + " is " + FileKindName(mode) + ", not a regular file");
}

Status Env::GetFileStoredSize(const std::string& path, uint64_t* size) {
  return GetFileSize(path, size);
}

Status Env::NewConfinedView(const std::string& root, std::unique_ptr<Env>* out) {
  out->reset(new LexicalConfinedView(this, root));
  return Status::OK();
}

}  // namespace ckptspec
