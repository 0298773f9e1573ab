#include "crash/initial_tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>

namespace ckptspec {

namespace {

FileId IdOfStat(const struct stat& st) {
  return FileId{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

const char* KindOfMode(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISFIFO(mode)) return "a fifo";
  if (S_ISSOCK(mode)) return "a socket";
  return "neither a regular file nor a directory";
}

Status ReadWholeFile(const std::string& full, uint64_t size, std::string* out) {
  const int fd = open(full.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Status::IOError("cannot open '" + full + "': " + strerror(errno));
  out->assign(size, '\0');
  uint64_t done = 0;
  while (done < size) {
    const ssize_t got = read(fd, &(*out)[done], size - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      const std::string why = got < 0 ? strerror(errno) : "it shrank while being read";
      close(fd);
      return Status::IOError("cannot read '" + full + "': " + why);
    }
    done += static_cast<uint64_t>(got);
  }
  close(fd);
  return Status::OK();
}

class TreeSnapshotter {
 public:
  TreeSnapshotter(const std::string& root, uint64_t max_bytes, InitialTree* out)
      : root_(root), max_bytes_(max_bytes), out_(out) {}

  Status Walk(const std::string& relative) {
    const std::string dir = relative.empty() ? root_ : root_ + "/" + relative;
    std::vector<std::string> names;
    CKPTSPEC_RETURN_IF_ERROR(ListNames(dir, &names));
    for (const std::string& name : names) {
      const std::string path = relative.empty() ? name : relative + "/" + name;
      const std::string full = root_ + "/" + path;
      struct stat st {};
      if (lstat(full.c_str(), &st) != 0) {
        return Status::IOError("cannot lstat '" + full + "': " + strerror(errno));
      }
      InitialEntry entry;
      entry.path = path;
      entry.id = IdOfStat(st);
      if (S_ISDIR(st.st_mode)) {
        entry.is_dir = true;
        out_->entries.push_back(std::move(entry));
        CKPTSPEC_RETURN_IF_ERROR(Walk(path));
        continue;
      }
      if (!S_ISREG(st.st_mode)) {
        return Status::InvalidArgument("'" + path + "' under the snapshot root '" + root_ +
                                       "' is " + KindOfMode(st.st_mode) +
                                       ": only regular files and directories can be replayed");
      }
      auto seen = contents_.find(entry.id);
      if (seen != contents_.end()) {
        entry.content = out_->entries[seen->second].content;
      } else {
        const uint64_t size = static_cast<uint64_t>(st.st_size);
        if (size > max_bytes_ - bytes_) {
          return Status::InvalidArgument("the snapshot of '" + root_ + "' holds more than " +
                                         std::to_string(max_bytes_) + " bytes of content (at '" +
                                         path + "', " + std::to_string(size) + " bytes)");
        }
        bytes_ += size;
        CKPTSPEC_RETURN_IF_ERROR(ReadWholeFile(full, size, &entry.content));
        contents_[entry.id] = out_->entries.size();
      }
      out_->entries.push_back(std::move(entry));
    }
    return Status::OK();
  }

 private:
  static Status ListNames(const std::string& dir, std::vector<std::string>* names) {
    DIR* handle = opendir(dir.c_str());
    if (handle == nullptr) return Status::IOError("cannot list '" + dir + "': " + strerror(errno));
    errno = 0;
    while (const struct dirent* entry = readdir(handle)) {
      const std::string name = entry->d_name;
      if (name != "." && name != "..") names->push_back(name);
      errno = 0;
    }
    const int err = errno;
    closedir(handle);
    if (err != 0) return Status::IOError("cannot list '" + dir + "': " + strerror(err));
    std::sort(names->begin(), names->end());
    return Status::OK();
  }

  const std::string root_;
  const uint64_t max_bytes_;
  InitialTree* out_;
  uint64_t bytes_ = 0;
  std::map<FileId, size_t> contents_;  // a file read already -> its first entry
};

}  // namespace

Status SnapshotDirectory(const std::string& root, uint64_t max_bytes, InitialTree* out) {
  *out = InitialTree();
  struct stat st {};
  if (lstat(root.c_str(), &st) != 0) {
    return Status::IOError("cannot lstat the snapshot root '" + root + "': " + strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument("the snapshot root '" + root + "' is not a directory");
  }
  out->root = IdOfStat(st);
  return TreeSnapshotter(root, max_bytes, out).Walk("");
}

}  // namespace ckptspec
