#include "base/fault_injection_env.h"

#include <algorithm>
#include <cstdint>

namespace ckptspec {

class FaultInjectionEnv::CountedWritableFile : public WritableFile {
 public:
  CountedWritableFile(FaultInjectionEnv* env, std::string path, std::unique_ptr<WritableFile> file,
                      int64_t generation)
      : env_(env), path_(std::move(path)), file_(std::move(file)), generation_(generation) {}

  Status Append(const void* data, size_t size) override {
    std::lock_guard<std::mutex> lock(env_->mu_);
    CKPTSPEC_RETURN_IF_ERROR(env_->BeginOp("Append", path_));
    CKPTSPEC_RETURN_IF_ERROR(Alive());
    for (const std::string& s : env_->fail_writes_) {
      if (path_.find(s) != std::string::npos) {
        return Status::IOError(path_ + ": injected write error");
      }
    }
    return file_->Append(data, size);
  }
  Status Sync() override {
    std::lock_guard<std::mutex> lock(env_->mu_);
    CKPTSPEC_RETURN_IF_ERROR(env_->BeginOp("Sync", path_));
    CKPTSPEC_RETURN_IF_ERROR(Alive());
    return file_->Sync();
  }
  Status Close() override {
    std::lock_guard<std::mutex> lock(env_->mu_);
    if (closed_) return Status::OK();
    closed_ = true;
    CKPTSPEC_RETURN_IF_ERROR(env_->BeginOp("Close", path_));
    if (generation_ != env_->generation_) return Status::IOError(path_ + ": file died in a crash");
    return file_->Close();
  }

 private:
  Status Alive() const {
    if (closed_) return Status::FailedPrecondition(path_ + ": use after close");
    if (generation_ != env_->generation_) return Status::IOError(path_ + ": file died in a crash");
    return Status::OK();
  }
  FaultInjectionEnv* env_;
  std::string path_;
  std::unique_ptr<WritableFile> file_;
  int64_t generation_;
  bool closed_ = false;
};

class FaultInjectionEnv::CountedRandomAccessFile : public RandomAccessFile {
 public:
  CountedRandomAccessFile(FaultInjectionEnv* env, std::string path,
                          std::unique_ptr<RandomAccessFile> file)
      : env_(env), path_(std::move(path)), file_(std::move(file)) {}
  Status Read(uint64_t offset, size_t size, void* out, size_t* bytes_read) const override {
    std::lock_guard<std::mutex> lock(env_->mu_);
    return env_->ReadLocked(*file_, path_, offset, size, out, bytes_read);
  }

 private:
  FaultInjectionEnv* env_;
  std::string path_;
  std::unique_ptr<RandomAccessFile> file_;
};

FaultInjectionEnv::FaultInjectionEnv(Env* base) : EnvWrapper(base) {}
FaultInjectionEnv::~FaultInjectionEnv() = default;

Status FaultInjectionEnv::BeginOp(const char* name, const std::string& path) {
  const int64_t k = ops_++;
  log_.push_back(OpRecord{k, name, log_paths_.size(), path.size()});
  log_paths_ += path;
  if (crash_at_ >= 0 && k >= crash_at_) crashed_ = true;
  if (crashed_) return Status::IOError(path + ": " + name + " after a simulated crash");
  auto it = std::find(fail_ops_.begin(), fail_ops_.end(), k);
  if (it != fail_ops_.end()) {
    fail_ops_.erase(it);
    return Status::IOError(path + ": injected I/O error in " + name + " (operation " +
                           std::to_string(k) + ")");
  }
  return Status::OK();
}

uint64_t FaultInjectionEnv::VisibleSize(const std::string& path, uint64_t size) const {
  for (const ReadFault& f : read_faults_) {
    if (f.path == path && f.kind == ReadFault::Kind::kTruncate) size = std::min(size, f.offset);
  }
  return size;
}

Status FaultInjectionEnv::ReadLocked(const RandomAccessFile& file, const std::string& path,
                                     uint64_t offset, size_t size, void* out, size_t* bytes_read) {
  CKPTSPEC_RETURN_IF_ERROR(BeginOp("Read", path));
  const uint64_t visible = VisibleSize(path, UINT64_MAX);
  size_t n = 0;
  if (offset < visible) {
    const size_t wanted = static_cast<size_t>(std::min<uint64_t>(size, visible - offset));
    if (wanted > 0) CKPTSPEC_RETURN_IF_ERROR(file.Read(offset, wanted, out, &n));
  }
  for (const ReadFault& f : read_faults_) {
    if (f.path == path && f.kind == ReadFault::Kind::kFlipBit && f.offset >= offset &&
        f.offset < offset + n) {
      static_cast<uint8_t*>(out)[f.offset - offset] ^= static_cast<uint8_t>(1u << (f.bit & 7));
    }
  }
  *bytes_read = n;
  return Status::OK();
}

Status FaultInjectionEnv::NewWritableFile(const std::string& path,
                                          std::unique_ptr<WritableFile>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  CKPTSPEC_RETURN_IF_ERROR(BeginOp("NewWritableFile", path));
  std::unique_ptr<WritableFile> file;
  CKPTSPEC_RETURN_IF_ERROR(base()->NewWritableFile(path, &file));
  out->reset(new CountedWritableFile(this, path, std::move(file), generation_));
  return Status::OK();
}

Status FaultInjectionEnv::NewRandomAccessFile(const std::string& path,
                                              std::unique_ptr<RandomAccessFile>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  CKPTSPEC_RETURN_IF_ERROR(BeginOp("NewRandomAccessFile", path));
  std::unique_ptr<RandomAccessFile> file;
  CKPTSPEC_RETURN_IF_ERROR(base()->NewRandomAccessFile(path, &file));
  out->reset(new CountedRandomAccessFile(this, path, std::move(file)));
  return Status::OK();
}

Status FaultInjectionEnv::GetFileSize(const std::string& path, uint64_t* size) {
  std::lock_guard<std::mutex> lock(mu_);
  CKPTSPEC_RETURN_IF_ERROR(BeginOp("GetFileSize", path));
  CKPTSPEC_RETURN_IF_ERROR(base()->GetFileSize(path, size));
  *size = VisibleSize(path, *size);
  return Status::OK();
}

Status FaultInjectionEnv::GetFileStoredSize(const std::string& path, uint64_t* size) {
  std::lock_guard<std::mutex> lock(mu_);
  CKPTSPEC_RETURN_IF_ERROR(BeginOp("GetFileStoredSize", path));
  CKPTSPEC_RETURN_IF_ERROR(base()->GetFileStoredSize(path, size));
  *size = VisibleSize(path, *size);
  return Status::OK();
}

Status FaultInjectionEnv::FileExists(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  CKPTSPEC_RETURN_IF_ERROR(BeginOp("FileExists", path));
  return base()->FileExists(path);
}

Status FaultInjectionEnv::IsDirectory(const std::string& path, bool* is_dir) {
  std::lock_guard<std::mutex> lock(mu_);
  CKPTSPEC_RETURN_IF_ERROR(BeginOp("IsDirectory", path));
  return base()->IsDirectory(path, is_dir);
}

Status FaultInjectionEnv::GetChildren(const std::string& dir, std::vector<std::string>* names) {
  std::lock_guard<std::mutex> lock(mu_);
  CKPTSPEC_RETURN_IF_ERROR(BeginOp("GetChildren", dir));
  return base()->GetChildren(dir, names);
}

Status FaultInjectionEnv::CreateDir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  CKPTSPEC_RETURN_IF_ERROR(BeginOp("CreateDir", dir));
  return base()->CreateDir(dir);
}

Status FaultInjectionEnv::RemoveFile(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  CKPTSPEC_RETURN_IF_ERROR(BeginOp("RemoveFile", path));
  return base()->RemoveFile(path);
}

Status FaultInjectionEnv::RemoveDir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  CKPTSPEC_RETURN_IF_ERROR(BeginOp("RemoveDir", dir));
  return base()->RemoveDir(dir);
}

Status FaultInjectionEnv::RenameFile(const std::string& src, const std::string& dst) {
  std::lock_guard<std::mutex> lock(mu_);
  CKPTSPEC_RETURN_IF_ERROR(BeginOp("RenameFile", src + " -> " + dst));
  return base()->RenameFile(src, dst);
}

Status FaultInjectionEnv::SyncDir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  CKPTSPEC_RETURN_IF_ERROR(BeginOp("SyncDir", dir));
  return base()->SyncDir(dir);
}

Status FaultInjectionEnv::RemoveTree(const std::string& path) {
  bool is_dir = false;
  CKPTSPEC_RETURN_IF_ERROR(IsDirectory(path, &is_dir));
  if (is_dir) {  // IsDirectory follows a link; the base's confined view does not
    const std::string parent = ParentDir(path);
    std::unique_ptr<Env> view;
    is_dir = base()->NewConfinedView(parent, &view).ok() &&
             view->IsDirectory(parent == "." ? "./" + path : path, &is_dir).ok() && is_dir;
  }
  if (!is_dir) return RemoveFile(path);
  return RemoveDirContentsAndDir(this, path);
}

int64_t FaultInjectionEnv::op_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ops_;
}

void FaultInjectionEnv::ResetOpCount() {
  std::lock_guard<std::mutex> lock(mu_);
  ops_ = 0;
  log_.clear();
  log_paths_.clear();
}

std::vector<std::string> FaultInjectionEnv::op_log() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> lines;
  lines.reserve(log_.size());
  for (const OpRecord& op : log_) {
    lines.push_back(std::to_string(op.index) + " " + op.name + " " +
                    log_paths_.substr(op.path_begin, op.path_size));
  }
  return lines;
}

void FaultInjectionEnv::CrashAtOp(int64_t k) {
  std::lock_guard<std::mutex> lock(mu_);
  crash_at_ = k;
}

bool FaultInjectionEnv::crashed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return crashed_;
}

void FaultInjectionEnv::Restart() {
  std::lock_guard<std::mutex> lock(mu_);
  crashed_ = false;
  crash_at_ = -1;
  ++generation_;
}

void FaultInjectionEnv::FailOp(int64_t k) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_ops_.push_back(k);
}

void FaultInjectionEnv::FailWritesTo(const std::string& path_substring) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_writes_.push_back(path_substring);
}

void FaultInjectionEnv::AddReadFault(const ReadFault& fault) {
  std::lock_guard<std::mutex> lock(mu_);
  read_faults_.push_back(fault);
}

void FaultInjectionEnv::ClearFaults() {
  std::lock_guard<std::mutex> lock(mu_);
  crash_at_ = -1;
  crashed_ = false;
  fail_ops_.clear();
  fail_writes_.clear();
  read_faults_.clear();
}

}  // namespace ckptspec
