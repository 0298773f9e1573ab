// An Env over another that kills its own process (SIGKILL) when the Nth file is created: the
// built-in adapter's "crash mid-save" fault, leaving a partial save on the real disk.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "targets/env/env.h"

namespace ckptspec {

class CrashingEnv : public Env {
 public:
  // Crashes at the `crash_at`-th NewWritableFile call (1 = the first).
  CrashingEnv(Env* base, int crash_at) : base_(base), crash_at_(crash_at) {}

  Status NewWritableFile(const std::string& path, std::unique_ptr<WritableFile>* out) override;
  Status NewRandomAccessFile(const std::string& path,
                             std::unique_ptr<RandomAccessFile>* out) override {
    return base_->NewRandomAccessFile(path, out);
  }
  Status GetFileSize(const std::string& path, uint64_t* size) override {
    return base_->GetFileSize(path, size);
  }
  Status FileExists(const std::string& path) override { return base_->FileExists(path); }
  Status IsDirectory(const std::string& path, bool* is_dir) override {
    return base_->IsDirectory(path, is_dir);
  }
  Status GetChildren(const std::string& dir, std::vector<std::string>* names) override {
    return base_->GetChildren(dir, names);
  }
  Status CreateDir(const std::string& dir) override { return base_->CreateDir(dir); }
  Status RemoveFile(const std::string& path) override { return base_->RemoveFile(path); }
  Status RemoveDir(const std::string& dir) override { return base_->RemoveDir(dir); }
  Status RenameFile(const std::string& src, const std::string& dst) override {
    return base_->RenameFile(src, dst);
  }
  Status SyncDir(const std::string& dir) override { return base_->SyncDir(dir); }
  Status RemoveTree(const std::string& path) override { return base_->RemoveTree(path); }

 private:
  Env* base_;
  const int crash_at_;
  std::atomic<int> created_{0};
};

}  // namespace ckptspec
