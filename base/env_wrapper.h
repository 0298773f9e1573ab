// An Env that passes every call to another (LevelDB's EnvWrapper): the base of the Envs that change
// a few calls of another -- the confined views (confined_view.h), the built-in adapter's fault
// Envs -- each of which overrides only the calls it changes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/env.h"

namespace ckptspec {

class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(Env* base) : base_(base) {}  // `base` not owned; outlives this

  Status NewWritableFile(const std::string& path, std::unique_ptr<WritableFile>* out) override {
    return base_->NewWritableFile(path, out);
  }
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
  Status GetFileStoredSize(const std::string& path, uint64_t* size) override {
    return base_->GetFileStoredSize(path, size);
  }

 protected:
  Env* base() const { return base_; }

 private:
  Env* base_;
};

}  // namespace ckptspec
