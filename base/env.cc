#include "base/env.h"

namespace ckptspec {

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

std::string ParentDir(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return p.substr(0, slash);
}

Status WriteFileSynced(Env* env, const std::string& path, const std::string& data) {
  std::unique_ptr<WritableFile> file;
  CKPTSPEC_RETURN_IF_ERROR(env->NewWritableFile(path, &file));
  Status s = file->Append(data.data(), data.size());
  if (s.ok()) s = file->Sync();
  const Status c = file->Close();
  return s.ok() ? c : s;
}

Status ReplaceFileAtomically(Env* env, const std::string& path, const std::string& data) {
  const std::string tmp = path + ".tmp";
  CKPTSPEC_RETURN_IF_ERROR(WriteFileSynced(env, tmp, data));
  CKPTSPEC_RETURN_IF_ERROR(env->RenameFile(tmp, path));
  return env->SyncDir(ParentDir(path));
}

Status ReadFileToString(Env* env, const std::string& path, uint64_t max_size, std::string* out) {
  uint64_t size = 0;
  CKPTSPEC_RETURN_IF_ERROR(env->GetFileSize(path, &size));
  if (size > max_size) {
    return Status::Corruption(path + ": size " + std::to_string(size) + " exceeds the limit of " +
                              std::to_string(max_size) + " bytes");
  }
  std::unique_ptr<RandomAccessFile> file;
  CKPTSPEC_RETURN_IF_ERROR(env->NewRandomAccessFile(path, &file));
  out->assign(static_cast<size_t>(size), '\0');
  return ReadExactly(*file, path, 0, static_cast<size_t>(size), out->data());
}

Status ReadExactly(const RandomAccessFile& file, const std::string& path, uint64_t offset,
                   size_t size, void* out) {
  size_t got = 0;
  CKPTSPEC_RETURN_IF_ERROR(file.Read(offset, size, out, &got));
  if (got != size) {
    return Status::Corruption(path + ": short read at offset " + std::to_string(offset) +
                              ": wanted " + std::to_string(size) + " bytes, got " +
                              std::to_string(got));
  }
  return Status::OK();
}

Status Env::RemoveTree(const std::string& path) {
  bool is_dir = false;
  CKPTSPEC_RETURN_IF_ERROR(IsDirectory(path, &is_dir));
  if (!is_dir) return RemoveFile(path);
  return RemoveDirContentsAndDir(this, path);
}

Status RemoveDirContentsAndDir(Env* env, const std::string& dir) {
  std::vector<std::string> children;
  CKPTSPEC_RETURN_IF_ERROR(env->GetChildren(dir, &children));
  for (const std::string& child : children) {
    CKPTSPEC_RETURN_IF_ERROR(env->RemoveTree(JoinPath(dir, child)));
  }
  return env->RemoveDir(dir);
}

Status CreateDirs(Env* env, const std::string& dir) {
  if (env->FileExists(dir).ok()) {
    bool is_dir = false;
    CKPTSPEC_RETURN_IF_ERROR(env->IsDirectory(dir, &is_dir));
    if (!is_dir) return Status::IOError(dir + ": exists and is not a directory");
    return Status::OK();
  }
  const std::string parent = ParentDir(dir);
  if (parent != dir && parent != "." && parent != "/") {
    CKPTSPEC_RETURN_IF_ERROR(CreateDirs(env, parent));
  }
  return env->CreateDir(dir);
}

}  // namespace ckptspec
