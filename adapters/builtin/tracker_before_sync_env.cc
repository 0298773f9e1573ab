#include "adapters/builtin/tracker_before_sync_env.h"

#include <unistd.h>

namespace ckptspec {

namespace {

// A file whose Sync does nothing: its data stays in the page cache until sync(2).
class UnsyncedFile : public WritableFile {
 public:
  explicit UnsyncedFile(std::unique_ptr<WritableFile> base) : base_(std::move(base)) {}
  Status Append(const void* data, size_t size) override { return base_->Append(data, size); }
  Status Sync() override { return Status::OK(); }
  Status Close() override { return base_->Close(); }

 private:
  std::unique_ptr<WritableFile> base_;
};

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

bool TrackerBeforeSyncEnv::InIterationDir(const std::string& path) {
  for (size_t at = 0; at < path.size();) {
    const size_t end = std::min(path.find('/', at), path.size());
    if (path.compare(at, 5, "iter_") == 0 && end - at >= 5) return true;
    at = end + 1;
  }
  return false;
}

Status TrackerBeforeSyncEnv::NewWritableFile(const std::string& path,
                                             std::unique_ptr<WritableFile>* out) {
  CKPTSPEC_RETURN_IF_ERROR(base()->NewWritableFile(path, out));
  if (InIterationDir(path)) *out = std::make_unique<UnsyncedFile>(std::move(*out));
  return Status::OK();
}

Status TrackerBeforeSyncEnv::RenameFile(const std::string& src, const std::string& dst) {
  CKPTSPEC_RETURN_IF_ERROR(base()->RenameFile(src, dst));
  if (BaseName(dst) != tracker_name_) return Status::OK();
  // The tracker is published first (its directory synced), the data it names only then.
  CKPTSPEC_RETURN_IF_ERROR(base()->SyncDir(ParentDir(dst)));
  sync();
  return Status::OK();
}

Status TrackerBeforeSyncEnv::SyncDir(const std::string& dir) {
  return InIterationDir(dir) ? Status::OK() : base()->SyncDir(dir);
}

}  // namespace ckptspec
